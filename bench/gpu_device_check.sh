#!/usr/bin/env bash
# Issue 8's checks that need a GPU, as one short script for a lent GPU machine.
#
#   bash bench/gpu_device_check.sh --prepare   # here, with network: wheels + conformance cases
#   bash bench/gpu_device_check.sh             # there, in the repository's root, in one call
#
# --prepare downloads the pure-Python dependencies a GPU image may lack (lark, prompt-toolkit,
# wcwidth) as wheels into .whl/ and copies ../shared/conformance into .conformance/, both
# ignored by git (.git/info/exclude), so that they can travel with the working tree (name both
# in the device tool's `carry`).  Without options, on the GPU machine, it runs in this order,
# each step bounded in time and logged to $OUT (or /tmp/goat-gpu):
#   1. the machine: nvidia-smi, Python, NumPy, CuPy and PyTorch versions;
#   2. tests/test_gpu.py and tests/test_bench_gpu.py (the CuPy-vs-NumPy tests and the chapter's
#      training within 1e-9 run there instead of skipping);
#   3. the conformance cases under `goat run --backend cupy`, and under --backend cupy --dtype f32
#      the example programs (their exit status only);
#   4. python bench/bench_gpu.py (the GPT step in goat on CuPy against PyTorch eager CUDA, and the
#      chapter's 200 steps under auto against numpy), then the device time of each kernel in
#      five steps, goat's and PyTorch's (--kernels), and a profile of goat's host time in
#      three steps (--profile).
# The limits add up to 630 s: give the call timeout_s 600; the last steps are the least needed.
# Two calls on an H200 took 100 and 110 s (2026-12-01).  Nothing is installed system-wide; the exit
# status is the number of failed steps.
set -uo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--prepare" ]; then
  set -e
  mkdir -p .git/info
  for d in /.whl/ /.conformance/; do
    grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude
  done
  rm -rf .whl .conformance
  python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 -d .whl lark prompt_toolkit wcwidth
  if [ -d ../shared/conformance ]; then cp -r ../shared/conformance .conformance; fi
  ls .whl .conformance 2>/dev/null | head -20
  echo "prepared: carry .whl and .conformance, then run: bash bench/gpu_device_check.sh"
  exit 0
fi

out=${OUT:-/tmp/goat-gpu}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/goat-site .whl/*.whl || echo "wheels did not install"
  export PYTHONPATH="$PWD:/tmp/goat-site"
else
  export PYTHONPATH="$PWD"
fi
failed=0
step() {   # step NAME SECONDS COMMAND...: run it, log it, count a failure
  local name=$1 limit=$2; shift 2
  echo "== $name ($(date +%T))" | tee -a "$out/summary.txt"
  local t0=$SECONDS
  timeout "$limit" "$@" > >(tee "$out/$name.log") 2>&1
  local rc=$?
  echo "   $name: status $rc in $((SECONDS - t0)) s" | tee -a "$out/summary.txt"
  [ $rc -eq 0 ] || failed=$((failed + 1))
}

step machine 30 bash -c 'nvidia-smi -L; python3 -c "
import sys, numpy, cupy, torch
print(sys.version.split()[0], \"numpy\", numpy.__version__, \"cupy\", cupy.__version__,
      \"torch\", torch.__version__, torch.cuda.is_available())
from goat.gpu import cupy_usable
print(\"goat cupy back end:\", cupy_usable() or \"usable\")"'

step tests 120 python3 -m pytest -q -p no:cacheprovider --tb=short -rsP tests/test_gpu.py tests/test_bench_gpu.py

cat > /tmp/goat-cupy <<'EOF'
#!/bin/sh
cmd=$1; shift; exec python3 -m goat "$cmd" --backend cupy "$@"
EOF
chmod +x /tmp/goat-cupy
if [ -d .conformance ]; then
  step conformance 120 env GOAT=/tmp/goat-cupy CASES="$PWD/.conformance" python3 .conformance/run
else
  echo "== conformance: no .conformance folder (run --prepare here and carry it)" | tee -a "$out/summary.txt"
  failed=$((failed + 1))
fi
step examples_f32 60 bash -c 'for f in examples/tour.mg examples/lm35/train.mg examples/batched_trainer.mg; do
  python3 -m goat run --backend cupy --dtype f32 "$f" > /dev/null || { echo "FAILED: $f"; exit 1; }; echo "ok: $f"; done'

step bench 150 python3 bench/bench_gpu.py
step kernels 90 python3 bench/bench_gpu.py --steps 5 --kernels /tmp/goat-kernels.txt
step profile 60 python3 bench/bench_gpu.py --steps 3 --profile /tmp/goat-profile.txt
echo "failed steps: $failed" | tee -a "$out/summary.txt"
exit "$failed"
