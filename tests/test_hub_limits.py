"""No student can starve the others, and students share nothing they did not share on purpose (issue 47, items 5 and
6), each tried from a student's own kernel on a running hub, as a student (or a runaway cell) would:

- memory: a cell asking for more than the student has fails in that cell with a message, and the kernel goes on;
  processes started past the student's memory are stopped by the kernel's OOM killer in their cgroup alone, while the
  other student's kernel and the hub go on;
- processes: a student cannot start more than their `processes`;
- CPU: each student's cgroup has the same weight and at most `cpu_cores` cores, judged by what the kernel
  enforces (cpu.stat: her processes metered against her quota and held back at it), not by what a busy
  machine happened to give her;
- disk: a full home, /tmp or /dev/shm says "No space left on device" to that student only;
- privacy: /tmp and /dev/shm are the student's own; /proc shows their own processes only; no checkout of the course
  anywhere on the machine is in their view.

The hub here is small on purpose (1 GiB a student, 160 processes, 1 core, a 64 MiB home, 32 MiB /tmp), so each
limit is reached in seconds."""
from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest

from autograder.box.cgroups import Tree
from course.kernel_limits import explanation, kernel_limit_mb
from tests.hub import Kernel, running_hub

ADA, BOB = "lim-ada", "lim-bob"
MEMORY_MB, PROCESSES, HOME_MB, TMP_MB = 1024, 160, 64, 32
OTHER_CHECKOUT = Path("/srv/tfs-lim-other-checkout")  # a copy of the course elsewhere on the machine


@pytest.fixture(scope="module")
def hub():
    secret = OTHER_CHECKOUT / "autograder" / "authoring" / "reference" / "masking.py"
    secret.parent.mkdir(parents=True, exist_ok=True)
    secret.write_text("SOLUTION = 'an instructor's working copy'\n")
    for path in [OTHER_CHECKOUT, *OTHER_CHECKOUT.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)  # readable by every account on the machine itself
    try:
        with running_hub("lim", [ADA, BOB], [], [], memory_mb=MEMORY_MB, processes=PROCESSES, cpu_cores=1,
                         home_mb=HOME_MB, tmp_mb=TMP_MB) as h:
            yield h
    finally:
        shutil.rmtree(OTHER_CHECKOUT, ignore_errors=True)


@pytest.fixture(scope="module")
def ada(hub):
    kernel = Kernel(hub, ADA)
    yield kernel
    kernel.shut_down()


@pytest.fixture(scope="module")
def bob(hub):
    kernel = Kernel(hub, BOB)
    yield kernel
    kernel.shut_down()


def run_cell(kernel: Kernel, code: str) -> dict:
    """`code` run as a cell: its output and its error's name and traceback (None when it ran through)."""
    try:
        return {"output": kernel.run(code), "error": None}
    except AssertionError as raised:
        return {"output": "", "error": str(raised)}


def test_a_cell_asking_for_more_memory_fails_with_a_message_and_the_kernel_goes_on(ada):
    ada.run("import torch\nkept = 41")
    cell = run_cell(ada, "big = torch.ones(3 * 1024**3, dtype=torch.uint8)")
    assert cell["error"] is not None, "a 3 GiB tensor was allocated on a 1 GiB student"
    assert explanation(kernel_limit_mb(MEMORY_MB)) in cell["error"], cell["error"][-2000:]
    assert ada.run("print(kept + 1)").strip() == "42"  # the same kernel, its variables kept


def test_processes_past_the_students_memory_are_stopped_and_no_one_else_is(hub, ada, bob):
    cgroup = Tree.load(hub.cgroups_record).student(ADA)
    before = cgroup.oom_kills()
    # Three processes of 600 MiB on a 1 GiB student. Each says it is the one to stop first (oom_score_adj 1000), so
    # that the kernel that started them, smaller, is not the one stopped: the test reads on in it.
    codes = ada.answer(textwrap.dedent('''
        import subprocess, sys
        hog = ("open('/proc/self/oom_score_adj', 'w').write('1000'); import time; "
               "x = bytearray(600 * 2**20); time.sleep(5)")
        hogs = [subprocess.Popen([sys.executable, "-c", hog]) for _ in range(3)]
        print(json.dumps([each.wait(timeout=600) for each in hogs]))
    '''), timeout=660)
    assert -9 in codes, codes
    assert cgroup.oom_kills() > before, "four 450 MiB processes on a 1 GiB student: none was stopped"
    assert bob.run("print(sum(range(10)))").strip() == "45"
    assert ada.run("print('still here')").strip() == "still here"


def test_a_student_cannot_start_more_processes_than_their_limit(hub, ada, bob):
    seen = ada.answer(textwrap.dedent('''
        import subprocess
        started, refused = [], None
        try:
            for _ in range(400):
                started.append(subprocess.Popen(["sleep", "60"]))
        except OSError as error:
            refused = type(error).__name__
        for each in started:
            each.kill()
            each.wait()
        print(json.dumps({"started": len(started), "refused": refused}))
    '''))
    assert seen["refused"] == "BlockingIOError" and seen["started"] < PROCESSES, seen
    assert bob.answer('import subprocess\nprint(json.dumps(subprocess.run(["true"]).returncode))') == 0


def cpu_stat(cgroup) -> dict[str, int]:
    """The kernel's account of the cgroup's CPU bandwidth (cpu.stat, v1 and v2 alike): `nr_periods`, the periods in
    which it metered the cgroup's processes against a quota (none without one), and `nr_throttled`, the periods in
    which it held them back at the quota."""
    return {key: int(value) for key, value in (line.split()[:2] for line in cgroup.read("cpu", "cpu.stat").splitlines()
                                               if line.strip())}


SPINNERS = 3  # more busy processes than her one core: she asks for more than her cap
SPUN_S, WATCHED_S = 6, 5  # how long each spins; how long the machine's idle time is read while all three spin


def test_each_student_has_the_same_cpu_weight_and_at_most_their_cores(hub, ada, bob):
    """The cap as the kernel enforces it: her cgroup's quota is one core a period, the kernel meters her busy processes
    against it and lets them use no more, and holds them back whenever the machine would give them more. On a machine
    too busy to give her even one core she is never held back, and that is no failure: the machine was not idle."""
    tree = Tree.load(hub.cgroups_record)
    for name in (ADA, BOB):
        cgroup = tree.student(name)
        if tree.version == 2:
            assert cgroup.read("cpu", "cpu.weight").strip() == "100"
            assert cgroup.read("cpu", "cpu.max").split() == ["100000", "100000"]
        else:
            assert cgroup.read("cpu", "cpu.shares").strip() == "1024"
            assert cgroup.read("cpu", "cpu.cfs_quota_us").strip() == "100000"
            assert cgroup.read("cpu", "cpu.cfs_period_us").strip() == "100000"
    quota_s = 0.1  # CPU-seconds a period: one core of a 100 ms period
    before = cpu_stat(tree.student(ADA))
    used = ada.answer(textwrap.dedent(f'''
        import multiprocessing, resource, time
        def spin():
            end = time.time() + {SPUN_S}
            while time.time() < end:
                pass
        def idle_cpu_s():  # every core's idle time so far (the machine's, /proc/stat)
            fields = open("/proc/stat").readline().split()
            return (int(fields[4]) + int(fields[5])) / os.sysconf("SC_CLK_TCK")
        def children_cpu_s():  # of the children this kernel has waited for so far (earlier cells' too)
            children = resource.getrusage(resource.RUSAGE_CHILDREN)
            return children.ru_utime + children.ru_stime
        earlier = children_cpu_s()
        spinners = [multiprocessing.Process(target=spin) for _ in range({SPINNERS})]
        for each in spinners:
            each.start()
        time.sleep(0.5)
        idle = idle_cpu_s()
        time.sleep({WATCHED_S})
        idle = idle_cpu_s() - idle
        for each in spinners:
            each.join()
        print(json.dumps({{"cpu": children_cpu_s() - earlier, "idle": idle}}))
    '''))
    after = cpu_stat(tree.student(ADA))
    periods, held = (after[key] - before[key] for key in ("nr_periods", "nr_throttled"))
    seen = f"{used}, {periods} periods metered, held back in {held}"
    print("cpu cap", seen)
    # The kernel meters her against a quota (it counts no period for a cgroup without one) and keeps her spinners
    # within it: one quota a period, and one more for the period the kernel had not begun counting as they started,
    # and a tolerance of 10 ms a core (what the scheduler's tick can run past the quota before it holds them back).
    assert periods > 0, f"the kernel meters no CPU quota for her: {seen}"
    tolerance_s = quota_s + 0.01 * os.cpu_count()
    assert used["cpu"] <= quota_s * periods + tolerance_s, f"her busy processes used more than her quota: {seen}"
    # She asked for three cores: where the machine had a core idle meanwhile, the quota is what kept her from it.
    # Never held back is right only on a machine that left no core idle (a quarter of a core over the whole time).
    assert held > 0 or used["idle"] < 0.25 * WATCHED_S, f"the machine had cores idle and did not hold her: {seen}"


def test_a_full_home_tmp_or_shm_refuses_only_that_student(hub, ada, bob):
    writes = {place: 'os.path.expanduser("~/big")' if place == "home" else f'"{place}/big"'
              for place in ("home", "/tmp", "/dev/shm")}
    for place, path in writes.items():
        limit = HOME_MB if place == "home" else TMP_MB
        seen = ada.answer(textwrap.dedent(f'''
            chunk, written, error = b"x" * 2**20, 0, None
            try:
                with open({path}, "wb") as f:
                    for _ in range({limit * 2}):
                        f.write(chunk)
                        f.flush()
                        written += 1
                    os.fsync(f.fileno())
            except OSError as e:
                error = e.strerror
            finally:
                os.remove({path})
            print(json.dumps({{"written": written, "error": error}}))
        '''))
        assert seen["error"] == "No space left on device" and seen["written"] <= limit, (place, seen)
    assert bob.answer('open(os.path.expanduser("~/small"), "w").write("fine")\n'
                      'print(json.dumps(open(os.path.expanduser("~/small")).read()))') == "fine"


def test_tmp_and_shm_are_each_students_own(ada, bob):
    ada.run('open("/tmp/answers.txt", "w").write("ada")\nopen("/dev/shm/answers", "w").write("ada")')
    seen = bob.answer('print(json.dumps([read("/tmp/answers.txt"), read("/dev/shm/answers"), '
                      'sorted(os.listdir("/tmp")), sorted(os.listdir("/dev/shm"))]))')
    assert seen[:2] == ["FileNotFoundError", "FileNotFoundError"], seen
    assert "answers.txt" not in seen[2] and "answers" not in seen[3], seen
    assert ada.answer('print(json.dumps(open("/tmp/answers.txt").read()))') == "ada"  # the positive control


def test_a_student_sees_only_their_own_processes(hub, ada, bob):
    ada_pids = set(Tree.load(hub.cgroups_record).student(ADA).pids())
    assert ada_pids, "Ada runs no process: the check below would prove nothing"
    seen = bob.answer('print(json.dumps({"pids": [int(p) for p in os.listdir("/proc") if p.isdigit()], '
                      '"uids": sorted({os.stat(f"/proc/{p}").st_uid for p in os.listdir("/proc") if p.isdigit()}), '
                      '"me": os.getuid()}))')
    assert seen["uids"] == [seen["me"]], seen
    assert not ada_pids & set(seen["pids"]), "Bob sees Ada's processes"


def test_no_checkout_of_the_course_on_the_machine_is_in_a_students_view(hub, bob):
    from autograder.paths import ROOT
    secret = OTHER_CHECKOUT / "autograder" / "authoring" / "reference" / "masking.py"
    assert secret.exists() and secret.stat().st_mode & 0o004, "the other checkout should be readable to all"
    seen = bob.answer(f'print(json.dumps([read("{secret}"), listing("{OTHER_CHECKOUT}"), listing("/srv"), '
                      f'listing("{ROOT}"), listing("/home"), listing("/root")]))')
    assert seen[0] in ("FileNotFoundError", "PermissionError"), seen
    assert seen[1] in ("FileNotFoundError", "PermissionError") and seen[2] in ("FileNotFoundError",), seen
    found = bob.answer(textwrap.dedent('''
        import subprocess
        # every file Bob can see, but the kernel's /proc and /sys: no instructor's package, no reference solution
        search = ["find", "/", "(", "-path", "/proc", "-o", "-path", "/sys", ")", "-prune", "-o",
                  "(", "-name", "autograder", "-o", "-path", "*/reference/masking.py", ")", "-print"]
        print(json.dumps(subprocess.run(search, capture_output=True, text=True).stdout))
    '''))
    assert found == "", f"a reference solution in Bob's view: {found}"
