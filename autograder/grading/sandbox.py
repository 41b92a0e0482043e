"""Run one grading command so that nothing it starts outlives it, under a memory cap.

`python -m autograder.grading.sandbox --memory-mb 4096 -- nbgrader autograde ...` makes itself the "child subreaper" of
everything the command starts (Linux `prctl(PR_SET_CHILD_SUBREAPER)`): a kernel in its own session, and any
process student code forks or detaches, stays its descendant. When the command ends, or when this process is
told to stop (SIGTERM), every remaining descendant is killed. The memory cap (`RLIMIT_DATA`, inherited by the
command and the kernel it starts) makes an allocation past it fail in that kernel alone. With `--no-network`, the
command runs in a network namespace of its own with only loopback (autograder.box.job_namespace), where Linux lets
an unprivileged user make one; elsewhere it says so on stderr and runs with the network.

Elsewhere than Linux the command simply runs, without the subreaper; the cap applies where `resource` exists.
"""
from __future__ import annotations

import argparse
import ctypes
import signal
import subprocess
import sys

import psutil

from autograder.box.job_namespace import isolate_network

PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER = 1, 36


def become_subreaper() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    return libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def end_with_parent(signum: int = signal.SIGTERM) -> None:
    """Be sent `signum` when the parent process dies (Linux), so a killed grading run leaves nothing running."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signum, 0, 0, 0)


def cap_memory(megabytes: int) -> None:
    import resource
    limit = megabytes * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_DATA, (limit, limit))


def kill_descendants(rounds: int = 20) -> int:
    """Kill every descendant of this process, again until none is left (a dying one may have forked); return
    how many were killed."""
    killed = 0
    me = psutil.Process()
    for _ in range(rounds):
        children = me.children(recursive=True)
        if not children:
            break
        for child in children:
            try:
                alive = child.status() != psutil.STATUS_ZOMBIE  # a zombie has ended already: only reaped here
                child.kill()
                killed += alive
            except psutil.NoSuchProcess:
                pass
        psutil.wait_procs(children, timeout=2)
    return killed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m autograder.grading.sandbox", description=__doc__.splitlines()[0])
    parser.add_argument("--memory-mb", type=int, default=None)
    parser.add_argument("--no-network", action="store_true", help="run the command without network access")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if args.no_network:
        why_not = isolate_network()
        if why_not:
            print(f"sandbox: the network stays reachable ({why_not})", file=sys.stderr)
    become_subreaper()
    if args.memory_mb:
        cap_memory(args.memory_mb)

    def stop(signum, frame):
        kill_descendants()
        sys.exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    try:
        returncode = subprocess.call(command)
    finally:
        leftovers = kill_descendants()
        if leftovers:
            print(f"sandbox: ended {leftovers} process(es) the graded notebook left running", file=sys.stderr)
    return returncode


if __name__ == "__main__":
    sys.exit(main())
