#!/usr/bin/env bash
# Developer helper for an editable install: rebuild the C runtime and swap the
# new libtvm_ffi.so (and headers) into the installed package atomically, so
# processes that already mapped the old file are unaffected.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PYTHON:-python3}
build="$root/build/dev"
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release ${TVMFFI_RT_CMAKE_ARGS:-} >/dev/null
cmake --build "$build" -j2 >/dev/null
dest=$("$py" - <<'PY'
import tvmffi_cli, pathlib
for p in tvmffi_cli.__path__:
    if (pathlib.Path(p) / "lib").is_dir():
        print(p); break
PY
)
[ -n "$dest" ] || { echo "no installed tvmffi_cli/lib found; pip install -e . first" >&2; exit 2; }
tmp="$dest/lib/.libtvm_ffi.so.$$"
cp "$build/runtime/libtvm_ffi.so" "$tmp" && mv -f "$tmp" "$dest/lib/libtvm_ffi.so"
if [ -f "$build/runtime/sandbox/libtvmffi_sandbox.so" ]; then
  cp "$build/runtime/sandbox/libtvmffi_sandbox.so" "$tmp" && mv -f "$tmp" "$dest/lib/libtvmffi_sandbox.so"
fi
mkdir -p "$dest/share/cmake/tvm_ffi" && cp "$root/runtime/cmake/tvm_ffi-config.cmake" "$dest/share/cmake/tvm_ffi/"
rm -rf "$dest/include.new" && cp -r "$root/runtime/include" "$dest/include.new" && rm -rf "$dest/include" && mv "$dest/include.new" "$dest/include"
echo "$dest/lib/libtvm_ffi.so"
