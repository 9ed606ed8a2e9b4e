import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fixturebuild


@pytest.fixture(scope="session")
def build_lib():
    """build_lib(sources, headers="ours"|"official", ...) -> Path of a built library."""
    return fixturebuild.build


@pytest.fixture(scope="session")
def official_runtime():
    p = fixturebuild.official_runtime()
    if p is None:
        pytest.skip("apache-tvm-ffi (the reference runtime) is not installed")
    return p


@pytest.fixture(scope="session")
def official_include():
    p = fixturebuild.official_include()
    if p is None:
        pytest.skip("apache-tvm-ffi (the reference headers) are not installed")
    return p
