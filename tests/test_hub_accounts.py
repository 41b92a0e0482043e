"""The class's accounts (issue 47, item 1): the hub makes every account its class uses, in its own range of user
ids, records them in its folder (autograder/hub/accounts.py), and lets nobody use any other: not root, not a system
account, not the grader, not an account the machine had before the class, not a name another LMS person has. Real
Unix accounts, made and removed by useradd and userdel (root only, as a hub); tests/test_hub_lti.py tries the same
names through real LTI launches."""
from __future__ import annotations

import grp
import pwd
import subprocess
from pathlib import Path

import pytest

from autograder.hub.accounts import GRADER, AccountRefused, ClassAccounts, first_person_uid, prepare_class_accounts
from autograder.hub.settings import HubSettings
from tests.class_accounts import machine_account, made_by, remove_accounts
from tests.hub import running_hub, why_no_hub

ISSUER = "https://lms.uni.example"


@pytest.fixture
def hub(tmp_path):
    """A hub's settings and folder (no hub running): the grader acct-grader; every account it made removed after."""
    why = why_no_hub()
    if why:
        pytest.skip(why)
    settings = HubSettings(root=str(tmp_path / "hub"), grader="acct-grader")
    yield settings
    remove_accounts(made_by(settings))


def lms(sub: str) -> dict:
    return {"issuer": ISSUER, "sub": sub}


def test_a_person_gets_an_account_in_the_class_range_which_the_record_keeps_across_restarts(hub):
    accounts = ClassAccounts(hub)
    ada = accounts.account("acct-ada", hub.homes / "acct-ada", lms=lms("lms-ada"))
    assert hub.first_uid <= ada.pw_uid <= hub.last_uid and ada.pw_gid == ada.pw_uid
    assert grp.getgrgid(ada.pw_gid).gr_name == "acct-ada"
    home = hub.homes / "acct-ada"
    assert (home.stat().st_uid, home.stat().st_mode & 0o777) == (ada.pw_uid, 0o700)
    assert accounts.names() == {"acct-ada": {"uid": ada.pw_uid, "role": "person", "lms": lms("lms-ada")}}
    assert (accounts.path.stat().st_uid, accounts.path.stat().st_mode & 0o777) == (0, 0o600)
    # A hub started again reads the record from its folder and takes the same account: nothing new is made.
    again = ClassAccounts(HubSettings.load(hub.save())).account("acct-ada", home, lms=lms("lms-ada"))
    assert again == ada
    brian = ClassAccounts(hub).account("acct-brian", hub.homes / "acct-brian")
    assert brian.pw_uid != ada.pw_uid and hub.first_uid <= brian.pw_uid <= hub.last_uid


def refused(accounts: ClassAccounts, name: str, says: str, **how) -> None:
    """`name` is refused, saying `says`, and neither its account, nor the record, nor its home there changed."""
    home = accounts.settings.homes / name
    before = _passwd(name), accounts.names(), _owner(home)
    with pytest.raises(AccountRefused) as refusal:
        accounts.account(name, home, **how)
    assert says in str(refusal.value), str(refusal.value)
    assert (_passwd(name), accounts.names(), _owner(home)) == before, "something was changed"


def _passwd(name: str):
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _owner(path: Path) -> tuple | None:
    return (path.stat().st_uid, path.stat().st_mode) if path.exists() else None


@pytest.mark.parametrize("name", ["root", "daemon", "nobody"])
def test_the_machines_own_accounts_are_refused(hub, name):
    says = "one of this machine's own accounts" if pwd.getpwnam(name).pw_uid < first_person_uid() else \
        "an account this machine had before the class"
    refused(ClassAccounts(hub), name, says)


def test_a_persons_account_from_before_the_class_is_refused_and_left_as_it_was(hub):
    with machine_account("acct-prior") as prior:
        refused(ClassAccounts(hub), "acct-prior", "is an account this machine had before the class")
        assert pwd.getpwnam("acct-prior") == prior
        assert (Path(prior.pw_dir) / "notes.txt").read_text() == "my own notes"


def test_a_group_from_before_the_class_is_not_given_to_a_person(hub):
    subprocess.run(["groupadd", "acct-staff"], check=True, capture_output=True)
    try:
        refused(ClassAccounts(hub), "acct-staff", "the name of a group this machine had before the class")
    finally:
        subprocess.run(["groupdel", "acct-staff"], capture_output=True)


def test_the_grader_is_nobodys_login(hub):
    accounts = ClassAccounts(hub)
    refused(accounts, hub.grader, "the account that grades the class")  # before it is made, too
    grader = accounts.account(hub.grader, hub.course_dir.parent, role=GRADER)
    assert hub.first_uid <= grader.pw_uid <= hub.last_uid
    refused(accounts, hub.grader, "the account that grades the class", lms=lms("lms-1"))


def test_an_account_is_the_lms_person_who_first_used_it(hub):
    accounts = ClassAccounts(hub)
    jane = accounts.account("acct-jane", hub.homes / "acct-jane", lms=lms("lms-jane"))
    assert accounts.account("acct-jane", hub.homes / "acct-jane", lms=lms("lms-jane")) == jane
    before = accounts.names()
    with pytest.raises(AccountRefused, match="already the account of another person in the LMS"):
        accounts.account("acct-jane", hub.homes / "acct-jane", lms=lms("lms-someone-else"))
    with pytest.raises(AccountRefused, match="already the account of another person in the LMS"):
        accounts.account("acct-jane", hub.homes / "acct-jane", lms={"issuer": "https://other.example",
                                                                    "sub": "lms-jane"})
    assert accounts.names() == before


def test_an_account_of_the_class_remade_by_someone_else_is_refused(hub):
    accounts = ClassAccounts(hub)
    made = accounts.account("acct-carol", hub.homes / "acct-carol")
    subprocess.run(["userdel", "acct-carol"], check=True, capture_output=True)
    subprocess.run(["useradd", "--uid", str(made.pw_uid + 500), "--user-group", "acct-carol"], check=True,
                   capture_output=True)
    try:
        refused(accounts, "acct-carol", f"was made by the hub with user id {made.pw_uid}, but an account of that "
                                        f"name with user id {made.pw_uid + 500} has since taken its place")
    finally:
        subprocess.run(["userdel", "acct-carol"], capture_output=True)


def test_an_account_of_the_class_removed_by_mistake_is_made_again_with_its_number(hub):
    accounts = ClassAccounts(hub)
    made = accounts.account("acct-dan", hub.homes / "acct-dan")
    (hub.homes / "acct-dan" / "work.ipynb").write_text("{}")
    subprocess.run(["userdel", "acct-dan"], check=True, capture_output=True)
    again = accounts.account("acct-dan", hub.homes / "acct-dan")
    assert again.pw_uid == made.pw_uid == (hub.homes / "acct-dan").stat().st_uid


def test_settings_that_name_an_account_from_before_the_class_stop_the_start(hub):
    with machine_account("acct-prior"):
        hub.login, hub.password, hub.students, hub.instructors = "shared-password", "a-password", ["acct-prior"], []
        with pytest.raises(SystemExit) as stopped:
            prepare_class_accounts(hub)
        said = str(stopped.value)
        assert "'acct-prior' is an account this machine had before the class" in said, said
        assert "settings' students" in said and "sudo userdel acct-prior" in said, said
        assert made_by(hub) == {}, "nothing was made, the grader's account neither"
    hub.students = ["acct-ada"]
    prepare_class_accounts(hub)
    assert ClassAccounts(hub).names()[hub.grader]["role"] == GRADER
    assert pwd.getpwnam(hub.grader).pw_dir == str(hub.course_dir.parent)
    assert "acct-ada" not in made_by(hub), "a person's account is made at their first server start"


def test_a_uid_range_among_the_systems_accounts_stops_the_start(hub):
    hub.first_uid, hub.last_uid = 100, 200
    with pytest.raises(SystemExit, match=f"from {first_person_uid()} up"):
        prepare_class_accounts(hub)


def test_a_hub_whose_demo_student_is_an_account_from_before_the_class_does_not_start():
    """The real start (`python -m autograder hub` and `make hub` start the same way): it stops before the hub runs,
    saying which name and what to do, and the account keeps its home and files."""
    with machine_account("acct-prior") as prior:
        with pytest.raises(SystemExit) as stopped:
            with running_hub("acct", ["acct-prior"], [], []):
                pass
        assert "'acct-prior' is an account this machine had before the class" in str(stopped.value)
        assert pwd.getpwnam("acct-prior") == prior
