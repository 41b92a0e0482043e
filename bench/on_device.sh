#!/usr/bin/env bash
# Issue 16's tests and measurements on a GPU device machine, in phases that each fit one device call (10 minutes).
# Read bench/GPU.md first: it says how to carry the wheels and in which order to call the phases.
#
# Usage, on the device machine, from the repository root, with .whl/ carried:
#   bash bench/on_device.sh PHASE [PHASE ...]
#     setup              make the carried wheels and this repository importable (every other phase runs it first)
#     checks             the device mutants, the visible checks and hidden tests on CPU and CUDA, the training and
#                        bench tests (pytest -n $WORKERS, 14 unless set)
#     benches            reversal to 99% on CUDA (GPU and CPU settings) and on 2 CPU threads of the same machine,
#                        its profile on both, attention speed on CUDA
#     shakespeare-start  notebook 07's GPU configuration for 10 minutes, in the background (checkpoints 1 2 5 10)
#     shakespeare-wait   wait for it (at most WAIT_SECONDS, 480 unless set) and keep its log
#     demo               python -m autograder demo, timed
#     suite              the whole test suite (pytest -n 8 --dist loadfile)
#     fifteen            all of issue 32 that fits 15 minutes of device time, in one call of at most 600 s: the
#                        benches alone, then notebook 07's GPU configuration for MINUTES (6 unless set) in the
#                        background while the checks (pytest -n 10) and the demo class share the CPU cores
#     background         all of issue 42 in a process of its own that outlives the call (bench/GPU.md): notebook 07
#                        run in full as a self-learner runs it, on the GPU; meanwhile the demo class graded with
#                        CUDA, then again with CUDA hidden (CUDA_VISIBLE_DEVICES=), the device mutants' messages,
#                        then the device checks (pytest -n $WORKERS)
#     collect            wait for `background` (at most WAIT_SECONDS) and bring back what it has written so far
#     demo-devices       issue 53: the demo class graded with the GPU, then with it hidden, on the same cores
#                        (bench/demo_devices.py), and the autograded notebooks of the last run packed for reading
# Each phase writes its log to $OUT (the device tool's folder that comes back), or ./device-results elsewhere.
set -uo pipefail
PYTHON=${PYTHON:-python3}
RESULTS=${OUT:-$PWD/device-results}
SITE=/tmp/site
WAIT_SECONDS=${WAIT_SECONDS:-480}  # how long `shakespeare-wait` waits in one call (a call may run 600 s)
MINUTES=${MINUTES:-6}  # the last checkpoint of `fifteen`'s notebook 07 run
WORKERS=${WORKERS:-14}  # pytest-xdist workers for `checks` (the device machine has 16 cores)
mkdir -p "$RESULTS"
export PYTHONUNBUFFERED=1 PATH="$SITE/bin:$PATH"

setup() {
    [ -f "$SITE/.installed" ] && return 0
    ls .whl/*.whl >/dev/null 2>&1 || { echo "no wheels in .whl/: make them with bench/device_wheels.py (bench/GPU.md)"; exit 2; }
    $PYTHON -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" .whl/*.whl || exit 2
    # A .pth file, not PYTHONPATH: the tests start subprocesses with an environment of their own.
    local site_packages
    site_packages=$($PYTHON -c 'import site; print(site.getsitepackages()[0])')
    printf '%s\n%s\n' "$SITE" "$PWD" > "$site_packages/transformers_course_device.pth"
    touch "$SITE/.installed"
    $PYTHON -c 'import torch, nbgrader, course; print("torch", torch.__version__, "| CUDA:", torch.cuda.is_available() and torch.cuda.get_device_name(0), "| nbgrader", nbgrader.__version__)'
}

log() { tee "$RESULTS/$1.log"; }

BACKGROUND=/tmp/background  # what `background` writes; `collect` packs it into $RESULTS

device_mutant_messages() {
    # The check's and the hidden test's failure for every NEEDS_SECOND_DEVICE mutant: each should lose, and say why.
    $PYTHON - <<'PY'
import importlib
from tests.exercises import MUTANT_MODULES
from tests.verdicts import table, verdict
found = []
for module in MUTANT_MODULES:
    listing = importlib.import_module(f"tests.mutants.{module}")
    device_only = getattr(listing, "NEEDS_SECOND_DEVICE", set())
    found += [verdict(module, exercise, "mutant", impl) for exercise, impl in listing.MUTANTS if impl in device_only]
print(table(found, everything=True))
print(sum(v.check is not None and v.hidden is not None for v in found), "of", len(found), "lose in both")
PY
}

demo_on() {  # $1: cuda or cpu. Grades the demo class, keeps its table and says on what its kernels ran.
    { time $PYTHON -m autograder demo --jobs "$WORKERS"; } > "$BACKGROUND/demo-$1.log" 2>&1
    cp reports/demo_scores.csv "$BACKGROUND/demo_scores-$1.csv"
    echo "autograded notebooks whose set-up cell reported a GPU: $(grep -l 'GPU (' autograded/*/*/*.ipynb | wc -l)" \
        "of $(ls autograded/*/*/*.ipynb | wc -l)" >> "$BACKGROUND/demo-$1.log"
}

background_work() {
    mkdir -p "$BACKGROUND"
    $PYTHON bench/run_notebook.py source/07_shakespeare/07_shakespeare.ipynb \
        --out "$BACKGROUND/07_shakespeare_gpu.ipynb" > "$BACKGROUND/notebook07.log" 2>&1 &
    demo_on cuda
    CUDA_VISIBLE_DEVICES= demo_on cpu
    device_mutant_messages > "$BACKGROUND/device_mutants.md" 2>&1
    $PYTHON -m pytest -v -n "$WORKERS" -rs -p no:cacheprovider tests/test_mutants.py tests/test_verify.py \
        tests/test_training.py tests/test_bench.py tests/test_crash_messages.py > "$BACKGROUND/checks.log" 2>&1
    wait
    touch "$BACKGROUND/done"
}

checks() {
    $PYTHON -m pytest -q -n "$WORKERS" -rs tests/test_mutants.py tests/test_verify.py tests/test_training.py \
        tests/test_bench.py tests/test_crash_messages.py 2>&1 | log checks
}

benches() {
    { $PYTHON bench/reversal.py --device cuda
      $PYTHON bench/reversal.py --device cuda --config cpu  # batch 64 on the GPU: is a step launch-bound?
      $PYTHON bench/reversal.py --device cpu --threads 2
      $PYTHON bench/reversal_profile.py --device cuda
      $PYTHON bench/reversal_profile.py --device cpu --threads 2
      $PYTHON bench/attention_speed.py --device cuda; } 2>&1 | grep -v "training:" | log benches
}

for phase in "$@"; do
    setup
    case "$phase" in
        setup) ;;
        checks) checks ;;
        benches) benches ;;
        fifteen)
            benches
            $PYTHON bench/shakespeare.py --device cuda --minutes 1 2 5 "$MINUTES" 2>&1 | grep --line-buffered -v \
                "training:" > "$RESULTS/shakespeare.log" &
            WORKERS=10 checks
            { time $PYTHON -m autograder demo; } 2>&1 | log demo
            wait ;;
        shakespeare-start)
            setsid nohup $PYTHON bench/shakespeare.py --device cuda --minutes 1 2 5 10 > /tmp/shakespeare.log 2>&1 &
            sleep 60; tail -5 /tmp/shakespeare.log ;;
        shakespeare-wait)
            waited=0
            until grep -q "^perplexity" /tmp/shakespeare.log || [ "$waited" -ge "$WAIT_SECONDS" ]; do
                sleep 10; waited=$((waited + 10))
            done
            grep -v "training:" /tmp/shakespeare.log | log shakespeare ;;
        background)
            setsid nohup bash bench/on_device.sh background-work > /tmp/background.log 2>&1 < /dev/null &
            sleep 5; cat /tmp/background.log ;;
        background-work) background_work ;;
        collect)
            waited=0
            until [ -f "$BACKGROUND/done" ] || [ "$waited" -ge "$WAIT_SECONDS" ]; do sleep 5; waited=$((waited + 5)); done
            tail -n 3 "$BACKGROUND"/*.log
            grep -c -E "(PASSED|FAILED|SKIPPED|ERROR) " "$BACKGROUND/checks.log" 2>/dev/null
            tar -czf "$RESULTS/background.tar.gz" -C "$BACKGROUND" . ;;
        demo)
            { time $PYTHON -m autograder demo; } 2>&1 | log demo ;;
        demo-devices)
            # A grading job's kernel is forked from a server that imported these: CUDA must still be unused there.
            $PYTHON -c 'import torch, torch._dynamo, matplotlib.pyplot, ipykernel.kernelapp
print("CUDA initialised by the grading server'"'"'s imports:", torch.cuda.is_initialized())'
            $PYTHON bench/demo_devices.py --jobs "$WORKERS" --out "$RESULTS" | tee "$RESULTS/demo_devices.md"
            tar -czf "$RESULTS/autograded.tar.gz" autograded reports ;;
        suite)
            $PYTHON -m pytest -q -n 8 --dist loadfile -rs tests 2>&1 | log suite ;;
        *) echo "unknown phase: $phase (see the top of bench/on_device.sh)"; exit 2 ;;
    esac
done
