#!/bin/sh
# Build the example libraries against our header and runtime into
# examples/build/, then show what tvmffi sees in one and call it. Run from the
# repository root after `pip install .`. README.md uses what this builds.
set -e
here=$(cd "$(dirname "$0")" && pwd)
out="$here/build"
mkdir -p "$out"
flags="-std=c11 -shared -fPIC -O2 -Wall -Wextra $(tvmffi config --cflags --ldflags --libs | tr '\n' ' ')"
# the example and its next release (for tvmffi diff)
gcc "$here/add_one.c" -o "$out/libadd_one.so" $flags
gcc "$here/add_one.c" -o "$out/libadd_one_v2.so" -DEXAMPLE_V2 $flags
# a library with bugs (for tvmffi conform to find; not checked here)
gcc "$here/broken.c" -o "$out/libbroken.so" $flags
# a library embedding a module tree with CUDA and OpenCL kernels (tvmffi extract)
gcc -std=c11 -shared -fPIC "$here/../fixtures/inspect/libbin_good.c" -o "$out/libkernels.so"
python3 -c "import numpy as np; np.save('$out/x.npy', np.arange(6, dtype='float32').reshape(2, 3))"
set -x
tvmffi inspect "$out/libadd_one.so"
tvmffi call "$out/libadd_one.so" add_one --tensor "$out/x.npy" --out "$out/result" --force
tvmffi call "$out/libadd_one.so" mul3 2 3 7
tvmffi conform "$out/libadd_one.so"
