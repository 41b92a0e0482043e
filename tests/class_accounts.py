"""Unix accounts in the hub tests: those a test's hub made (autograder.hub.accounts' record) removed once the hub has
stopped, so that the test's next run, with a new hub folder and so a new record, finds their names free; and accounts
a test makes itself, to stand for those a machine had before its class."""
from __future__ import annotations

import contextlib
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

from autograder.hub.accounts import ClassAccounts
from autograder.hub.settings import HubSettings


def made_by(hub: HubSettings) -> dict[str, int]:
    """The accounts `hub` made, name -> user id (read them before its folder is removed): only those of the class's
    range, so that no code under test that wrongly recorded root or daemon gets them removed."""
    return {name: entry["uid"] for name, entry in ClassAccounts(hub).names().items()
            if hub.first_uid <= entry["uid"] <= hub.last_uid}


def remove_accounts(made: dict[str, int]) -> None:
    """`userdel` each account (and its group) that still has the user id it was made with, once nothing runs as it;
    its files stay."""
    for name, uid in made.items():
        try:
            if pwd.getpwnam(name).pw_uid != uid:
                continue
        except KeyError:
            continue
        subprocess.run(["userdel", name], capture_output=True, text=True)


@contextlib.contextmanager
def machine_account(name: str, secret: str = "my own notes"):
    """A person's account on the machine, made by `useradd` as a system administrator would, before any class: its
    home (a temporary folder) holds a private file `notes.txt` with `secret`. Yields its passwd entry; removed after."""
    if name in {entry.pw_name for entry in pwd.getpwall()}:
        subprocess.run(["userdel", name], check=True, capture_output=True)
    home = Path(tempfile.mkdtemp(prefix=f"{name}-home-", dir="/tmp"))
    try:
        subprocess.run(["useradd", "--home-dir", str(home), "--user-group", "--shell", "/bin/bash", name], check=True,
                       capture_output=True)
        account = pwd.getpwnam(name)
        notes = home / "notes.txt"
        notes.write_text(secret)
        for path in (home, notes):
            shutil.chown(path, account.pw_uid, account.pw_gid)
        home.chmod(0o700)
        notes.chmod(0o600)
        yield account
    finally:
        subprocess.run(["userdel", name], capture_output=True)
        shutil.rmtree(home, ignore_errors=True)
