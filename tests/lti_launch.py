"""The launch side of the test LMS: tests/lti_platform.py's platform (grade services, roster, token endpoint, from the
lti1p3platform package) plus what a student meets before the hub. The package builds and signs the launch (its
OIDCLoginAbstract and LTIAdvantageMessageLaunchAbstract); this file adds what it leaves to the LMS around it:

- a course page (`/course?user=<login>`), the LMS as that person sees it, with the hub's link;
- the link (`/launch?user=<login>`): a third-party-initiated login, a redirect to the tool's login URL with iss,
  login_hint, target_link_uri, lti_message_hint, client_id and lti_deployment_id;
- the OIDC authorisation endpoint (`/authorize`): checks the tool's authentication request (IMS Security Framework
  1.0, 5.1.1.2: response_type, scope, response_mode, prompt, the registered client id and redirect URI, a known
  login_hint, a nonce) and answers with a form that posts the signed id_token and the state to the redirect URI
  and submits itself, as an LMS does;
- the platform's public keys (`/jwks`).

Tests can change the next launch before it is signed (`platform.tamper`) or sign it with another key (`forge`)."""
from __future__ import annotations

import html
import json
import re
import time
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urlsplit

import jwt
from jwcrypto.jwk import JWK
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract

from tests.lti_platform import CLIENT_ID, CONTEXT_ID, DEPLOYMENT_ID, INSTRUCTOR, ISSUER, LEARNER, HttpRequest, \
    LtiPlatform

__all__ = ["CLIENT_ID", "CONTEXT_ID", "DEPLOYMENT_ID", "INSTRUCTOR", "ISSUER", "LEARNER", "LaunchPlatform", "Person",
           "form_of", "new_key"]
RESOURCE_LINK = "hub-link-1"  # the course's link to the hub in the LMS


@dataclass
class Person:
    """Someone in the LMS's course: `sub` is the LMS's user id, `username` their login (the custom field)."""
    sub: str
    username: str | None
    roles: list[str] = field(default_factory=lambda: [LEARNER])
    given_name: str = ""
    family_name: str = ""
    email: str = ""

    def member(self) -> dict:
        """How the roster (Names and Role Provisioning) shows them: no email, as with an LMS's privacy setting, so
        only the launch's `sub` can tie them to a gradebook student."""
        return {"user_id": self.sub, "roles": self.roles, "status": "Active",
                "name": f"{self.given_name} {self.family_name}".strip(), "given_name": self.given_name,
                "family_name": self.family_name}


def new_key() -> JWK:
    return JWK.generate(kty="RSA", size=2048)


class Login(OIDCLoginAbstract):
    """The hub's link: a third-party-initiated login (the package's), answered as a redirect."""

    def set_lti_message_hint(self, **kwargs) -> None:
        self._lti_message_hint = kwargs["hint"]

    def get_redirect(self, url: str):
        return 302, b"", {"Location": url}


class Launch(LTIAdvantageMessageLaunchAbstract):
    """The launch message (the package's), signed by the platform and posted by a self-submitting form."""

    def __init__(self, request, platform_config, launching: "LaunchPlatform"):
        super().__init__(request, platform_config)
        self.launching = launching

    def generate_launch_request(self):
        message, state = self.get_launch_data()
        return {"state": state, "id_token": self.launching.sign(message)}

    def render_launch_form(self, launch_data, **kwargs):
        fields = "".join(f'<input type="hidden" name="{name}" value="{html.escape(launch_data[name])}">'
                         for name in ("id_token", "state"))
        page = (f'<!doctype html><html><head><title>Opening the class hub</title></head><body>'
                f'<form id="launch" method="post" action="{html.escape(launch_data["launch_url"])}">{fields}'
                f'<noscript><button type="submit">Continue to the class hub</button></noscript></form>'
                f'<script>document.getElementById("launch").submit()</script></body></html>')
        return 200, page.encode(), {"Content-Type": "text/html; charset=utf-8"}


class LaunchPlatform(LtiPlatform):
    """The platform of tests/lti_platform.py, also launching the hub for `people` (login name -> Person). Call
    `register_tool(hub_url)` once the hub's address is known (its login URL, redirect URI and link)."""

    def __init__(self, tool_key_set: dict, people: dict[str, Person]):
        super().__init__(tool_key_set, [p.member() for p in people.values()])
        self.people = people
        registration = self.platform.registration
        self.key = JWK.from_pem(registration.get_platform_private_key().encode())
        self.kid = registration.get_kid()
        self.tamper = None  # claims -> claims, applied to the next launch before signing, then forgotten
        self.forge: JWK | None = None  # sign the next launch with this key instead (under the platform's kid)
        self.launched: list[dict] = []  # every id_token's claims, as signed
        self.refused: list[str] = []  # why each authentication request was refused
        self.hub_url = ""

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks"

    @property
    def authorize_url(self) -> str:
        return f"{self.url}/authorize"

    def register_tool(self, hub_url: str) -> None:
        self.hub_url = hub_url
        (self.platform.registration.set_oidc_login_url(f"{hub_url}/hub/lti13/oauth_login")
         .set_launch_url(f"{hub_url}/"))

    @property
    def redirect_uri(self) -> str:
        return f"{self.hub_url}/hub/lti13/oauth_callback"

    def sign(self, claims: dict, lifetime: int = 300) -> str:
        """An id_token: `claims` with iat and exp, after `tamper`, signed with the platform's key (or `forge`)."""
        now = int(time.time())
        claims = {**claims, "iat": now, "exp": now + lifetime}
        if self.tamper:
            claims, self.tamper = self.tamper(claims), None
        key, self.forge = self.forge or self.key, None
        self.launched.append(claims)
        return jwt.encode(claims, key.export_to_pem(private_key=True, password=None), algorithm="RS256",
                          headers={"kid": self.kid})

    def answer(self, method, path, headers, body):
        url = urlsplit(path)
        if url.path in ("/course", "/launch", "/authorize", "/jwks"):
            query = dict(parse_qsl(url.query))
            if method == "POST" and headers.get("Content-Type", "").startswith("application/x-www-form-urlencoded"):
                query |= dict(parse_qsl(body.decode()))
            with self.lock:
                self.requests.append({"method": method, "path": url.path, "headers": headers, "form": query})
                return getattr(self, url.path[1:])(query)
        return super().answer(method, path, headers, body)

    def jwks(self, query: dict):
        return 200, json.dumps(self.platform.get_jwks()).encode(), {"Content-Type": "application/json"}

    def course(self, query: dict):
        person = self.people.get(query.get("user", ""))
        if person is None:
            return 404, b"<p>No such person in this course.</p>", {"Content-Type": "text/html"}
        page = (f"<!doctype html><html><head><title>Transformers from Scratch - Uni LMS</title></head><body>"
                f"<h1>Transformers from Scratch</h1><p>Logged in to the LMS as {html.escape(person.given_name)} "
                f"{html.escape(person.family_name)}.</p><ul><li><a id=\"hub-link\" href=\"/launch?"
                f"{urlencode({'user': query['user']})}\">Class hub: your notebooks and assignments</a></li></ul>"
                f"</body></html>")
        return 200, page.encode(), {"Content-Type": "text/html; charset=utf-8"}

    def launch(self, query: dict):
        login = Login(HttpRequest({}), self.platform)
        login.set_lti_message_hint(hint=RESOURCE_LINK)
        return login.initiate_login(query["user"])

    def authorize(self, query: dict):
        """The tool's authentication request; the launch form, or 400 with what was wrong."""
        expected = {"response_type": "id_token", "scope": "openid", "response_mode": "form_post", "prompt": "none",
                    "client_id": CLIENT_ID, "redirect_uri": self.redirect_uri, "lti_message_hint": RESOURCE_LINK}
        wrong = [f"{name}={query.get(name)!r}" for name, value in expected.items() if query.get(name) != value]
        person = self.people.get(query.get("login_hint", ""))
        if person is None:
            wrong.append(f"login_hint={query.get('login_hint')!r}")
        if not query.get("nonce") or not query.get("state"):
            wrong.append("no nonce or state")
        if wrong:
            self.refused.append(", ".join(wrong))
            return 400, f"<p>invalid_request: {html.escape(', '.join(wrong))}</p>".encode(), {
                "Content-Type": "text/html"}
        launch = Launch(HttpRequest({"method": "GET", "get_data": query, "form_data": {}, "headers": {},
                                     "content_type": None, "path": "/authorize", "json": None}), self.platform, self)
        launch.set_launch_url(f"{self.hub_url}/")
        launch.set_user_data(person.sub, person.roles, f"{person.given_name} {person.family_name}".strip(),
                             person.email or None)
        launch.set_extra_claims({"given_name": person.given_name, "family_name": person.family_name})
        launch.set_resource_link_claim(RESOURCE_LINK, title="Class hub")
        launch.set_launch_context_claim(CONTEXT_ID, context_title="Transformers from Scratch",
                                        context_label="TFS")
        launch.set_custom_parameters_claim({"username": person.username} if person.username else {})
        launch.set_ags(f"{self.url}/lineitems").set_nrps(f"{self.url}/memberships")
        return launch.lti_launch()


def form_of(page: str) -> tuple[str, dict[str, str]]:
    """The action and hidden fields of the launch form in `page` (what a browser would post)."""
    action = re.search(r'<form[^>]*action="([^"]*)"', page)
    assert action, f"no launch form in the page:\n{page[:1000]}"
    fields = {html.unescape(n): html.unescape(v)
              for n, v in re.findall(r'<input type="hidden" name="([^"]*)" value="([^"]*)"', page)}
    return html.unescape(action[1]), fields
