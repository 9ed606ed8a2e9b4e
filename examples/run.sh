#!/bin/sh
# Build the example kernel library against our header and runtime, then show
# what tvmffi sees in it and call it. Run from the repository root after
# `pip install .`.
set -e
here=$(cd "$(dirname "$0")" && pwd)
out="$here/build"
mkdir -p "$out"
gcc -std=c11 -shared -fPIC -O2 "$here/add_one.c" -o "$out/libadd_one.so" \
  $(tvmffi config --cflags) $(tvmffi config --ldflags) $(tvmffi config --libs)
python3 -c "import numpy as np; np.save('$out/x.npy', np.arange(6, dtype='float32').reshape(2, 3))"
set -x
tvmffi inspect "$out/libadd_one.so"
tvmffi call "$out/libadd_one.so" add_one --tensor "$out/x.npy" --out "$out/result" --force
tvmffi call "$out/libadd_one.so" mul3 2 3 7
tvmffi conform "$out/libadd_one.so"
