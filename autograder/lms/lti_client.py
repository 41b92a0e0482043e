"""The tool's side of LTI 1.3 services, on pylti1p3: an access token by the client-credentials grant with a JWT
signed by the tool's key (IMS Security Framework 1.0, section 4.1), renewed when it has expired; the course's
members (Names and Role Provisioning Services 2.0); line items, scores and results (Assignment and Grade Services
2.0)."""
from __future__ import annotations

import time

import requests
from jwcrypto.jwk import JWK
from pylti1p3.assignments_grades import AssignmentsGradesService
from pylti1p3.exception import LtiServiceException
from pylti1p3.grade import Grade
from pylti1p3.lineitem import LineItem
from pylti1p3.names_roles import NamesRolesProvisioningService
from pylti1p3.registration import Registration
from pylti1p3.service_connector import ServiceConnector

from autograder.lms.keys import SCOPES
from autograder.lms.lti_config import LtiConfig

TOKEN_LIFETIME = 3000  # seconds a token is used before a new one is asked for (the spec's tokens last 3600)
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"


class Refused(Exception):
    """The platform said no: its status and what it said, with what to do."""


class RenewingConnector(ServiceConnector):
    """pylti1p3's connector keeps a token for ever; this one asks again after TOKEN_LIFETIME, and once more when
    the platform answers 401 (a token it holds expired or revoked)."""

    def __init__(self, registration: Registration, session: requests.Session):
        super().__init__(registration, session)
        self._fetched = 0.0
        self.tokens_fetched = 0

    def get_access_token(self, scopes):
        if time.monotonic() - self._fetched > TOKEN_LIFETIME:
            self._access_tokens.clear()
        before = len(self._access_tokens)
        token = super().get_access_token(scopes)
        if len(self._access_tokens) > before:
            self._fetched, self.tokens_fetched = time.monotonic(), self.tokens_fetched + 1
        return token

    def make_service_request(self, scopes, url, *args, **kwargs):
        try:
            response = super().make_service_request(scopes, url, *args, **kwargs)
        except LtiServiceException as error:
            if error.response.status_code != 401:
                raise
            self._access_tokens.clear()
            response = super().make_service_request(scopes, url, *args, **kwargs)
        return dict(response, next_page_url=next_page(response["headers"]))


def next_page(headers) -> str | None:
    """The next page's URL from a response's `Link` header, exactly as the platform wrote it (pylti1p3 lower-cases
    it, and a platform whose paths have capitals, as Moodle's `CourseSection` and `lineItems`, then answers 404)."""
    link = next((value for name, value in headers.items() if name.lower() == "link"), "")
    pages = [found["url"] for found in requests.utils.parse_header_links(link.replace("\n", " "))
             if "next" in found.get("rel", "").split()]
    return pages[0] if pages else None


class Platform:
    """The LMS as the tool sees it, from the config."""

    def __init__(self, config: LtiConfig):
        try:
            private_pem = config.key_file.read_bytes()
        except FileNotFoundError:
            raise SystemExit(f"There is no private key at {config.key_file}: run `python -m autograder lms keys "
                             f"--config {config.path}` and have the LMS administrator register the key set it "
                             "prints.") from None
        public_pem = JWK.from_pem(private_pem).export_to_pem().decode()
        registration = (Registration().set_client_id(config.client_id).set_auth_token_url(config.token_url)
                        .set_tool_private_key(private_pem.decode()).set_tool_public_key(public_pem))
        if config.audience:
            registration.set_auth_audience(config.audience)
        self.config = config
        session = requests.Session()
        session.headers["User-Agent"] = "transformers-from-scratch-autograder (pylti1p3)"
        self.connector = RenewingConnector(registration, session)
        self.ags = AssignmentsGradesService(self.connector, {"scope": list(SCOPES[:3]),
                                                             "lineitems": config.lineitems_url})
        self.nrps = NamesRolesProvisioningService(self.connector,
                                                  {"context_memberships_url": config.memberships_url})

    def _call(self, what: str, call, *args):
        try:
            return call(*args)
        except LtiServiceException as error:
            status, body = error.response.status_code, error.response.text[:300]
            if "token" in str(error.response.url) or error.response.url == self.config.token_url:
                raise Refused(f"The LMS refused the tool's token request (HTTP {status}: {body}). It does not hold "
                              f"the tool's public key for client id {self.config.client_id!r}, or the client id or "
                              f"token URL in {self.config.path} is not the one it registered. Have the LMS "
                              "administrator register the key set that `python -m autograder lms keys` prints (the "
                              f"key in {self.config.key_file}), and check client_id and token_url.") from None
            raise Refused(f"The LMS refused to {what} (HTTP {status}: {body}).") from None
        except requests.RequestException as error:
            raise Refused(f"Could not reach the LMS to {what}: {error}. Check the addresses in {self.config.path} "
                          "and your connection; running again resumes where this stopped.") from None

    def members(self) -> list[dict]:
        return self._call("list the course's members", self.nrps.get_members)

    def line_item(self, tag: str, label: str, maximum: float, create: bool) -> LineItem | None:
        """The course's line item tagged `tag`; created (with `label` and `maximum`) when there is none and
        `create`."""
        found = self._call("list the course's line items", self.ags.find_lineitem_by_tag, tag)
        if found or not create:
            return found
        wanted = LineItem().set_tag(tag).set_label(label).set_score_maximum(maximum).set_resource_id(tag)
        return self._call("create the line item", self.ags.find_or_create_lineitem, wanted)

    def post_score(self, line_item: LineItem, score: dict) -> None:
        grade = (Grade().set_user_id(score["userId"]).set_score_given(score["scoreGiven"])
                 .set_score_maximum(score["scoreMaximum"]).set_activity_progress(score["activityProgress"])
                 .set_grading_progress(score["gradingProgress"]).set_timestamp(score["timestamp"]))
        if score.get("comment"):
            grade.set_comment(score["comment"])
        self._call(f"take the score of user {score['userId']}", self.ags.put_grade, grade, line_item)

    def results(self, line_item: LineItem) -> list[dict]:
        """Every result of the line item, page after page (pylti1p3's get_grades reads the first page only)."""
        return self._call("read the scores back", self._all_results, line_item)

    def _all_results(self, line_item: LineItem) -> list[dict]:
        found = []
        url = self.ags._add_url_path_ending(line_item.get_id(), "results")
        while url:
            page = self.connector.make_service_request(list(SCOPES[:3]), url,
                                                       accept="application/vnd.ims.lis.v2.resultcontainer+json")
            found += page["body"] or []
            url = page["next_page_url"]
        return found
