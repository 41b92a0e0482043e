"""`python -m autograder hub`: start a class hub and keep it up until Ctrl-C, which stops it and every server.

With no --settings it is the demo (`make hub`): on loopback, two students and an instructor who log in with one
password, every assignment released. With --settings it runs a real class from that file (see the guide)."""
from __future__ import annotations

import argparse
import secrets
import signal
import socket
import time
from pathlib import Path

from autograder.paths import ROOT

DEMO_STUDENTS = ["ada", "brian"]
DEMO_INSTRUCTORS = ["teacher"]


def add_parser(commands) -> None:
    from autograder.hub.settings import describe
    from autograder.on_submit.policy import describe as describe_policy
    hub = commands.add_parser(
        "hub", help="start a class hub (JupyterHub with nbgrader, formgrader and an idle culler) until Ctrl-C",
        formatter_class=argparse.RawDescriptionHelpFormatter, description=__doc__,
        epilog="Settings (keys of --settings' JSON file; the demo sets root, password, students, instructors, "
               "assignments):\n" + describe() + "\n" + describe_policy())
    hub.add_argument("--settings", type=Path, help="a settings.json for a real class (default: the demo)")
    hub.add_argument("--root", type=Path, default=ROOT / "demo-hub",
                     help="the demo hub's folder (default demo-hub/); a real class's is in its settings")
    hub.add_argument("--port", type=int, default=8000, help="the demo's port on 127.0.0.1 (default 8000)")
    hub.set_defaults(run=run)


def demo_settings(root: Path, port: int):
    """The demo: on `port` of 127.0.0.1; the hub's API, the proxy's API and formgrader on free loopback ports."""
    from autograder.hub.settings import HubSettings
    from course.about import NOTEBOOKS
    hub_port, proxy_api_port, formgrader_port = free_ports(3)
    return HubSettings(root=str(root.resolve()), port=port, hub_port=hub_port, proxy_api_port=proxy_api_port,
                       formgrader_port=formgrader_port, password=secrets.token_urlsafe(9),
                       students=DEMO_STUDENTS, instructors=DEMO_INSTRUCTORS, assignments=list(NOTEBOOKS))


def free_ports(count: int) -> list[int]:
    """`count` distinct ports free on 127.0.0.1 now."""
    sockets = [socket.socket() for _ in range(count)]
    for each in sockets:
        each.bind(("127.0.0.1", 0))
    ports = [each.getsockname()[1] for each in sockets]
    for each in sockets:
        each.close()
    return ports


def run(args) -> None:
    from autograder.hub import process
    from autograder.hub.settings import HubSettings
    settings = HubSettings.load(args.settings) if args.settings else demo_settings(args.root, args.port)
    print(f"laying out {settings.folder} and starting the hub (a minute or so)...", flush=True)
    try:
        hub = process.start(settings)
    except KeyboardInterrupt:
        raise SystemExit("stopped before the hub started; run it again to carry on") from None
    except process.HubRunning as running:
        raise SystemExit(str(running)) from None
    signal.signal(signal.SIGTERM, _stop_as_ctrl_c)  # systemctl stop: the same clean stop as Ctrl-C
    try:
        process.wait_until_up(settings, hub)
        print(banner(settings), flush=True)
        while hub.poll() is None:
            time.sleep(1)
        print(f"The hub stopped by itself (exit {hub.returncode}); its log: {settings.state / 'jupyterhub.log'}")
    except KeyboardInterrupt:
        print("stopping the hub, its servers, formgrader and the proxy...", flush=True)
    finally:
        code = process.stop(hub, settings)
        print(f"stopped (exit {code}). Everything of the class stays in {settings.folder}.")


def _stop_as_ctrl_c(signum, frame) -> None:
    raise KeyboardInterrupt


def banner(settings) -> str:
    lines = [f"The class hub is up: open {settings.url}/", ""]
    if settings.login == "shared-password":
        lines += [f"  students:    {', '.join(settings.students)}",
                  f"  instructors: {', '.join(settings.instructors)} (formgrader: "
                  f"{settings.url}/services/{settings.course_id}/formgrader)",
                  f"  password:    {settings.password}   (everyone's, for this run only)", ""]
    else:
        lines += [f"  people arrive from {settings.lti.issuer} (LTI 1.3); the tool's login URL is "
                  f"{settings.url}/hub/lti13/oauth_login", ""]
    lines += [f"Its log: {settings.state / 'jupyterhub.log'}. Ctrl-C stops it."]
    return "\n".join(lines)
