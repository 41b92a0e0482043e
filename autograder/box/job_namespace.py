"""The grading job's own network namespace, with only loopback: where nbgrader and the kernel it runs talk (ZeroMQ
over 127.0.0.1), and where nothing else is.

Root makes one directly. Any other account makes a user namespace first, which Linux allows only while the process
has one thread. In it the account keeps its own ids (nbgrader reads and writes the gradebook as before); with
subordinate ids (autograder.box.who), the box's id is mapped too, by shadow's `newuidmap` and `newgidmap` run from
outside, so that the box's user namespace, made inside this one, can map it in turn.
"""
from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
import subprocess
import sys

from autograder.box.who import Slot, tool

CLONE_NEWUSER, CLONE_NEWNET = 0x10000000, 0x40000000
SIOCGIFFLAGS, SIOCSIFFLAGS, IFF_UP = 0x8913, 0x8914, 0x1


def isolate_network(slot: Slot | None = None) -> str | None:
    """Move this process into a network namespace of its own, where only loopback exists; with `slot`'s ids (a box's
    subordinate ids), map them in the user namespace too. None on success, else why not."""
    if not sys.platform.startswith("linux"):
        return "network namespaces exist on Linux only"
    libc = ctypes.CDLL(None, use_errno=True)
    if os.geteuid() == 0:
        if libc.unshare(CLONE_NEWNET) != 0:
            return f"unshare: {os.strerror(ctypes.get_errno())}"
    else:
        why_not = _own_user_namespace(libc, slot)
        if why_not:
            return why_not
    try:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
            request = struct.pack("16sh", b"lo", 0)
            flags = struct.unpack("16sh", fcntl.ioctl(sock, SIOCGIFFLAGS, request))[1]
            fcntl.ioctl(sock, SIOCSIFFLAGS, struct.pack("16sh", b"lo", flags | IFF_UP))
    except OSError as exc:
        return f"bringing up loopback: {exc}"
    return None


def _own_user_namespace(libc, slot: Slot | None) -> str | None:
    uid, gid = os.getuid(), os.getgid()
    if slot is None or slot.uid is None:
        if libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) != 0:
            return f"unshare: {os.strerror(ctypes.get_errno())}"
        try:
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as file:
                    file.write(text)
        except OSError as exc:
            return f"setting up the user namespace: {exc}"
        return None
    # newuidmap must run outside the new namespace: a helper forked first, told to go once it exists.
    go, went = os.pipe(), os.pipe()
    job = os.getpid()
    helper = os.fork()
    if helper == 0:
        os.close(go[1])
        os.close(went[0])
        code = 1
        try:
            if os.read(go[0], 1):
                maps = [(tool("newuidmap"), f"{uid} {uid} 1 {slot.uid} {slot.uid} 1"),
                        (tool("newgidmap"), f"{gid} {gid} 1 {slot.gid} {slot.gid} 1")]
                said = ""
                for program, ranges in maps:
                    done = subprocess.run([program, str(job), *ranges.split()], capture_output=True, text=True)
                    said += done.stderr.strip()
                    if done.returncode != 0:
                        break
                else:
                    code = 0
                os.write(went[1], said.encode()[:400] or b"-")
        finally:
            os._exit(code)
    os.close(go[0])
    os.close(went[1])
    unshared = libc.unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0
    error = ctypes.get_errno()
    os.write(go[1], b"1" if unshared else b"")
    os.close(go[1])
    said = os.read(went[0], 400).decode(errors="replace")
    os.close(went[0])
    _, status = os.waitpid(helper, 0)
    if not unshared:
        return f"unshare: {os.strerror(error)}"
    if os.waitstatus_to_exitcode(status) != 0:
        return f"newuidmap or newgidmap refused the box's ids ({said})"
    return None
