"""What a student's fair share of the CPU is worth on the class hub (issue 47): one student runs many busy processes,
another runs one; how much CPU does the second get?

Usage (as root, after `make setup`): .venv/bin/python bench/hub_limits.py [--seconds 20] [--busy 8]

Two rounds, side by side in one run:
- **on the hub**: a real hub (tests/hub.py's running_hub, default limits, no core cap), students bench-ada and
  bench-bob each in their own kernel; Ada starts `--busy` spinning processes and Bob one, at the same moment, for
  `--seconds`. Each student's cgroup has the same CPU weight.
- **without the hub's cgroups**: the same spinners as plain processes of this machine, side by side in one cgroup,
  where the kernel's scheduler shares the CPU per process.

Prints a markdown row per round: the CPU seconds each student's spinners got (their own rusage) and Bob's share of
the machine's cores. The machine's other work shares the cores in both rounds alike, so compare the two rows.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SPIN = textwrap.dedent('''
    import json, multiprocessing, resource, time
    def spin(seconds):
        end = time.time() + seconds
        while time.time() < end:
            pass
    def spinners(count, seconds):
        started = time.time()
        each = [multiprocessing.Process(target=spin, args=(seconds,)) for _ in range(count)]
        for process in each:
            process.start()
        for process in each:
            process.join()
        used = resource.getrusage(resource.RUSAGE_CHILDREN)
        return {"cpu": used.ru_utime + used.ru_stime, "wall": time.time() - started}
''')


def on_the_hub(busy: int, seconds: float) -> dict:
    from tests.hub import Kernel, running_hub
    with running_hub("bench", ["bench-ada", "bench-bob"], [], []) as hub:
        kernels = {name: Kernel(hub, name) for name in ("bench-ada", "bench-bob")}
        for kernel in kernels.values():
            kernel.run(SPIN)
        counts = {"bench-ada": busy, "bench-bob": 1}
        found: dict[str, dict] = {}
        start = threading.Barrier(2)

        def student(name: str) -> None:
            start.wait()
            found[name] = kernels[name].answer(f"print(json.dumps(spinners({counts[name]}, {seconds})))",
                                               timeout=seconds * 10 + 120)

        threads = [threading.Thread(target=student, args=(name,)) for name in kernels]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return {"ada": found["bench-ada"], "bob": found["bench-bob"]}


def without_cgroups(busy: int, seconds: float) -> dict:
    code = SPIN + textwrap.dedent('''
        import sys
        print(json.dumps(spinners(int(sys.argv[1]), float(sys.argv[2]))))
    ''')
    runs = {name: subprocess.Popen([sys.executable, "-c", code, str(count), str(seconds)], stdout=subprocess.PIPE,
                                   text=True) for name, count in (("ada", busy), ("bob", 1))}
    return {name: json.loads(run.communicate()[0]) for name, run in runs.items()}


def row(label: str, result: dict, busy: int) -> str:
    cores = os.cpu_count()
    bob_share = result["bob"]["cpu"] / result["bob"]["wall"]
    return (f"| {label} | {busy} | {result['ada']['cpu']:.1f} s | {result['bob']['cpu']:.1f} s "
            f"| {bob_share:.2f} of {cores} cores | {os.getloadavg()[0]:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--busy", type=int, default=8)
    args = parser.parse_args()
    hub = on_the_hub(args.busy, args.seconds)
    plain = without_cgroups(args.busy, args.seconds)
    print(f"| round | Ada's busy processes | Ada's CPU | Bob's CPU (1 process) | Bob's share | load after |")
    print("|---|---|---|---|---|---|")
    print(row("on the hub (a cgroup each, equal weight)", hub, args.busy))
    print(row("without the hub's cgroups", plain, args.busy))


if __name__ == "__main__":
    main()
