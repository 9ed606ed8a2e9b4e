"""`tvmffi config`: where our runtime, headers and CMake package are, in the
conventions of the reference package's `tvm-ffi-config`.

Every flag given is printed, one line each, in the order given on the command
line (`--cflags --libs` prints two lines), so one call fills a compiler line.

The C++ headers (tvm/ffi/tvm_ffi.h, the export macros, Array/Map/String...)
belong to apache-tvm-ffi, which we do not copy: --cxxflags adds its include
directory when that package is installed (found through its file list, never
imported: importing it would load its runtime), and exits 2 naming what to
install when it is not.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import click

# flag -> help. The listing without flags uses the flag's spelling; --json
# (always every value) the same name with "_" for "-".
FLAGS: dict[str, str] = {
    "runtime": "Absolute path of the built runtime library.",
    "includedir": "Directory holding tvm/ffi/c_api.h.",
    "dlpack-includedir": "Directory holding dlpack/dlpack.h.",
    "libdir": "Directory holding libtvm_ffi.so.",
    "libfiles": "Full path of the library file(s) to link.",
    "cmakedir": "Directory of the CMake package tvm_ffi (for CMAKE_PREFIX_PATH).",
    "cflags": "C compiler flags.",
    "cxx-includedir": "Directory of the C++ headers (tvm/ffi/tvm_ffi.h) of apache-tvm-ffi.",
    "cxxflags": "C++ compiler flags (our C headers and apache-tvm-ffi's C++ headers).",
    "ldflags": "Linker flags (-L).",
    "libs": "Libraries to link (-ltvm_ffi).",
}
_ORDER_KEY = "tvmffi.config.order"
#: The distribution holding the C++ headers, and what installs it.
CXX_DIST = "apache-tvm-ffi"
CXX_INSTALL = "pip install 'tvmffi[cxx]'"
_CXX_HEADER = ("tvm", "ffi", "tvm_ffi.h")


def cxx_include_dir() -> Path | None:
    """apache-tvm-ffi's include directory (holding tvm/ffi/tvm_ffi.h), or None.

    Found from the distribution's installed files, else from where the
    `tvm_ffi` package would be imported from; neither imports it."""
    import importlib.metadata
    import importlib.util

    candidates: list[Path] = []
    try:
        dist = importlib.metadata.distribution(CXX_DIST)
        candidates.append(Path(str(dist.locate_file("tvm_ffi/include"))))
    except importlib.metadata.PackageNotFoundError:
        pass
    try:
        spec = importlib.util.find_spec("tvm_ffi")  # finds, does not execute
    except (ImportError, ValueError):
        spec = None
    if spec is not None and spec.submodule_search_locations:
        candidates += [Path(d) / "include" for d in spec.submodule_search_locations]
    for c in candidates:
        if c.joinpath(*_CXX_HEADER).is_file():
            return c.resolve()
    return None


def cxx_missing() -> str:
    """The one line that says what to install for --cxxflags."""
    return (
        "the C++ headers (tvm/ffi/tvm_ffi.h) come from the apache-tvm-ffi package, "
        f"which is not installed in this environment; install it with {CXX_INSTALL} "
        f"(or pip install {CXX_DIST})"
    )


def values() -> dict[str, str | None]:
    """Every value `config` can print, keyed by flag name (without dashes);
    None for the C++ values when apache-tvm-ffi is not installed."""
    from ..ffi import paths

    lib = paths.runtime_library()
    inc = paths.include_dir()
    cxx = cxx_include_dir()
    return {
        "runtime": str(lib),
        "includedir": str(inc),
        "dlpack-includedir": str(inc),
        "libdir": str(lib.parent),
        "libfiles": str(lib),
        "cmakedir": str(paths.cmake_dir()),
        "cflags": f"-I{inc}",
        "cxx-includedir": None if cxx is None else str(cxx),
        # Our C headers first: C and C++ code of one project see one c_api.h.
        "cxxflags": None if cxx is None else f"-I{inc} -I{cxx} -std=c++17",
        "ldflags": f"-L{lib.parent}",
        "libs": "-ltvm_ffi",
    }


def _remember(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
    # click runs the callbacks of the options given in command-line order.
    if value and param.name is not None:
        ctx.meta.setdefault(_ORDER_KEY, []).append(param.name)
    return value


def _flag(name: str, help_: str) -> Callable[[click.Command], click.Command]:
    return click.option(
        f"--{name}",
        name.replace("-", "_"),
        is_flag=True,
        help=help_,
        expose_value=False,
        callback=_remember,
    )


@click.command("config")
@click.option("--json", "as_json", is_flag=True, help="Print every value as one JSON object.")
@click.pass_context
def command(ctx: click.Context, as_json: bool) -> int:
    """Print paths and flags to compile and link against our runtime.

    Each flag prints one line, in the order given; without flags, every value
    is listed. Examples:

      gcc -shared -fPIC add.c $(tvmffi config --cflags --ldflags --libs)

      g++ -shared -fPIC k.cc $(tvmffi config --cxxflags --ldflags --libs)

      cmake -DCMAKE_PREFIX_PATH="$(tvmffi config --cmakedir)" ..

    --cxxflags needs apache-tvm-ffi's C++ headers (pip install 'tvmffi[cxx]');
    without them it exits 2 saying so.
    """
    from ..errors import InputError

    order: list[str] = ctx.meta.get(_ORDER_KEY, [])
    v = values()
    if as_json:
        from .jsonout import dumps

        click.echo(dumps({k.replace("-", "_"): val for k, val in v.items()}))
        return 0
    if not order:
        for k, val in v.items():
            click.echo(f"{k}: {val if val is not None else '(not installed: ' + CXX_INSTALL + ')'}")
        return 0
    missing = [n for n in order if v[n.replace("_", "-")] is None]
    if missing:
        raise InputError(f"--{missing[0].replace('_', '-')}: {cxx_missing()}")
    for name in order:
        click.echo(v[name.replace("_", "-")])
    return 0


for _name, _help in FLAGS.items():  # appended to the built command, in this order
    command = _flag(_name, _help)(command)
