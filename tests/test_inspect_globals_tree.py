"""inspect's human tree shows a typed global's signature (issue 20 item 4):
GlobalDef().def(...) records the type schema, as the export macro does."""

import os
import subprocess
import sys

import pytest

import fixturebuild


def test_typed_globals_show_their_signature():
    if fixturebuild.official_include() is None:
        pytest.skip("apache-tvm-ffi is not installed (pip install '.[test]')")
    lib = fixturebuild.build(  # the same build as test_diff's v1
        "tools/api.cc",
        name="api-v1-O1",
        headers="official",
        defines=["TVM_FFI_DLL_EXPORT_INCLUDE_METADATA=1"],
        flags=["-O1"],
    )
    p = subprocess.run(
        [sys.executable, "-m", "tvmffi_cli", "inspect", str(lib)],
        capture_output=True,
        text=True,
        env=dict(os.environ, COLUMNS="160"),
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    tree = p.stdout.split("Global functions registered on load (2)\n", 1)[1]
    assert tree.splitlines()[:2] == [
        "│   ├── api.add(int, int) -> int",
        "│   └── api.old_global() -> None",
    ]
