"""A real JupyterLab server and headless Chromium driven by Playwright, for the browser tests.

`lab_command_options()` reads the options of `make lab` from the Makefile (by `make -n lab`), so the tests
start JupyterLab the way students and instructors do. `LabServer` runs it on a free port with a token in a
scratch course copy, with its own settings, workspaces and runtime folders. `chromium()` is the path of the
system Chromium, or a skip with the reason; Playwright's own browser download is never used.
"""
from __future__ import annotations

import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import psutil
import pytest

from autograder.nbgrader_run import environment
from autograder.paths import ROOT

ARTIFACTS = ROOT / "tests" / "artifacts" / "browser"  # every step's screenshot (git-ignored)
SCREENSHOTS = ROOT / "docs" / "screenshots"  # the few the README shows, rewritten when UPDATE_SCREENSHOTS is set
UPDATE_SCREENSHOTS = "COURSE_UPDATE_SCREENSHOTS"
VIEWPORT = {"width": 1280, "height": 800}

CHROMIUM = "/usr/bin/chromium"  # Debian's package; `make setup` installs it where apt-get is available
# Headless in a closed network: without the background-networking flags Chromium keeps dialling Google's
# hosts and its connections are refused.
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

# JupyterLab settings for the test server: every cell stays in the page (no virtual scrolling, so the
# outputs of all cells can be read), and no news or update pop-ups over the screenshots.
LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": '{"windowingMode": "none"}',
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings":
        '{"fetchNews": "false", "checkForUpdates": false}',
}


def chromium() -> str:
    """The Chromium to drive (`$COURSE_CHROMIUM` or /usr/bin/chromium); skips the test when there is none."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        pytest.skip("the Python package playwright is not installed (make setup installs it from requirements.txt)")
    path = os.environ.get("COURSE_CHROMIUM", CHROMIUM)
    if not os.access(path, os.X_OK):
        pytest.skip(f"Chromium is not installed at {path} (make setup installs it where apt-get is available "
                    f"and it runs as root; elsewhere install Chromium, or set COURSE_CHROMIUM to its path)")
    return path


@pytest.fixture(scope="module")
def browser():
    """Headless Chromium for a test module (skipped with the reason where there is none); import it by name."""
    executable = chromium()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def lab_command_options() -> list[str]:
    """The options `make lab` gives `jupyter lab`, read from a dry run of the Makefile."""
    dry = subprocess.run(["make", "--no-print-directory", "-n", "lab"], cwd=ROOT, capture_output=True, text=True)
    assert dry.returncode == 0, dry.stderr
    line = next((line for line in dry.stdout.splitlines() if "jupyter lab" in line), None)
    assert line is not None, f"`make -n lab` starts no `jupyter lab`:\n{dry.stdout}"
    words = shlex.split(line)
    return words[words.index("lab") + 1:]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class LabServer:
    """`jupyter lab <make lab's options>` in `root` (the course directory) on a free port, with a token."""

    def __init__(self, root: Path, home: Path, options: list[str]):
        self.root, self.token, self.port = root, secrets.token_hex(16), free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        settings = home / "lab-settings"
        for name, text in LAB_SETTINGS.items():
            (settings / name).parent.mkdir(parents=True, exist_ok=True)
            (settings / name).write_text(text)
        config = home / "jupyter-config"  # an empty user config: nothing from ~/.jupyter changes the tests
        (home / "exchange").mkdir(parents=True, exist_ok=True)
        config.mkdir(parents=True, exist_ok=True)
        # A course exchange of its own, as a set-up course has: no warning over the formgrader's table.
        (config / "nbgrader_config.py").write_text(f"c.Exchange.root = {str(home / 'exchange')!r}\n")
        env = environment()
        env.update(PYTHONPATH=os.pathsep.join([str(root), env["PYTHONPATH"]]), JUPYTER_CONFIG_DIR=str(config),
                   JUPYTERLAB_SETTINGS_DIR=str(settings), JUPYTERLAB_WORKSPACES_DIR=str(home / "workspaces"),
                   JUPYTER_RUNTIME_DIR=str(home / "runtime"))
        allow_root = ["--allow-root"] if os.geteuid() == 0 and "--allow-root" not in options else []
        self.log = open(home / "jupyter-lab.log", "w")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyter", "lab", *options, *allow_root, "--no-browser", f"--port={self.port}",
             "--ip=127.0.0.1", f"--IdentityProvider.token={self.token}"],
            cwd=root, env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_until_up(self, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=5):
                    return
            except OSError:
                time.sleep(0.5)
        raise TimeoutError(f"jupyter lab did not answer within {timeout} s:\n{self.log_tail()}")

    def page_url(self, path: str = "/") -> str:
        """`path` on the server, with the token that logs the browser in."""
        return f"{self.url}{path}{'&' if '?' in path else '?'}token={self.token}"

    def log_tail(self) -> str:
        self.log.flush()
        return Path(self.log.name).read_text()[-5000:]

    def stop(self) -> None:
        """Stop the server (it shuts its kernels down); then end whatever it started that is still running."""
        try:
            started = psutil.Process(self.process.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            started = []
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for child in started:
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
        self.log.close()


def save_screenshot(page, name: str, readme: bool = False, **options) -> Path:
    """A screenshot of this step in tests/artifacts/browser/; with `readme` and $COURSE_UPDATE_SCREENSHOTS
    set, also docs/screenshots/<name>.png (256 colours, to keep the repository small)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=path, **options)
    if readme and os.environ.get(UPDATE_SCREENSHOTS):
        from PIL import Image

        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        with Image.open(path) as image:
            image.convert("RGB").quantize(colors=256).save(SCREENSHOTS / f"{name}.png", optimize=True)
    return path


def clear_artifacts() -> None:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
