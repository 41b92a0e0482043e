#!/usr/bin/env bash
# Benchmark: `make test` from a fresh clone, as CI runs it, with the set-up and pytest timed apart (issue 29).
#
# Usage: bash bench/suite.sh [REVISION]     (default: HEAD of this clone); SUITE_LOG=FILE keeps make test's output
# Clones this repository into a scratch folder with ../shared beside it (as CI has it), times `make setup
# colab-runtime` (the two environments make test builds first) and then `make test`, and prints a markdown row for
# bench/README.md with pytest's own count of what passed, failed and was skipped. The scratch folder is removed.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
revision=${1:-HEAD}
scratch=$(mktemp -d)
trap 'cp "$scratch/test.log" "${SUITE_LOG:-/dev/null}" 2>/dev/null; rm -rf "$scratch"' EXIT
chmod 755 "$scratch"  # test_term's student accounts run nbgrader from the clone's .venv, as CI's clone allows
git clone -q "$here" "$scratch/course"
git -C "$scratch/course" checkout -q "$revision"
ln -s "$(cd "$here/.." && pwd)/shared" "$scratch/shared"
cd "$scratch/course"

started=$(date +%s)
make setup colab-runtime >"$scratch/setup.log" 2>&1 || { tail -30 "$scratch/setup.log"; exit 1; }
setup=$(( $(date +%s) - started ))

started=$(date +%s)
status=0
make test >"$scratch/test.log" 2>&1 || status=$?
tests=$(( $(date +%s) - started ))
summary=$(grep -E "^=+ .*(passed|failed).* in " "$scratch/test.log" | tail -1 | sed -E 's/^=+ //; s/ =+$//')
tail -25 "$scratch/test.log"

minutes() { printf "%d min %02d s" $(( $1 / 60 )) $(( $1 % 60 )); }
cpu=$(grep -m1 "model name" /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')
echo
echo "| revision | machine | set-up | make test (pytest) | fresh clone in all | pytest's summary | date |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
echo "| $(git rev-parse --short HEAD) | $cpu, $(nproc) cores | $(minutes "$setup") | $(minutes "$tests") |" \
     "$(minutes $(( setup + tests ))) | $summary | $(date +%F) |"
exit $status
