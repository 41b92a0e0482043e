"""The class hub starts, a student sees the released assignment in their own server, an instructor opens formgrader
through the hub and a student is refused it (autograder/hub/)."""
import pytest
from tests.hub import running_hub, log_in, open_server

@pytest.fixture(scope="module")
def hub():
    with running_hub("smoke", ["smoke-ada"], ["smoke-teacher"], ["03_masking"]) as h:
        yield h

def test_a_student_sees_the_released_assignment(hub):
    s = open_server(hub, log_in(hub, "smoke-ada"), "smoke-ada")
    r = s.get(f"{hub.url}/user/smoke-ada/assignments", params={"course_id": hub.course_id})
    assert r.json()["value"][0]["assignment_id"] == "03_masking", r.text
    r = s.get(f"{hub.url}/user/smoke-ada/api/contents")
    assert r.status_code == 200, r.text

def test_the_instructor_opens_formgrader(hub):
    s = log_in(hub, "smoke-teacher")
    r = s.get(f"{hub.url}/services/{hub.course_id}/formgrader")
    assert r.status_code == 200 and "formgrader" in r.text.lower(), (r.status_code, r.url, r.text[:500])

def test_a_student_gets_403_from_formgrader(hub):
    s = log_in(hub, "smoke-ada")
    r = s.get(f"{hub.url}/services/{hub.course_id}/formgrader")
    assert r.status_code == 403, (r.status_code, r.url)
