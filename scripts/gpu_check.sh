#!/usr/bin/env bash
# One-shot GPU check: run from the repo root on a fresh GPU machine, e.g.
#     OUT=/tmp/out bash scripts/gpu_check.sh
# Writes everything under $OUT (default ./gpu_check_out): env.txt, ci_cuda.log (tests + bench),
# gpu_report.txt (the bench figures), launch_profile.txt (host time per small op), summary.txt.
# Ends within ~8 minutes.
#
# Environment: if `pip install '.[cuda,test]'` works (network) it uses a fresh venv with
# numba-cuda[cu12|cu13] chosen from the driver's CUDA version; otherwise (offline images that
# already hold numba, numba-cuda, pytest, hypothesis) it uses the system python3 with the repo on
# PYTHONPATH.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/gpu_check_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
unset NUMBA_ENABLE_CUDASIM
# generated kernels and numba's cache in a fresh place (no stale cache from another version)
export JIT_KERNELS_CACHE_DIR=${JIT_KERNELS_CACHE_DIR:-/tmp/jk_cache_gpu}
start=$(date +%s)

{
    echo "== date"; date -u
    echo "== nvidia-smi"; nvidia-smi || true
    echo "== python"; command -v python3; python3 -V
    python3 -m pip list 2>/dev/null | grep -i -E "^(numba|numba-cuda|numpy|llvmlite|cuda|nvidia-cuda|torch |cupy|pytest|hypothesis)" || true
} > "$OUT/env.txt" 2>&1

cuda_major=$(nvidia-smi 2>/dev/null | sed -n 's/.*CUDA Version: *\([0-9]*\).*/\1/p' | head -1)
extra=cu13
if [ -n "$cuda_major" ] && [ "$cuda_major" -lt 13 ]; then extra=cu12; fi
echo "driver CUDA major: ${cuda_major:-?} -> numba-cuda[$extra]" >> "$OUT/env.txt"

PY=""
if timeout 60 bash -c "python3 -m venv /tmp/venv-gpu-check && /tmp/venv-gpu-check/bin/pip install -q --retries 0 --timeout 10 '.[cuda,test]' 'numba-cuda[$extra]'" >> "$OUT/env.txt" 2>&1; then
    PY=/tmp/venv-gpu-check/bin/python
    echo "using fresh venv with pip-installed deps" >> "$OUT/env.txt"
else
    PY=$(command -v python3)
    echo "pip install failed (offline?): using system $PY with PYTHONPATH=$PWD" >> "$OUT/env.txt"
fi
"$PY" -c "import numba, numpy; from numba import cuda; print('numba', numba.__version__, 'numpy', numpy.__version__, 'cuda available', cuda.is_available()); cuda.detect()" >> "$OUT/env.txt" 2>&1

# 1) the GPU figures first (bounded), 2) the suite through .ci/cuda (bounded; bench skipped there)
PYTHONPATH="$PWD" timeout 170 "$PY" -m bench.cuda_cases > "$OUT/gpu_report.txt" 2>&1
echo "bench exit status: $?" >> "$OUT/gpu_report.txt"
PYTHONPATH="$PWD" timeout 60 "$PY" -m bench.cuda_cases --profile > "$OUT/launch_profile.txt" 2>&1
left=$(( 460 - ($(date +%s) - start) ))
RT_CUDA_PYTHON="$PY" RT_CUDA_SKIP_BENCH=1 RT_CUDA_PYTEST_ARGS="-rs --durations=15" \
    timeout $(( left > 60 ? left : 60 )) .ci/cuda > "$OUT/ci_cuda.log" 2>&1
ci_status=$?

{
    echo "ci_cuda exit status: $ci_status (124 = timed out)"
    grep -E "passed|failed|error" "$OUT/ci_cuda.log" | tail -3
    echo "elapsed: $(( $(date +%s) - start )) s"
} > "$OUT/summary.txt"
cat "$OUT/summary.txt"
cat "$OUT/gpu_report.txt"
exit 0
