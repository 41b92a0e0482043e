"""`python -m autograder.on_submit`: the class hub's service that grades each hand-in as it arrives (the hub starts
it as the grader, in the course directory; autograder/hub/jupyterhub_config.py)."""
from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import threading
from pathlib import Path
from urllib.parse import urlparse

from autograder.on_submit.service import Service
from autograder.on_submit.web import application


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m autograder.on_submit", description=__doc__.splitlines()[0])
    parser.add_argument("--inbound", type=Path, required=True, help="the course's inbound/ in nbgrader's exchange")
    parser.add_argument("--policies", default="{}", help="the hub settings' on_submit, as JSON")
    parser.add_argument("--jobs", type=int, default=1, help="notebooks graded at a time")
    parser.add_argument("--lti", action="store_true", help="scores go to the LMS as the policy says (lms push)")
    parser.add_argument("--instructors", required=True, help="the hub group whose members see the whole queue")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="[%(levelname)1.1s %(asctime)s autograde-on-submit] %(message)s")
    service = Service(Path.cwd(), args.inbound, json.loads(args.policies), args.jobs, args.lti)
    stop = threading.Event()
    threading.Thread(target=service.run, args=(stop,), name="grading", daemon=True).start()
    url = urlparse(os.environ["JUPYTERHUB_SERVICE_URL"])
    application(service, os.environ["JUPYTERHUB_SERVICE_PREFIX"], args.instructors).listen(url.port, url.hostname)
    try:
        asyncio.get_event_loop().run_forever()
    finally:
        stop.set()


if __name__ == "__main__":
    main()
