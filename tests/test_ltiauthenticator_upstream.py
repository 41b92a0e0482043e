"""The class hub's LTI 1.3 login (autograder/hub/hooks.py: ClassLtiAuthenticator, ClassLtiCallbackHandler) keeps every
behaviour jupyterhub-ltiauthenticator's own tests promise, except the course's rules (issue 47, item 7).

The package's tests/lti13 (1.6.3, kept unchanged in tests/upstream_ltiauthenticator/: they ship in no PyPI
distribution) run in a pytest of their own, with pytest-asyncio as upstream runs them, and a conftest that puts the
course's classes where the tests import the package's. DELIBERATE is the one list of the tests that differ, each
with the rule of the course it meets (ClassLtiAuthenticator's docstring says the rules); every other test passes.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from autograder.paths import ROOT

UPSTREAM = ROOT / "tests" / "upstream_ltiauthenticator"
UPSTREAM_COUNT = 51  # the tests of tests/lti13 at 1.6.3
LAUNCH = ("deployment1", "54536")  # the deployment and course (context id) of the upstream tests' launch

# test -> (what its failure says, the course's rule it meets)
DELIBERATE = {
    "test_lti13_authenticator.py::test_authenticator_returned_username_with_sub": (
        "The hub could not log you in",
        "a username comes from username_key alone; the package falls back to the launch's sub, an LMS id"),
    "test_lti13_authenticator.py::test_authenticator_returned_username_with_sub_and_email": (
        "The hub could not log you in", "a username is an account name, not an email address"),
    "test_lti13_authenticator.py::test_authenticator_returned_username_with_sub_email_name": (
        "The hub could not log you in", "a username is an account name, not an email address"),
    "test_lti13_authenticator.py::test_authenticator_returned_username_from_custom_claim": (
        "The hub could not log you in", 'a username is an account name, not "jovyan.jupyter"'),
    "test_lti13_authenticator.py::test_authenticator_raises_login_error_if_username_key_not_found": (
        "The hub could not log you in", "every refusal is a page in words (an HTTPError), not a LoginError"),
    "test_lti13_handlers.py::test_lti13_callback_handler_decode_and_validate_launch_request_invocation": (
        "string indices must be integers",
        "a launch's nonce is taken once, read from the decoded id_token: the test gives a string for the token"),
}

SWAP = f'''
"""Written by tests/test_ltiauthenticator_upstream.py: the course's classes where the package's tests import its own."""
from traitlets import List

import ltiauthenticator.lti13.auth
import ltiauthenticator.lti13.handlers
from autograder.hub.hooks import ClassLtiAuthenticator, ClassLtiCallbackHandler


class CourseAuthenticator(ClassLtiAuthenticator):
    deployment_ids = List(default_value=[{LAUNCH[0]!r}])  # the tests' launch is this class's
    context_ids = List(default_value=[{LAUNCH[1]!r}])


ltiauthenticator.lti13.auth.LTI13Authenticator = CourseAuthenticator
ltiauthenticator.lti13.handlers.LTI13CallbackHandler = ClassLtiCallbackHandler
'''


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> dict[str, str]:
    """Each upstream test, run against the course's classes: "passed", or its failure's message."""
    work = tmp_path_factory.mktemp("lti-upstream")
    shutil.copytree(UPSTREAM / "tests", work / "tests")
    (work / "conftest.py").write_text(SWAP)
    (work / "pytest.ini").write_text("[pytest]\nasyncio_mode = auto\n")
    hub = work / "hub"
    hub.mkdir()
    (hub / "settings.json").write_text(json.dumps({"root": str(hub), "grader": "lti13-grader", "login": "lti"}))
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    from autograder.hub.settings import SETTINGS_VARIABLE
    env.update(PYTHONPATH=str(ROOT), **{SETTINGS_VARIABLE: str(hub / "settings.json")})
    report = work / "report.xml"
    done = subprocess.run([sys.executable, "-m", "pytest", "tests/lti13", "-p", "asyncio", "-q",
                           f"--junitxml={report}", "-c", str(work / "pytest.ini"), "--rootdir", str(work)],
                          cwd=work, env=env, capture_output=True, text=True, timeout=600)
    assert report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    found = {}
    for case in ElementTree.parse(report).iter("testcase"):
        name = f"{case.get('classname').rsplit('.', 1)[-1]}.py::{case.get('name')}"
        failure = case.find("failure") if case.find("failure") is not None else case.find("error")
        found[name] = "passed" if failure is None else (failure.get("message") or "")
    return found


def test_every_upstream_test_ran(results):
    assert len(results) == UPSTREAM_COUNT, sorted(results)


def test_every_upstream_test_passes_but_the_deliberate_ones(results):
    failed = {name: said for name, said in results.items() if said != "passed"}
    assert set(failed) == set(DELIBERATE), {name: failed.get(name, "passed") for name in set(failed) ^ set(DELIBERATE)}
    for name, (words, _rule) in DELIBERATE.items():
        assert words in failed[name], (name, failed[name])
