"""A real LTI 1.3 platform on 127.0.0.1 for `lms push` to talk to: the platform package lti1p3platform (its token
endpoint, its access-token checks, its Assignment and Grade Services and Names and Role Provisioning handlers) behind
Python's own HTTP server. The package leaves storage and the web framework to whoever runs it; that is all this
file adds: line items, scores and members in dicts, routes, and a record of every request for the tests to check
against the specs where the package is lax (it validates no Score, and checks neither the client assertion's issuer
nor its audience)."""
from __future__ import annotations

import json
import re
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from jwcrypto.jwk import JWK
from lti1p3platform.exceptions import LineItemNotFoundException
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.membership import Context
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, NamesRoleProvisioningService

LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
ISSUER = "https://lms.uni.example"
CLIENT_ID = "10000000000042"
CONTEXT_ID = "course-tfs-2026"  # the course (LTI context) the tool is installed in
DEPLOYMENT_ID = f"1:{CONTEXT_ID}"  # the tool's deployment there
MIXED_CASE = "/CourseSection/7"  # next pages are served under a path with capitals, as Moodle's services are


class ShortLivedRegistration(Registration):
    """The package's registration, its access tokens living `token_lifetime` seconds (the package's 3600 by
    default), so that a test can let one expire."""
    token_lifetime = 3600

    def encode_and_sign(self, payload, private_key, headers=None, expiration=None):
        return Registration.encode_and_sign(payload, private_key, headers,
                                            self.token_lifetime if expiration == 3600 else expiration)


class Platform(LTI1P3PlatformConfAbstract):
    def init_platform_config(self, **kwargs):
        key = JWK.generate(kty="RSA", size=2048)
        self.registration = (ShortLivedRegistration().set_iss(ISSUER).set_client_id(CLIENT_ID)
                             .set_deployment_id(DEPLOYMENT_ID)
                             .set_platform_private_key(key.export_to_pem(private_key=True, password=None).decode())
                             .set_platform_public_key(key.export_to_pem().decode())
                             .set_tool_key_set(kwargs["tool_key_set"]))
        self.get_registration()

    def get_registration_by_params(self, **kwargs):
        return self.registration


class HttpRequest(Request):
    def build_metadata(self, request):
        return request


class Store:
    """The course as the platform keeps it."""

    def __init__(self, base: str, members: list[dict]):
        self.base, self.members = base, members
        self.line_items: dict[str, dict] = {}
        self.scores: dict[str, dict[str, dict]] = {}  # line item id -> user id -> last score taken
        self.altered: dict[str, float] = {}  # user id -> the resultScore reported whatever was taken (an LMS's rule)


class Grades(AssignmentsGradesService):
    def __init__(self, request, platform, store: Store):
        super().__init__(request, platform, f"{store.base}/lineitems")
        self.store = store

    def find_lineitems(self, page=1, limit=None, line_item_id=None, resource_link_id=None, resource_id=None,
                       tag=None):
        items = [i for i in self.store.line_items.values() if tag is None or i.get("tag") == tag]
        return {"content": items, "has_next": False, "next": None}

    def find_lineitem(self, line_item_id):
        if line_item_id not in self.store.line_items:
            raise LineItemNotFoundException()
        return self.store.line_items[line_item_id]

    def create_lineitem(self, creation_data):
        item = dict(creation_data, id=f"{self.store.base}/lineitems/{len(self.store.line_items) + 1}")
        self.store.line_items[item["id"].rsplit("/", 1)[1]] = item
        return item

    def update_lineitem(self, update_data):
        self.store.line_items[update_data["id"]].update(update_data)
        return self.store.line_items[update_data["id"]]

    def delete_lineitem(self, line_item_id):
        self.store.line_items.pop(line_item_id)

    def update_score(self, line_item_id, score):
        self.find_lineitem(line_item_id)
        kept = self.store.scores.setdefault(line_item_id, {})
        status = UpdateScoreStatus.SUCCESS if score["userId"] in kept else UpdateScoreStatus.CREATED
        kept[score["userId"]] = score
        return status

    def get_results(self, line_item_id, page=1, limit=None, user_id=None):
        item = self.find_lineitem(line_item_id)
        results = [{"id": f"{item['id']}/results/{user}", "scoreOf": item["id"], "userId": user,
                    "resultScore": self.store.altered.get(user, score["scoreGiven"]),
                    "resultMaximum": score["scoreMaximum"],
                    "comment": score.get("comment")}
                   for user, score in self.store.scores.get(line_item_id, {}).items()]
        return {"content": results, "has_next": False, "next": None}


class Roster(NamesRoleProvisioningService):
    def __init__(self, request, platform, store: Store):
        super().__init__(request, platform, f"{store.base}/memberships")
        self.store = store

    def get_member_data_page(self, page=1, limit=None, role=None, since=None):
        return {"content": [dict(m) for m in self.store.members], "has_next": False, "next": None}

    def get_context_by_id(self):
        return Context(id=CONTEXT_ID, label="TFS", title="Transformers from Scratch")


class LtiPlatform:
    """The platform, serving on 127.0.0.1 from a thread: `url`, `token_url`, and what it received."""

    def __init__(self, tool_key_set: dict, members: list[dict]):
        self.platform = Platform(tool_key_set=tool_key_set)
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.token_url = f"{self.url}/token"
        self.store = Store(self.url, members)
        self.requests: list[dict] = []  # every request: method, path, headers, form or json, the status answered
        self.fail_scores_after: int | None = None  # answer 503 to score posts after this many were taken
        self.pause_before_scores = 0.0  # seconds to wait before the first score post (an access token may expire)
        self.page_size: int | None = None  # answer lists in pages this long, the next one named by a Link header
        self.lock = threading.Lock()
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.server.shutdown()
        self.server.server_close()

    def scores_posted(self, status: int | None = None) -> list[dict]:
        return [r for r in self.requests if r["path"].endswith("/scores") and (status is None or r.get("status") == status)]

    def answer(self, method: str, path: str, headers: dict, body: bytes) -> tuple[int, object, dict]:
        url = urlsplit(path)
        form = dict(parse_qsl(body.decode())) if headers.get("Content-Type", "").startswith(
            "application/x-www-form-urlencoded") else {}
        payload = json.loads(body) if body and not form else None
        request = HttpRequest({"method": method, "form_data": form, "get_data": dict(parse_qsl(url.query)),
                               "headers": headers, "content_type": headers.get("Content-Type"), "path": url.path,
                               "json": payload})
        record = {"method": method, "path": url.path, "headers": headers, "form": form, "json": payload}
        with self.lock:
            self.requests.append(record)
            path = url.path
            if path.startswith(f"{MIXED_CASE}/"):  # case-sensitive, as a web server's paths are
                path = path.removeprefix(MIXED_CASE).replace("/lineItems", "/lineitems")
            status, result, extra = self._route(method, path, request)
            if self.page_size and status == 200 and (isinstance(result, list) or "members" in result):
                result, extra = self._page(path, int(request.get_data.get("page") or 1), result, extra)
            record["status"] = status
        return status, result, extra

    def _page(self, path: str, page: int, result, extra: dict) -> tuple[object, dict]:
        """One page of a list (or of a membership container's `members`); a `Link` header names the next page under
        MIXED_CASE, with `lineItems` in camel case."""
        items = result["members"] if isinstance(result, dict) else result
        start = (page - 1) * self.page_size
        if start + self.page_size < len(items):
            mixed = MIXED_CASE + path.replace("/lineitems", "/lineItems")
            extra = dict(extra, Link=f'<{self.url}{mixed}?page={page + 1}>; rel="next"')
        shown = items[start:start + self.page_size]
        return (dict(result, members=shown) if isinstance(result, dict) else shown), extra

    def _route(self, method, path, request):
        if path == "/token" and method == "POST":
            try:
                return 200, self.platform.get_access_token(request.form_data), {}
            except Exception as error:  # the package raises what it finds wrong; OAuth 2 answers invalid_client
                return 401, {"error": "invalid_client", "error_description": f"{type(error).__name__}: {error}"}, {}
        grades = Grades(request, self.platform, self.store)
        found = re.fullmatch(r"/lineitems(?:/(\w+))?(?:/(scores|results))?", path)
        try:
            if path == "/memberships":
                response = Roster(request, self.platform, self.store).handle_get_members()
            elif found and not found[1]:
                response = grades.handle_get_lineitems() if method == "GET" else grades.handle_create_lineitem()
            elif found and found[2] == "scores":
                if self.pause_before_scores:
                    time.sleep(self.pause_before_scores)
                    self.pause_before_scores = 0.0
                taken = len(self.scores_posted(200) + self.scores_posted(201))
                if self.fail_scores_after is not None and taken >= self.fail_scores_after:
                    return 503, {"error": "the platform went down"}, {}
                response = grades.handle_update_score(found[1])
            elif found and found[2] == "results":
                response = grades.handle_get_results(found[1])
            elif found:
                response = grades.handle_get_lineitem(found[1])
            else:
                return 404, {"error": f"no route {method} {path}"}, {}
        except Exception as error:  # an access token the package's checks refuse (expired, forged): not authorised
            return 401, {"error": f"{type(error).__name__}: {error}"}, {}
        result = response.result
        if isinstance(result, dict) and "content" in result:  # a page: the spec's body is the array itself
            result = result["content"]
        return response.code, result, {"Content-Type": response.media_type}

    def _handler(self):
        platform = self

        class Handler(BaseHTTPRequestHandler):
            def _serve(self):
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                status, result, extra = platform.answer(self.command, self.path, dict(self.headers), body)
                data = result if isinstance(result, bytes) else b"" if result is None else json.dumps(result).encode()
                self.send_response(status)
                self.send_header("Content-Type", extra.get("Content-Type", "application/json"))
                for name in ("Link", "Location"):  # a page of results; a redirect (tests/lti_launch.py)
                    if name in extra:
                        self.send_header(name, extra[name])
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, *args):
                pass

        return Handler
