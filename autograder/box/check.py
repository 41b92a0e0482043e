"""Whether this machine can box a graded notebook, and how: `python -m autograder.box.check` makes a real box, goes in
as a kernel would, and prints what the box was (JSON); `check()` runs that once per process and says it in words.

Grading calls `check()` before it starts: a machine that cannot make the box is told so at once, with what to do,
not after a class was graded half-boxed.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from autograder.box.box import Box, go_in
from autograder.box.job_namespace import isolate_network
from autograder.box.view import View
from autograder.box.who import BoxUnavailable, Identity, identity, take_slot

PROBE_WORK, PROBE_RECORDS = "/run/box/probe-work", "/run/box/probe-records"


@dataclass(frozen=True)
class Boxing:
    """How this machine boxes a notebook: who its processes are, and why it has no cgroup of its own ("": it has)."""
    who: Identity
    no_cgroup: str = ""

    def describe(self) -> str:
        held = (f"; its processes and memory held by limits on each process, with no cgroup of its own "
                f"({self.no_cgroup})" if self.no_cgroup else "; its memory and processes held by a cgroup of its own")
        return self.who.describe() + held


@functools.cache
def check() -> Boxing:
    """How this account's boxes are, proven by making one; BoxUnavailable with why not and what to do."""
    identity()  # the plain reasons (no bubblewrap, not Linux) without starting anything
    found = subprocess.run([sys.executable, "-m", "autograder.box.check"], capture_output=True, text=True, timeout=120)
    try:
        said = json.loads(found.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        said = {"unavailable": (found.stderr or found.stdout).strip()[-600:] or f"exit {found.returncode}"}
    if "unavailable" in said:
        raise BoxUnavailable(said["unavailable"])
    who = Identity(said["kind"], tuple(said["uids"]) if said["uids"] else None,
                   tuple(said["gids"]) if said["gids"] else None)
    return Boxing(who, "; ".join(note.split("(", 1)[-1].split(")")[0] for note in said["notes"]))


def probe() -> dict:
    """Make a box, go in from a forked child, and report what the child was inside."""
    who = identity()
    slot = take_slot(who)
    why_not = isolate_network(slot)
    if why_not:
        raise BoxUnavailable(f"no network namespace for grading ({why_not})")
    box = Box.start(View(read_only=(sys.prefix, sys.base_prefix), work=PROBE_WORK, records=PROBE_RECORDS), slot)
    try:
        child = os.fork()
        if child == 0:
            code = 1
            try:
                go_in(box.entry)
                status = Path("/proc/self/status").read_text()
                inside = {"uid": os.getuid(), "sees_the_host": os.path.exists(os.path.expanduser("~root/.bashrc")),
                          "capabilities": [line for line in status.splitlines() if line.startswith("CapEff")][0]}
                Path(PROBE_RECORDS, "probe.json").write_text(json.dumps(inside))
                code = 0
            except BaseException:  # noqa: BLE001: said where the parent reads it, the kernel's log
                import traceback
                traceback.print_exc()
                sys.stderr.flush()
            finally:
                os._exit(code)
        _, status = os.waitpid(child, 0)
        with tempfile.TemporaryDirectory() as folder:
            box.collect(Path(folder))
            found = Path(folder, "probe.json")
            if os.waitstatus_to_exitcode(status) != 0 or not found.exists():
                raise BoxUnavailable(f"a process could not go into the box: {box.kernel_log()[-400:] or 'no reason given'}")
            inside = json.loads(found.read_text())
    finally:
        box.end()
    return {"kind": who.kind, "uids": who.uids, "gids": who.gids, "describe": who.describe(), "inside": inside,
            "notes": box.notes}


if __name__ == "__main__":
    try:
        print(json.dumps(probe()))
    except (BoxUnavailable, OSError) as why:
        print(json.dumps({"unavailable": str(why)}))
