"""What holds on one CPU holds on every CPU (issue 38; the spec's 4.8).

PyTorch picks its CPU kernels by instruction set, so a weight trained on an Intel machine is not the one trained on
an AMD machine, and `ATEN_CPU_CAPABILITY` shows on one machine what the others compute. The tests marked `every_cpu`
compare such numbers with prose, fixtures or bounds. The suite runs them with this CPU's own kernels; the test below
runs them again, in a fresh process, under every other instruction set this CPU can execute, so that CI on one kind of
machine proves them on two. `ATEN_CPU_CAPABILITY=default make test` runs the whole suite as a CPU without AVX would.
"""
from __future__ import annotations

import os
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
CAPABILITIES = ("default", "avx2", "avx512")  # ATEN_CPU_CAPABILITY's values, from the plainest kernels up
NEEDS = {"default": set(), "avx2": {"avx2", "fma"}, "avx512": {"avx512f", "avx512bw", "avx512vl", "avx512dq"}}


def cpu_flags() -> set[str]:
    """The instruction-set flags Linux reports for this CPU (empty where /proc/cpuinfo does not exist)."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return set()
    return next((set(line.split(":", 1)[1].split()) for line in lines if line.startswith("flags")), set())


def marked_in(session) -> list:
    return [item for item in session.items if item.get_closest_marker("every_cpu")]


def junit_outcomes(report: Path) -> dict[str, str]:
    """'path/of/test_file.py::test_name[id]' -> 'passed', 'failed', 'error' or 'skipped', from pytest's JUnit XML."""
    outcomes = {}
    for case in ElementTree.parse(report).getroot().iter("testcase"):
        path = case.get("classname").replace(".", "/") + ".py"
        outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
        outcomes[f"{path}::{case.get('name')}"] = {"failure": "failed"}.get(outcome, outcome)
    return outcomes


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_the_every_cpu_tests_pass_under_another_instruction_set(capability, request, tmp_path):
    own = torch.backends.cpu.get_cpu_capability().lower()
    if capability == own:
        pytest.skip(f"{capability}: this process's own kernels, which the rest of the suite runs on")
    if not NEEDS[capability] <= cpu_flags():
        pytest.skip(f"{capability}: this CPU cannot execute it (it lacks {sorted(NEEDS[capability] - cpu_flags())})")
    marked = marked_in(request.session)
    files = sorted({str(item.path.relative_to(ROOT)) for item in marked}) or ["tests"]
    report = tmp_path / "every_cpu.xml"
    env = dict(os.environ, ATEN_CPU_CAPABILITY=capability, PYTHONPATH=str(ROOT))
    result = subprocess.run([sys.executable, "-m", "pytest", *files, "-m", "every_cpu", "-p", "no:cacheprovider",
                             "-p", "no:xdist", f"--junitxml={report}"],
                            cwd=ROOT, env=env, capture_output=True, text=True, timeout=1200)
    said = result.stdout[-6000:] + result.stderr[-2000:]
    assert f"torch's CPU kernels: {capability.upper()}" in result.stdout, said  # the variable took effect
    outcomes = junit_outcomes(report)
    assert result.returncode == 0 and "failed" not in outcomes.values(), said
    assert list(outcomes.values()).count("passed") >= 1, said
    missing = {item.nodeid for item in marked} - set(outcomes)
    assert not missing, f"marked every_cpu here but not run under {capability}: {sorted(missing)}"
