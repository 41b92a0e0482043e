"""The LTI 1.3 settings of `lms push` and `lms keys`: a TOML file (default lms/lti.toml) holding what the LMS
administrator gives back after registering the tool, and where the tool's private key lives."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

TEMPLATE = '''# LTI 1.3 settings for `python -m autograder lms push` (instructor guide, section 8: LTI 1.3).
# Fill in what the LMS administrator gives you after registering the tool with the key set `lms keys` printed.
client_id = ""          # the tool's client id (Canvas: the developer key's number; Moodle: Client ID)
deployment_id = ""      # the deployment id the LMS shows for the tool in your course
token_url = ""          # Canvas: https://<host>/login/oauth2/token; Moodle: https://<host>/mod/lti/token.php
audience = ""           # only when the LMS wants another token audience (Canvas: https://canvas.instructure.com/login/oauth2/token)
lineitems_url = ""      # the course's line items (Canvas: https://<host>/api/lti/courses/<course id>/line_items)
memberships_url = ""    # the course's members (Canvas: https://<host>/api/lti/courses/<course id>/names_and_roles)
key_file = "lti-private-key.pem"   # the tool's private key, beside this file; never share it
sent_file = "lti-sent.json"        # what was sent: a rerun sends only what changed
match = "email"         # how the LMS's members are nbgrader's students: email, name or id (the member's user id)
'''

REQUIRED = ("client_id", "token_url", "lineitems_url", "memberships_url")


@dataclass(frozen=True)
class LtiConfig:
    path: Path
    client_id: str
    deployment_id: str
    token_url: str
    audience: str
    lineitems_url: str
    memberships_url: str
    key_file: Path
    sent_file: Path
    match: str


def read_config(path: Path, need_platform: bool = True) -> LtiConfig:
    if not path.exists():
        raise SystemExit(f"There is no LTI config at {path}: run `python -m autograder lms keys --config {path}` "
                         "first; it writes the key pair and a config to fill in with what the LMS administrator "
                         "gives you.")
    try:
        values = tomllib.loads(path.read_text())
    except tomllib.TOMLDecodeError as error:
        raise SystemExit(f"{path} is not valid TOML ({error}): each setting is `name = \"value\"`.") from None
    empty = [name for name in REQUIRED if not str(values.get(name, "")).strip()]
    if need_platform and empty:
        raise SystemExit(f"{path} does not say {', '.join(empty)} yet: ask the LMS administrator for them (the "
                         "instructor guide, section 8, lists what to ask for), write them in, and run this again.")
    match = values.get("match", "email")
    if match not in ("email", "name", "id"):
        raise SystemExit(f"{path}: match = {match!r}, but it can be \"email\", \"name\" or \"id\".")
    here = path.parent
    return LtiConfig(path, str(values.get("client_id", "")), str(values.get("deployment_id", "")),
                     values.get("token_url", ""), values.get("audience", ""), values.get("lineitems_url", ""),
                     values.get("memberships_url", ""), here / values.get("key_file", "lti-private-key.pem"),
                     here / values.get("sent_file", "lti-sent.json"), match)
