"""The hub's folder, laid out before the hub starts:

    settings.json      what `jupyterhub_config.py` reads
    state/             the hub's database, cookie secret and log (root only)
    grader/course/     the course directory: formgrader's, the grader account's alone (0700)
    exchange/          nbgrader's exchange: released assignments, hand-ins, feedback
    code/              the hub's copy of the course's packages (root's, 0755): what JupyterHub, its configuration and
                       its root services import
    software/course/   the student package, which every student's kernel imports
    etc/student/       students' Jupyter settings: the exchange, the hub's course list, no formgrader; their
                       terminals' start-up file
    etc/student-data/  students' kernel spec: each kernel held to the student's memory (course.kernel_limits)
    etc/grader/        the grader's: the exchange, formgrader; formgrader's terminal's start-up file
    homes/<student>/   each student's home, private to them (homes/<student>.img: its file system, autograder.hub.spawner)
"""
from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

from autograder.hub.accounts import as_account, own_tree, prepare_class_accounts
from autograder.grading.execute_timeouts import config_lines
from autograder.hub.private_view import private_view, shown_paths
from autograder.hub.settings import GRADE_NOTICE, HubSettings
from autograder.paths import ROOT, copy_course


def lay_out(settings: HubSettings) -> None:
    """Make (or bring up to date) the hub's folder for `settings`, and release its assignments into the exchange."""
    folder = settings.folder
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o755)
    settings.state.mkdir(exist_ok=True)
    settings.state.chmod(0o700)
    settings.homes.mkdir(exist_ok=True)
    settings.homes.chmod(0o755)
    settings.exchange.mkdir(exist_ok=True)
    # As nbgrader asks of an exchange, every account may write there; the sticky bit (1777, as /tmp) keeps a student
    # from moving the course's folder aside and putting their own in its place (its outbound, their readable inbound).
    settings.exchange.chmod(0o1777)
    _student_software(settings)
    _root_code(settings)
    write_jupyter_settings(settings)
    fresh = not settings.course_dir.exists()
    prepare_class_accounts(settings)  # the names the settings give are the class's or free; the grader's made
    if fresh:
        copy_course(settings.course_dir)
    else:
        _bring_code_up_to_date(settings)
    own_tree(settings.course_dir.parent, settings.grader)
    _grader_owns_the_exchange(settings)
    _release(settings, [name for name in settings.assignments if not released(settings, name)])
    settings.save().chmod(0o600)  # root's alone: the demo's password is in it


def _grader_owns_the_exchange(settings: HubSettings) -> None:
    """The course's folders in the exchange belong to the grader, who collects and releases feedback there (nbgrader
    expects them to be the releasing instructor's); made here when missing, before the grader's release. inbound/
    (3733) is the grader's and of the grader's own group, which no student has, with the setgid and sticky bits: every
    hand-in made there gets that group, which the students' submit (course.private_submit) lets read it and nobody
    else; only its student or the grader may rename or remove it; and only its owner may list inbound/ (collect and
    formgrader's Collect button run as the grader). The hand-ins in inbound/ stay their students' and as they are:
    a change of their modes would change their time (autograder.handins.inbound.exchange_time)."""
    course = settings.exchange / settings.course_id
    for folder in (course, course / "inbound"):
        folder.mkdir(mode=0o755, exist_ok=True)
        shutil.chown(folder, settings.grader, settings.grader)
    (course / "inbound").chmod(0o3733)
    if (course / "outbound").is_dir():
        own_tree(course / "outbound", settings.grader)


def _bring_code_up_to_date(settings: HubSettings) -> None:
    """A hub started again after the repository changed runs the new code: the course directory's `autograder` and
    `course` packages are copied afresh. Its source/, release/ and all it graded are the class's and stay."""
    for package in ("autograder", "course"):
        target = settings.course_dir / package
        if target.exists():
            shutil.rmtree(target)
        shutil.copytree(ROOT / package, target, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))


def _root_code(settings: HubSettings) -> None:
    """code/: the packages root runs, copied from this repository, owned by root and writable by nobody else. Root
    never imports from the course directory, which the grader owns."""
    target = settings.code
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(mode=0o755)
    for package in ("autograder", "course"):
        shutil.copytree(ROOT / package, target / package, ignore=shutil.ignore_patterns("__pycache__",
                                                                                         ".ipynb_checkpoints"))
    for path in [target, *target.rglob("*")]:
        os.chown(path, 0, 0)
        path.chmod(0o755 if path.is_dir() else 0o644)


def _student_software(settings: HubSettings) -> None:
    """The student package, copied (never the instructor's `autograder`)."""
    target = settings.software / "course"
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(ROOT / "course", target, ignore=shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints"))
    for path in [settings.software, *settings.software.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def _nbgrader_config(settings: HubSettings, *lines: str) -> str:
    return "\n".join(["c = get_config()  # noqa: F821 (written by python -m autograder hub)",
                      f"c.Exchange.root = {str(settings.exchange)!r}",
                      # Each course's assignments and feedback under <home>/<course id>/: one hub, many courses.
                      "c.Exchange.path_includes_course = True",
                      # Validate waits on a kernel as long as grading does, also on a busy hub
                      *config_lines(), *lines, ""])


def write_jupyter_settings(settings: HubSettings) -> None:
    """etc/student/ and etc/grader/: the Jupyter and nbgrader settings of the students' servers and of formgrader
    (also written into the Kubernetes images by deploy/k8s/jupyter_settings.py)."""
    student, grader = settings.student_config, settings.grader_config
    for folder in (student / "labconfig", grader / "labconfig"):
        folder.mkdir(parents=True, exist_ok=True)
    # A student's server knows their courses from the hub's groups (nbgrader-<course>), and offers no instructor tool.
    # Submit (the Assignment List and the command) leaves a hand-in only its student and the grader can reach.
    (student / "nbgrader_config.py").write_text(_nbgrader_config(
        settings, "from nbgrader.auth import JupyterHubAuthPlugin",
        "c.Authenticator.plugin_class = JupyterHubAuthPlugin",
        "c.ExchangeFactory.submit = 'course.private_submit.PrivateSubmit'"))
    _write_json(student / "jupyter_server_config.json", {"ServerApp": {
        "jpserver_extensions": {"nbgrader.server_extensions.formgrader": False},
        "terminado_settings": {"shell_command": _terminal(student / "bashrc")}}})
    (student / "bashrc").write_text(_bashrc(settings))
    _write_kernel_spec(settings)
    _student_lab_extensions(settings)
    # Nor JupyterLab's question about fetching Jupyter news at a student's first visit: the class's hub decides that.
    _write_json(student / "labconfig" / "page_config.json", {"disabledExtensions": {
        "@jupyter/nbgrader:formgrader": True, "@jupyter/nbgrader:create-assignment": True,
        "@jupyterlab/apputils-extension:announcements": True}})
    # The grader's server is formgrader: the course directory, no assignment list.
    # Collect (the command and formgrader's button) takes a hand-in only from the account it is named for.
    (grader / "nbgrader_config.py").write_text(_nbgrader_config(
        settings, f"c.CourseDirectory.course_id = {settings.course_id!r}",
        "c.ExchangeFactory.collect = 'autograder.hub.owned_collect.OwnedCollect'",
        # What a student wrote renders inert in formgrader's views and the feedback pages (autograder.hub.inert).
        "c.HTMLExporter.sanitize_html = True",
        "c.HTMLExporter.filters = {'clean_html': 'autograder.hub.inert.clean_html', "
        "'strip_files_prefix': 'autograder.hub.inert.strip_files_prefix'}"))
    _write_json(grader / "jupyter_server_config.json", {"ServerApp": {
        "jpserver_extensions": {"nbgrader.server_extensions.assignment_list": False,
                                "nbgrader.server_extensions.course_list": False,
                                "autograder.hub.inert": True},  # formgrader's pages run formgrader's scripts only
        "terminado_settings": {"shell_command": _terminal(grader / "bashrc")}}})
    (grader / "bashrc").write_text(_bashrc(settings, grading=True))
    _write_json(grader / "labconfig" / "page_config.json", {"disabledExtensions": {
        "@jupyter/nbgrader:assignment-list": True, "@jupyter/nbgrader:course-list": True,
        "@jupyterlab/apputils-extension:announcements": True}})
    for path in [settings.folder / "etc", *(settings.folder / "etc").rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)


def _terminal(rcfile: Path) -> list[str]:
    """A terminal's shell: bash with the hub's start-up file, which reads the account's own ~/.bashrc first. (Left to
    itself, Jupyter starts a login shell, whose /etc/profile puts the system's Python first on PATH.)"""
    return ["/bin/bash", "--rcfile", str(rcfile), "-i"]


def _bashrc(settings: HubSettings, grading: bool = False) -> str:
    """A terminal's start-up file: the course's Python first on PATH, and for the grader the course directory, where
    grading runs, with the commands to run there."""
    lines = ["# Written by python -m autograder hub: the class hub's terminals start with it.",
             '[ -f ~/.bashrc ] && . ~/.bashrc',
             f'export PATH="{settings.python}/bin:$PATH"']
    if grading:
        lines += [f"cd {shlex.quote(str(settings.course_dir))}", r"PS1='\u:\w\$ '",
                  "echo 'The course directory. After Collect in formgrader, grade and send the feedback back with:'",
                  "echo '  python -m autograder grade 03_masking        (an assignment, or several)'",
                  "echo '  python -m autograder release-feedback 03_masking'"]
    return "\n".join(lines) + "\n"


def _write_kernel_spec(settings: HubSettings) -> None:
    """etc/student-data/kernels/python3: the students' Python kernel, with course.kernel_limits loaded, which holds it
    to the student's memory and says so when a cell asks for more."""
    folder = settings.student_data / "kernels" / "python3"
    folder.mkdir(parents=True, exist_ok=True)
    _write_json(folder / "kernel.json", {
        "argv": [f"{settings.python}/bin/python", "-m", "ipykernel_launcher", "-f", "{connection_file}",
                 "--IPKernelApp.extensions=course.kernel_limits"],
        "display_name": "Python 3 (ipykernel)", "language": "python", "metadata": {"debugger": True}})


def _student_lab_extensions(settings: HubSettings) -> None:
    """etc/student-data/labextensions/: JupyterLab's notice of a hand-in graded at submission, where make built it
    (deploy/grade-notice/); without it, students read their results on the service's page alone."""
    target = settings.student_data / "labextensions" / "tfs-grade-notice"
    if target.exists():
        shutil.rmtree(target)
    if (GRADE_NOTICE / "package.json").exists():
        shutil.copytree(GRADE_NOTICE, target)


def _write_json(path: Path, value: dict) -> None:
    path.write_text(json.dumps(value, indent=2) + "\n")


def as_grader_in(settings: HubSettings, cgroup, argv: list[str]) -> list[str]:
    """`argv` run as the grader inside `cgroup` (one of the grader's own, autograder.box.cgroups), started by root:
    root moves the process there and becomes the grader with the system's shell and setpriv, and runs nothing of
    the course. Not `--no-new-privs`: the grader's boxes need shadow's set-user-id newuidmap."""
    moves = " && ".join(f"echo $$ > {shlex.quote(str(folder / 'cgroup.procs'))}" for folder in cgroup.folders)
    becomes = f"exec setpriv --reuid={settings.grader} --regid={settings.grader} --init-groups -- \"$@\""
    return ["/bin/sh", "-c", f"{moves} && {becomes}", "sh", *argv]


def grader_environment(settings: HubSettings) -> dict[str, str]:
    """The environment of every process the grader runs: its home, the course directory's own packages first."""
    return {**os.environ, "HOME": str(settings.course_dir.parent), "PYTHONPATH": str(settings.course_dir),
            "JUPYTER_CONFIG_PATH": str(settings.grader_config),
            "PATH": f"{settings.python}/bin:{os.environ.get('PATH', '/usr/bin:/bin')}"}


def released(settings: HubSettings, assignment: str) -> bool:
    """Whether `assignment` is in the exchange for students to fetch already (a hub started again releases only
    what is not: a released assignment may have been fetched, and is the instructor's to change)."""
    return (settings.exchange / settings.course_id / "outbound" / assignment).is_dir()


def _release(settings: HubSettings, assignments: list[str]) -> None:
    """nbgrader generate_assignment and release_assignment in the course directory (autograder/hub/release.py), as
    the grader account, who owns the course's folders in the exchange: students can fetch them."""
    if not assignments:
        return
    argv = [f"{settings.python}/bin/python", "-m", "autograder.hub.release", *assignments]
    shown = shown_paths(settings.folder, settings.python, settings.proxy)
    result = subprocess.run(private_view(shown, as_account(settings.grader, argv)), cwd=settings.course_dir,
                            env=grader_environment(settings), capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"releasing {', '.join(assignments)} in {settings.course_dir} failed:\n"
                           f"{(result.stdout + result.stderr)[-3000:]}")
