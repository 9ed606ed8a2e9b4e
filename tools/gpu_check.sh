#!/usr/bin/env bash
# The whole real-GPU check of tvmffi's CUDA support, in one call, in a few
# minutes, on a machine with an NVIDIA GPU (the device machines: run as root,
# no network). Prepare the wheels here first (tools/gpu_wheels.sh -> .whl/,
# carried with the working tree), then on the GPU machine:
#
#     bash tools/gpu_check.sh            # (device tool: carry [".whl"])
#
# Steps, each a row of the summary at the end:
#   install   tvmffi, apache-tvm-ffi and test dependencies from .whl/ (or
#             tvmffi built from this tree) unless `import tvmffi_cli` works
#   pack      fixtures/cuda/pack.cu built with nvcc against the official headers
#   device    tvmffi finds a CUDA device; without one: its one line, exit 2
#   flags     the first CUDA call with default sandbox settings; if CUDA cannot
#             start, the rest retry with --memory-limit 64G, then --no-sandbox
#             (the summary says which applied)
#   compare   tools/gpu_compare.py: official Python + PyTorch vs `tvmffi call`
#   conform   the planted GPU bugs caught, the good kernels passing, s/function
#   memcheck  conform --sanitizer memcheck (compute-sanitizer) on the pack
#   bench     bench/bench_gpu.py: tvmffi bench vs a hand-written CUDA-event loop
#   sandbox   tools/gpu_sandbox_table.py: root/nobody x namespaces/none
#   pytest    pytest -m gpu tests/test_gpu_device.py
# Exit 0 when every step passed, 1 when one failed, 2 without a CUDA device.
# Everything printed is also in $OUT/gpu_check.log when OUT is set.
set -u -o pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
PY=${PYTHON:-python3}
WORK=$(mktemp -d /tmp/tvmffi-gpu-check-XXXXXX)
chmod 755 "$WORK"
trap 'rm -rf "$WORK"' EXIT
LOG=${OUT:+$OUT/gpu_check.log}
if [ -n "$LOG" ]; then exec > >(tee "$LOG") 2>&1; fi
export PYTHONUNBUFFERED=1
declare -a ROWS=()
FAILED=0
row() { ROWS+=("| $1 | $2 | $3 |"); [ "$2" = ok ] || [ "$2" = skip ] || FAILED=1; }
hr() { echo; echo "=== $* ==="; }
tvmffi() { "$PY" -m tvmffi_cli "$@"; }

hr "machine"
nvidia-smi -L 2>/dev/null || echo "(no nvidia-smi)"
nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total --format=csv,noheader 2>/dev/null
"$PY" --version; command -v nvcc >/dev/null && nvcc --version | tail -1; id -un

hr "install"
if "$PY" -c 'import tvmffi_cli, tvm_ffi' 2>/dev/null; then
  row install ok "already importable: $("$PY" -c 'import tvmffi_cli, os; print(os.path.dirname(tvmffi_cli.__file__))')"
else
  # Into the interpreter's own site-packages (the machine is disposable): the
  # sandboxed worker runs `python -I`, which would not see a PYTHONPATH.
  wheels=(.whl/*.whl)
  ok=1
  if [ -e "${wheels[0]}" ]; then
    "$PY" -m pip install -q --no-index --no-deps --no-cache-dir --upgrade "${wheels[@]}" || ok=0
  else
    echo "no .whl/ (run tools/gpu_wheels.sh where there is network and carry .whl)"; ok=0
  fi
  if ! "$PY" -c 'import tvmffi_cli' 2>/dev/null; then
    echo "no tvmffi wheel: building tvmffi from the tree"
    "$PY" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir . || ok=0
  fi
  if [ $ok = 1 ] && "$PY" -c 'import tvmffi_cli, tvm_ffi'; then row install ok "from .whl/"
  else row install FAIL "see the log"; fi
fi

hr "pack (nvcc, official headers)"
PACK="$WORK/pack.so"
if "$PY" - "$WORK" <<'EOF'
import sys
sys.path.insert(0, "tests")
import gpu_pack
print(gpu_pack.build(sys.argv[1]))
EOF
then row pack ok "$("$PY" -m tvmffi_cli inspect "$PACK" --static --json 2>/dev/null | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(len(d.get("functions", [])), "functions")' 2>/dev/null)"
else row pack FAIL "nvcc failed"; PACK=""; fi

hr "device"
WHY=$("$PY" -c 'import sys; sys.path.insert(0, "tests"); import gpu_pack; print(gpu_pack.no_device() or "")')
if [ -n "$WHY" ]; then
  echo "tvmffi: error: $WHY"
  for r in "${ROWS[@]}"; do echo "$r"; done
  echo "gpu_check: no CUDA device here: $WHY"
  exit 2
fi
row device ok "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"
[ -n "$PACK" ] || { echo "no pack: nothing to check"; exit 1; }

hr "flags: the first CUDA call"
FLAGS=()
for try in "" "--memory-limit 64G" "--memory-limit 64G --no-sandbox"; do
  read -r -a FLAGS <<<"$try"
  echo "\$ tvmffi call pack.so add_one float32[4]@cuda float32[4]@cuda ${FLAGS[*]}"
  if out=$(tvmffi call "$PACK" add_one 'float32[4]:arange@cuda' 'float32[4]@cuda' "${FLAGS[@]}" 2>&1); then
    echo "$out"; break
  fi
  echo "$out"
  FLAGS=(__none__)
done
if [ "${FLAGS[*]-}" = "__none__" ]; then
  row flags FAIL "no CUDA call worked, even with --no-sandbox"; FLAGS=()
else
  row flags "$([ ${#FLAGS[@]} = 0 ] && echo ok || echo FAIL)" "${FLAGS[*]:-defaults}"
fi
TF=()
TS=()  # for the sandbox table: its own --no-sandbox column
for f in "${FLAGS[@]}"; do
  TF+=(--tvmffi-flag="$f")
  [ "$f" = --no-sandbox ] || TS+=(--tvmffi-flag="$f")
done

hr "compare: official Python + PyTorch vs tvmffi call"
if timeout 300 "$PY" tools/gpu_compare.py "$PACK" "${TF[@]}"; then row compare ok "every function"
else row compare FAIL "see the table"; fi

hr "conform"
timeout 600 "$PY" -m tvmffi_cli conform "$PACK" --json "${FLAGS[@]}" >"$WORK/conform.json"
echo "exit $?"
"$PY" - "$WORK/conform.json" <<'EOF' && row conform ok "planted bugs caught, good kernels pass" || row conform FAIL "see above"
import json, sys
d = json.load(open(sys.argv[1]))
planted = {("device-mismatch", "bug_host_add_one"), ("device-bounds", "bug_oob_add_one"),
           ("stream-use", "bug_wrong_stream"), ("device-call", "bug_null_write")}
good = {"add_one", "mul2", "saxpy", "scale_alloc", "row_sum"}
bad = {(r["check"], r["function"]): r["message"] for r in d["results"] if r["status"] in ("fail", "error")}
print("| function | check | status | message |\n|---|---|---|---|")
for r in d["results"]:
    if r["function"] and (r["status"] in ("fail", "error") or r["check"].startswith(("device", "stream"))):
        print(f"| {r['function']} | {r['check']} | {r['status']} | {r['message'][:110]} |")
n = len(d["functions"])
print(f"\n{d['summary_line']}\n{d.get('elapsed_s', 0) / max(n, 1):.2f} s per function ({n} functions)")
missed = planted - set(bad)
wrong = {k for k in bad if k[1] in good}
print("missed:", sorted(missed) or "none", "| findings on good kernels:", sorted(wrong) or "none")
sys.exit(1 if missed or wrong else 0)
EOF

hr "conform --sanitizer memcheck"
timeout 400 "$PY" -m tvmffi_cli conform "$PACK" --select device-call --select memcheck \
  --sanitizer memcheck --json "${FLAGS[@]}" >"$WORK/memcheck.json"
echo "exit $?"
"$PY" - "$WORK/memcheck.json" <<'EOF' && row memcheck ok "compute-sanitizer ran" || row memcheck FAIL "see above"
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d["results"] if r["check"] == "memcheck"]
for r in rows:
    print(f"| {r['function']} | {r['status']} | {r['message'][:150]} |")
ran = [r for r in rows if r["status"] in ("pass", "fail")]
sys.exit(0 if ran else 1)
EOF

hr "bench: tvmffi bench vs a CUDA-event loop"
if timeout 600 "$PY" bench/bench_gpu.py --pack "$PACK" "${TF[@]}"; then row bench ok "within 5%"
else row bench FAIL "see the table"; fi

hr "sandbox table (a CUDA call that cudaMallocs)"
timeout 600 "$PY" tools/gpu_sandbox_table.py "$PACK" "${TS[@]}"
case $? in 0) row sandbox ok "every sandboxed cell ok" ;; 2) row sandbox skip "cannot switch users here" ;; *) row sandbox FAIL "see the table" ;; esac

hr "pytest -m gpu"
if TVMFFI_GPU_PACK="$PACK" timeout 600 "$PY" -m pytest -m gpu tests/test_gpu_device.py -q -n 0 -p no:cacheprovider -rs; then
  row pytest ok "tests/test_gpu_device.py"
else row pytest FAIL "see above"; fi

hr "summary"
echo "| step | status | note |"
echo "|---|---|---|"
for r in "${ROWS[@]}"; do echo "$r"; done
exit $FAILED
