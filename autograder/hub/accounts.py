"""The class's Unix accounts. A student's hub user, Unix account and nbgrader student id are one name; the account
and its home are made the first time the person's server starts (the hub's pre-spawn hook), so a class needs no list
of accounts made in advance."""
from __future__ import annotations

import pwd
import re
import shutil
import subprocess
from pathlib import Path

# What `useradd` takes on every Linux: a lower-case letter or underscore, then up to 31 more of [a-z0-9_-].
ACCOUNT_NAME = r"[a-z_][a-z0-9_-]{0,31}"


def check_name(name: str) -> str:
    """`name` when it can be a Unix account, else a ValueError that says what a name may be."""
    if not re.fullmatch(ACCOUNT_NAME, name):
        raise ValueError(f"{name!r} cannot be an account on this machine: a name is a lower-case letter or _, then "
                         "up to 31 lower-case letters, digits, _ or -. Check the LMS's username field (lti.username_key).")
    return name


def ensure_account(name: str, home: Path, mode: int = 0o700) -> pwd.struct_passwd:
    """The Unix account `name` with its home `home` (made, owned by it and private, when missing). An account that
    exists already is moved to `home` (its old home's files stay where they are): its server's HOME is this one."""
    check_name(name)
    try:
        account = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--no-create-home", "--home-dir", str(home), "--shell", "/bin/bash", "--user-group",
                        name], check=True, capture_output=True, text=True)
        account = pwd.getpwnam(name)
    if account.pw_dir != str(home):
        subprocess.run(["usermod", "--home", str(home), name], check=True, capture_output=True, text=True)
        account = pwd.getpwnam(name)
    home.mkdir(parents=True, exist_ok=True)
    shutil.chown(home, account.pw_uid, account.pw_gid)
    home.chmod(mode)
    return account


def as_account(name: str, argv: list[str]) -> list[str]:
    """`argv` run as the account `name`, with its own group and no other (run as root)."""
    return ["setpriv", f"--reuid={name}", f"--regid={name}", "--clear-groups", "--", *argv]


def own_tree(folder: Path, name: str) -> None:
    """Every file under `folder` owned by the account `name`."""
    account = pwd.getpwnam(name)
    for path in [folder, *folder.rglob("*")]:
        if not path.is_symlink():
            shutil.chown(path, account.pw_uid, account.pw_gid)
