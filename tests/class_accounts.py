"""Unix accounts in the hub tests: those a test's hub made (autograder.hub.accounts' record) removed once the hub has
stopped, so that the test's next run, with a new hub folder and so a new record, finds their names free; and accounts
a test makes itself, to stand for those a machine had before its class."""
from __future__ import annotations

import contextlib
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

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


TEST_HUBS = "/tmp/hub-"  # tests/hub.py's and test_hub.py's hub folders: tempfile.mkdtemp(prefix="hub-...", dir="/tmp")
STALE_HOURS = 12  # no test's hub runs this long


def remove_accounts_of_gone_test_hubs() -> list[str]:
    """Remove the accounts a test's hub made and left when its run was killed before it could remove them (their
    names would stop the next run's hub, as accounts the machine had before its class): those whose home is in a
    test hub's folder that is gone, or untouched for STALE_HOURS with nothing running as them. Never a system
    account nor one whose home is elsewhere, but for the demo's own names in the class's default range whose home is
    gone (a demo hub's run under an earlier layout). The names removed."""
    running = {process.info["uids"].real for process in psutil.process_iter(["uids"]) if process.info["uids"]}
    removed = [entry.pw_name for entry in pwd.getpwall() if _left_by_a_test_hub(entry, running)]
    for name in removed:
        subprocess.run(["userdel", name], capture_output=True, text=True)
    return removed


def _left_by_a_test_hub(entry: pwd.struct_passwd, running: set[int]) -> bool:
    from autograder.hub.cli import DEMO_INSTRUCTORS, DEMO_STUDENTS
    defaults = HubSettings(root="/nonexistent")
    if entry.pw_uid < 1000:
        return False
    if not entry.pw_dir.startswith(TEST_HUBS):
        return (entry.pw_name in {defaults.grader, *DEMO_STUDENTS, *DEMO_INSTRUCTORS}
                and defaults.first_uid <= entry.pw_uid <= defaults.last_uid and not Path(entry.pw_dir).exists())
    folder = Path("/tmp") / Path(entry.pw_dir).relative_to("/tmp").parts[0]
    if not folder.exists():
        return True
    return time.time() - folder.stat().st_mtime > STALE_HOURS * 3600 and entry.pw_uid not in running


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
