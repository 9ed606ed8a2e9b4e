"""`tvmffi config`: where our runtime, headers and CMake package are, in the
conventions of the reference package's `tvm-ffi-config`.

Every flag given is printed, one line each, in the order given on the command
line (`--cflags --libs` prints two lines), so one call fills a compiler line.
"""

from __future__ import annotations

import json
from collections.abc import Callable

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
    "cxxflags": "C++ compiler flags.",
    "ldflags": "Linker flags (-L).",
    "libs": "Libraries to link (-ltvm_ffi).",
}
_ORDER_KEY = "tvmffi.config.order"


def values() -> dict[str, str]:
    """Every value `config` can print, keyed by flag name (without dashes)."""
    from ..ffi import paths

    lib = paths.runtime_library()
    inc = paths.include_dir()
    return {
        "runtime": str(lib),
        "includedir": str(inc),
        "dlpack-includedir": str(inc),
        "libdir": str(lib.parent),
        "libfiles": str(lib),
        "cmakedir": str(paths.cmake_dir()),
        "cflags": f"-I{inc}",
        "cxxflags": f"-I{inc} -std=c++17",
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

      cmake -DCMAKE_PREFIX_PATH="$(tvmffi config --cmakedir)" ..
    """
    order: list[str] = ctx.meta.get(_ORDER_KEY, [])
    v = values()
    if as_json:
        click.echo(json.dumps({k.replace("-", "_"): val for k, val in v.items()}, indent=2))
        return 0
    if not order:
        for k, val in v.items():
            click.echo(f"{k}: {val}")
        return 0
    for name in order:
        click.echo(v[name.replace("_", "-")])
    return 0


for _name, _help in FLAGS.items():  # appended to the built command, in this order
    command = _flag(_name, _help)(command)
