"""How a student's server starts on the class hub: `ClassSpawner`, JupyterHub's local-process spawner with each
student's server in a world of its own.

- **Limits** (autograder.box.cgroups): the server, its kernels and terminals run in the student's own cgroup:
  `memory_mb` for all of them, `processes` at once, an equal share of the CPU (at most `cpu_cores`).
- **A home of bounded size**: `homes/<name>.img`, an ext4 file system of `home_mb` MiB (sparse: it takes only what is
  written), which the student's view mounts at `homes/<name>`. A full home says "No space left on device" to its
  student only. (To read a home from outside, mount its image: `mount -o loop homes/ada.img /mnt`; while the
  student's server runs, mount uses the same loop device, so the two are one file system.)
- **A view of the machine of its own** (`view_command`): a mount namespace whose root shows only what a student's
  server needs: the system's programs and libraries (read-only), the course's Python environment and the student
  package (read-only), their own home and the exchange; a private `/tmp`, `/dev/shm` and `/run` (tmpfs of `tmp_mb`
  MiB each); and a `/proc` in which they see only their own processes. No other student's files, no checkout of the
  course anywhere on the machine, no one else's `/tmp`.

The server is started as root only to build that view; it then runs as the student, with no way to gain privileges
again (`setpriv --no-new-privs`: a set-user-id program such as `su` cannot raise them).
"""
from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from jupyterhub.spawner import LocalProcessSpawner

from autograder.box.cgroups import Limits, Tree
from autograder.hub.settings import SETTINGS_VARIABLE, HubSettings

# The machine's own folders a server needs, shown read-only: programs, libraries, the system's settings (accounts'
# names, time zone, certificates). A symbolic link among them (`/bin` -> `usr/bin`) is copied as a link.
SYSTEM = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"]
VIEW_ROOT = "/run/tfs-view"  # where each view's root is mounted, inside the view's own namespace only


def limits(settings: HubSettings) -> Limits:
    return Limits(memory_mb=settings.memory_mb, processes=settings.processes, cpu_cores=settings.cpu_cores or None)


def view_command(settings: HubSettings, account: pwd.struct_passwd, argv: list[str]) -> list[str]:
    """`argv` run as `account` in a view of its own (see the module's docstring). Run as root."""
    home, uid, gid = account.pw_dir, account.pw_uid, account.pw_gid
    tmpfs = f"size={settings.tmp_mb}m,nosuid,nodev"
    shown = [(path, "ro") for path in _environment_paths(settings)] + \
        [(str(settings.software), "ro"), (str(settings.student_config), "ro"), (str(settings.student_data), "ro"),
         (str(settings.exchange), "rw")] + ([] if settings.home_mb else [(home, "rw")])
    q = shlex.quote
    lines = ["set -e", "export PATH=/usr/sbin:/usr/bin:/sbin:/bin", f"R={VIEW_ROOT}", 'mkdir -p "$R"',
             'mount -t tmpfs -o mode=755,size=16m tfs-view "$R"',
             # the view's own file systems first: a folder shown below may lie under /tmp or /run (a test's hub)
             'mkdir -p "$R/dev" "$R/proc" "$R/sys" "$R/tmp" "$R/run"',
             'mount --rbind /dev "$R/dev"',
             f'mount -t tmpfs -o mode=1777,{tmpfs} tfs-shm "$R/dev/shm"',
             'mount -t proc -o hidepid=2,nosuid,nodev,noexec proc "$R/proc"',
             'mount --rbind /sys "$R/sys"', 'mount -o remount,bind,ro "$R/sys"',
             f'mount -t tmpfs -o mode=1777,{tmpfs} tfs-tmp "$R/tmp"',
             f'mount -t tmpfs -o mode=755,{tmpfs} tfs-run "$R/run"',
             f'mkdir -m 700 "$R/run/user" && chown {uid}:{gid} "$R/run/user"']
    for folder in SYSTEM:
        if os.path.islink(folder):
            lines.append(f'ln -s {q(os.readlink(folder))} "$R"{q(folder)}')
        elif os.path.isdir(folder):
            lines += [f'mkdir -p "$R"{q(folder)}', f'mount --rbind {q(folder)} "$R"{q(folder)}',
                      f'mount -o remount,bind,ro "$R"{q(folder)}']
    for path, mode in shown:
        lines += [f'mkdir -p "$R"{q(path)}', f'mount --bind {q(path)} "$R"{q(path)}']
        if mode == "ro":
            lines.append(f'mount -o remount,bind,ro "$R"{q(path)}')
    if settings.home_mb:  # the same loop device as any other mount of the image: one file system, never two
        lines += [f'mkdir -p "$R"{q(home)}', f'mount -o loop,nosuid,nodev {q(str(home_image(home)))} "$R"{q(home)}']
    lines.append(f'exec {_tool("chroot")} "$R" {_tool("setpriv")} --reuid={uid} --regid={gid} --init-groups '
                 f'--no-new-privs -- /usr/bin/env -C {q(home)} PATH={q(student_path(settings))} "$@"')
    return [_tool("unshare"), "--mount", "--propagation", "private", "/bin/sh", "-c", "\n".join(lines), "sh", *argv]


def student_path(settings: HubSettings) -> str:
    """A student's PATH: the course's Python first."""
    return f"{settings.python}/bin:/usr/local/bin:/usr/bin:/bin"


def _tool(name: str) -> str:
    """A system program's full path: a server's PATH is the student's, which leaves out /usr/sbin."""
    found = shutil.which(name, path="/usr/sbin:/usr/bin:/sbin:/bin")
    if found is None:
        raise RuntimeError(f"the class hub needs {name} (util-linux or coreutils) on this machine")
    return found


def _environment_paths(settings: HubSettings) -> list[str]:
    """The course's Python environment and the installation it was made from (a venv's `python` is a link there)."""
    paths = {os.path.realpath(settings.python)}
    found = subprocess.run([f"{settings.python}/bin/python", "-c", "import sys; print(sys.base_prefix)"],
                           capture_output=True, text=True, check=True)
    paths.add(os.path.realpath(found.stdout.strip()))
    # the outermost of nested paths is enough: a bind of it shows what is below
    return sorted(p for p in paths if not any(p != other and p.startswith(other + os.sep) for other in paths))


def home_image(home: Path | str) -> Path:
    """The file that holds the student's home `homes/<name>`: `homes/<name>.img`."""
    home = Path(home)
    return home.with_name(f"{home.name}.img")


def ensure_home(settings: HubSettings, account: pwd.struct_passwd) -> None:
    """The student's home: with `home_mb`, their own ext4 file system of that many MiB in `homes/<name>.img`, made the
    first time (with what an earlier hub kept in the folder `homes/<name>` moved in), which their view mounts at
    `homes/<name>`; without, the plain folder."""
    home = Path(account.pw_dir)
    home.mkdir(parents=True, exist_ok=True)
    os.chown(home, account.pw_uid, account.pw_gid)
    home.chmod(0o700)
    image = home_image(home)
    if not settings.home_mb or image.exists():
        return
    made = image.with_name(f".{image.name}.making")  # a start cut short leaves no half-made home behind
    subprocess.run(["truncate", "-s", f"{settings.home_mb}M", str(made)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-m", "0", "-E", f"root_owner={account.pw_uid}:{account.pw_gid}",
                    str(made)], check=True, capture_output=True)
    made.chmod(0o600)
    staging = home.with_name(f".{home.name}.moving")
    staging.mkdir(exist_ok=True)
    subprocess.run(["mount", "-o", "loop", str(made), str(staging)], check=True)
    try:
        (staging / "lost+found").rmdir()  # e2fsck makes it again when it needs it; a student never does
        staging.chmod(0o700)
        if any(home.iterdir()):
            subprocess.run(["cp", "-a", f"{home}/.", str(staging)], check=True)
    finally:
        subprocess.run(["umount", str(staging)], check=True)
        staging.rmdir()
    made.rename(image)
    for entry in home.iterdir():  # moved into the image: the folder is only where the image is seen now
        subprocess.run(["rm", "-rf", "--one-file-system", str(entry)], check=True)


class ClassSpawner(LocalProcessSpawner):
    """A student's server in their own cgroup, home image and view (see the module's docstring)."""

    def _settings(self) -> HubSettings:
        return HubSettings.load(Path(os.environ[SETTINGS_VARIABLE]))

    def make_preexec_fn(self, name: str):
        """Run in the new process before its command: join the student's cgroup (the command drops to the student
        once its view is built)."""
        cgroup = self._cgroup
        return lambda: cgroup.add(0)

    async def start(self):
        settings = self._settings()
        account = pwd.getpwnam(self.user.name)
        ensure_home(settings, account)
        self._cgroup = Tree.load(settings.cgroups_record).student(self.user.name).make()
        self._cgroup.kill()  # what their last server left running (a background job) starts no second life
        self._cgroup.limit(limits(settings))
        saved = self.cmd
        self.cmd = view_command(settings, account, [*saved])
        try:
            return await super().start()
        finally:
            self.cmd = saved

    async def stop(self, now: bool = False):
        """Stop the server as JupyterHub does, then whatever the student still had running (a job started in the
        background, a process that left the server's session): nothing of theirs outlives their server."""
        try:
            await super().stop(now=now)
        finally:
            Tree.load(self._settings().cgroups_record).student(self.user.name).kill()

    def user_env(self, env: dict) -> dict:
        env = super().user_env(env)
        env["TFS_MEMORY_MB"] = str(self._settings().memory_mb)
        return env


if __name__ == "__main__":  # pragma: no cover: print the view's script for a name, to read it
    hub = HubSettings.load(Path(sys.argv[1]))
    print(view_command(hub, pwd.getpwnam(sys.argv[2]), ["jupyterhub-singleuser"])[6])
