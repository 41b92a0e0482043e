"""The warm kernel (autograder.grading.warm_kernel): a forked kernel is an ordinary ipykernel that behaves as a cold one
would in grading: the job's environment, folder and math threads, the guard on, its own session, the job's child;
a second kernel, or a kernel of another command, starts cold; an unclaimed copy leaves when discarded."""
from __future__ import annotations

import json
import os
import site
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import psutil

import autograder
from autograder.grading.guard.policy import policy_for
from autograder.nbgrader_run import environment
from autograder.paths import ROOT

# Runs in a fresh process, as a grading job does: fork the waiting copy first, while one thread runs.
SCRIPT = textwrap.dedent('''
    import asyncio, importlib, json, multiprocessing, os, sys
    from autograder.grading import warm_kernel
    for module in warm_kernel.PRELOAD:  # imported before the fork, as the grading server imports them
        importlib.import_module(module)
    multiprocessing.set_start_method("forkserver")  # as in a grading job, a forkserver's child
    warm_kernel.fork_waiting_kernel()
    waiting_pid = warm_kernel._waiting.pid
    from jupyter_client.manager import AsyncKernelManager

    FACTS = """
    import inspect, json, multiprocessing, os, sys, traceback, torch
    pyplot_ready = "matplotlib.pyplot" in sys.modules
    import matplotlib.pyplot as plt
    plt.figure()
    plt.plot([0, 1])  # the inline backend shows it when the cell ends
    inspect.stack(), traceback.format_stack()  # the source of every frame down to the kernel's start
    facts = {"pid": os.getpid(), "ppid": os.getppid(), "pgid": os.getpgid(0), "cwd": os.getcwd(),
             "threads": torch.get_num_threads(), "marker": os.environ.get("WARM_TEST_MARKER"),
             "guard": "COURSE_GRADING_GUARD" in os.environ, "path0": sys.path[:3],
             "path": [p for p in sys.path if p not in ("", os.getcwd())],
             "optimizers_ready": "torch._dynamo" in sys.modules,  # what a process's first optimizer imports
             "pyplot_ready": pyplot_ready, "backend": plt.get_backend(),
             "multiprocessing": [multiprocessing.get_start_method(), multiprocessing.current_process().name,
                                 multiprocessing.parent_process() is None]}
    try:
        open(os.environ["FORBIDDEN"]).read()
        facts["forbidden"] = "read"
    except PermissionError as error:
        facts["forbidden"] = str(error)
    print("FACTS" + json.dumps(facts))
    """

    async def facts(cwd):
        km = AsyncKernelManager(kernel_name="python3", shutdown_wait_time=5)
        await km.start_kernel(cwd=cwd, env=dict(os.environ, WARM_TEST_MARKER="from the job"))
        kc = km.client()
        kc.start_channels()
        await kc.wait_for_ready(timeout=60)
        reply = {"figures": 0}
        def output(message):
            if message["msg_type"] == "stream" and "FACTS" in message["content"]["text"]:
                reply.update(json.loads(message["content"]["text"].split("FACTS", 1)[1]))
            if message["msg_type"] == "display_data" and "image/png" in message["content"]["data"]:
                reply["figures"] += 1
        await kc.execute_interactive(FACTS, output_hook=output, timeout=60)
        kc.stop_channels()
        await km.shutdown_kernel(now=True)
        return reply

    async def main():
        first = await facts(sys.argv[1])
        second = await facts(sys.argv[1])
        print("RESULT" + json.dumps({"job": os.getpid(), "waiting": waiting_pid, "first": first, "second": second}))

    asyncio.run(main())
''')


def _run(tmp_path: Path, guard: dict | None, python: str = sys.executable) -> dict:
    env = environment(threads=1, guard=guard)
    env["FORBIDDEN"] = str(tmp_path / "gradebook.db")
    result = subprocess.run([python, "-c", SCRIPT, str(tmp_path)], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.split("RESULT", 1)[1])


def test_the_forked_kernel_is_the_jobs_own_child_with_its_environment_folder_threads_and_guard(tmp_path):
    (tmp_path / "gradebook.db").write_text("the grader's")
    records = tmp_path / "records"
    records.mkdir()
    guard = policy_for(tmp_path, Path(autograder.__file__).parent, "01_positional_encoding", "alice", records, [])
    found = _run(tmp_path, guard)
    first, second = found["first"], found["second"]
    assert first["pid"] == found["waiting"], "the first kernel is the copy forked before nbgrader started"
    assert first["ppid"] == found["job"], "it is the job's own child, inside the job's sandbox"
    assert first["pgid"] == first["pid"], "its own session and process group, as jupyter_client starts a kernel"
    assert Path(first["cwd"]) == tmp_path
    assert first["threads"] == 1 and first["marker"] == "from the job" and first["guard"]
    assert first["optimizers_ready"] and not second["optimizers_ready"], \
        "the forked kernel makes its first optimizer without importing torch._dynamo (1.2 s); a cold one must"
    assert first["pyplot_ready"] and not second["pyplot_ready"], "the forked kernel has pyplot imported (about 1 s)"
    assert first["backend"] == second["backend"] == "module://matplotlib_inline.backend_inline"
    assert first["figures"] == second["figures"] == 1, "a cell's figure is shown inline when it ends, warm or cold"
    assert first["multiprocessing"] == second["multiprocessing"] == ["fork", "MainProcess", True], \
        "to multiprocessing, the main process of a fresh Python, as a cold kernel is"
    assert "may not read the grader's files" in first["forbidden"]
    assert first["path"] == second["path"], "the forked kernel imports from where a cold one would"
    assert second["pid"] != found["waiting"], "a second kernel starts cold"
    assert second["ppid"] == found["job"] and second["threads"] == 1 and second["marker"] == "from the job"
    assert "may not read the grader's files" in second["forbidden"], "the cold one gets the guard from sitecustomize"
    blocked = [json.loads(line)["detail"] for line in (records / "violations.jsonl").read_text().splitlines()]
    assert blocked == [str(tmp_path / "gradebook.db")] * 2, "reading its own stack's source is no violation"


def test_without_a_guard_the_forked_kernel_reads_freely(tmp_path):
    (tmp_path / "gradebook.db").write_text("anyone's")
    found = _run(tmp_path, None)
    assert found["first"]["pid"] == found["waiting"]
    assert found["first"]["forbidden"] == "read" and not found["first"]["guard"]


def test_an_unclaimed_copy_leaves_when_discarded():
    script = textwrap.dedent('''
        import os, psutil
        from autograder.grading import warm_kernel
        warm_kernel.fork_waiting_kernel()
        pid = warm_kernel._waiting.pid
        assert psutil.pid_exists(pid)
        warm_kernel.discard()
        assert not psutil.pid_exists(pid) and not psutil.Process().children()
        print("gone")
    ''')
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environment(), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "gone", result.stderr[-2000:]


def test_where_the_fork_is_refused_the_kernel_starts_cold():
    script = textwrap.dedent('''
        import os
        from autograder.grading import warm_kernel
        def refuse():
            raise BlockingIOError(11, "Resource temporarily unavailable")
        os.fork = refuse
        warm_kernel.fork_waiting_kernel()
        assert warm_kernel._claim() is None
        print("cold")
    ''')
    result = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=environment(), capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.strip() == "cold", result.stderr[-2000:]
    assert "the kernel starts cold" in result.stderr


def test_the_kernel_dies_with_a_job_killed_outright():
    """A grading run's process group killed with SIGKILL: the job cleans up nothing, and its kernel, in a session of
    its own, is outside that group. It must end with the job all the same (before, it waited forever)."""
    script = textwrap.dedent('''
        import asyncio, multiprocessing, os, time
        from autograder.grading import warm_kernel
        multiprocessing.set_start_method("forkserver")
        warm_kernel.fork_waiting_kernel()
        from jupyter_client.manager import AsyncKernelManager

        async def main():
            km = AsyncKernelManager(kernel_name="python3")
            await km.start_kernel()
            kc = km.client()
            kc.start_channels()
            await kc.wait_for_ready(timeout=60)
            print("KERNEL", km.provisioner.pid, flush=True)
            time.sleep(600)

        asyncio.run(main())
    ''')
    job = subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, env=environment(), stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    try:
        line = ""
        while not line.startswith("KERNEL") and job.poll() is None:
            line = job.stdout.readline()  # the kernel writes here too
        assert line.startswith("KERNEL"), job.stderr.read()[-3000:]
        kernel = psutil.Process(int(line.split()[1]))
        assert kernel.ppid() == job.pid and os.getsid(kernel.pid) == kernel.pid
        job.kill()
        job.wait()
        kernel.wait(timeout=30)  # psutil.TimeoutExpired if it outlives the job
    finally:
        job.kill()


def test_a_kernel_starts_where_the_packages_come_through_a_pth_file(tmp_path):
    """A Python whose packages lie outside its own prefix, listed in a .pth file (the GPU machine's `pip install
    --target`, an editable install, the user's site-packages): the forked kernel finds them as a cold one does.
    It once kept only the folders under the prefix, and every graded kernel died as it started."""
    bare = tmp_path / "venv"
    venv.create(bare, with_pip=False)
    (site_packages,) = bare.glob("lib/python*/site-packages")
    (site_packages / "elsewhere.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    (tmp_path / "gradebook.db").write_text("anyone's")
    found = _run(tmp_path, None, python=str(bare / "bin" / "python"))
    assert found["first"]["pid"] == found["waiting"]
    assert set(site.getsitepackages()) <= set(found["first"]["path"])
    assert found["first"]["path"] == found["second"]["path"]
