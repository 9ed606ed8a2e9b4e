#!/usr/bin/env bash
# The wheels tools/gpu_check.sh installs on a GPU machine that has no network
# (the device machines: Python 3.12, x86_64, PyTorch/CuPy/numpy/pytest in the
# image; docs/gpu.md): the official apache-tvm-ffi the comparison runs, what
# tvmffi and its tests need that the image lacks, and tvmffi itself built here
# by a Python of the machine's version when one is at hand (else gpu_check.sh
# builds it there from the tree: cmake and scikit-build-core are in the image).
# Into .whl/ (ignored by git: name it in the device call's `carry`).
#
#   tools/gpu_wheels.sh            # about 12 MiB
#   GPU_PYTHON=3.13 tools/gpu_wheels.sh
set -euo pipefail
cd "$(dirname "$0")/.."
PYV=${GPU_PYTHON:-3.12}
mkdir -p .whl
plat=()
for p in manylinux_2_17_x86_64 manylinux2014_x86_64 manylinux_2_24_x86_64 manylinux_2_27_x86_64 \
         manylinux_2_28_x86_64 manylinux_2_31_x86_64 manylinux_2_34_x86_64 manylinux_2_35_x86_64 \
         manylinux1_x86_64; do
  plat+=(--platform "$p")
done
# Versions as the test dependencies here (pyproject.toml's [test] resolution).
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$PYV" \
  --implementation cp "${plat[@]}" -d .whl \
  apache-tvm-ffi==0.1.15.post2 pyelftools==0.33 pefile==2024.8.26 \
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
py=""
for c in "python$PYV" "$HOME"/.pyenv/versions/"$PYV"*/bin/"python$PYV"; do
  if command -v "$c" >/dev/null 2>&1 && "$c" -c 'import sys' >/dev/null 2>&1; then py=$c; break; fi
done
rm -f .whl/tvmffi-*.whl
if [ -n "$py" ]; then
  "$py" -m pip wheel -q --no-deps -w .whl .
else
  echo "no python$PYV here: tools/gpu_check.sh will build tvmffi from the tree on the GPU machine"
fi
ls -1 .whl
du -sh .whl
