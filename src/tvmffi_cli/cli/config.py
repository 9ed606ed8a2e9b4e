"""`tvmffi config`: where our runtime and headers are, in tvm-ffi-config's conventions."""

import click


@click.command("config")
@click.option("--runtime", "what", flag_value="runtime", help="Absolute path of the built runtime library.")
@click.option("--includedir", "what", flag_value="includedir", help="Directory holding tvm/ffi/c_api.h and dlpack/dlpack.h.")
@click.option("--libdir", "what", flag_value="libdir", help="Directory holding libtvm_ffi.so.")
@click.option("--libfiles", "what", flag_value="libfiles", help="Full path of the library file(s) to link.")
@click.option("--cflags", "what", flag_value="cflags", help="C compiler flags.")
@click.option("--ldflags", "what", flag_value="ldflags", help="Linker flags (-L).")
@click.option("--libs", "what", flag_value="libs", help="Libraries to link (-ltvm_ffi).")
@click.option("--json", "as_json", is_flag=True, help="Print every value as one JSON object.")
def command(what, as_json):
    """Print paths and flags to compile and link a C library against our runtime.

    Example: gcc -shared -fPIC add.c $(tvmffi config --cflags) $(tvmffi config --ldflags) $(tvmffi config --libs)
    """
    from ..ffi import paths

    def values():
        lib = paths.runtime_library()
        inc = paths.include_dir()
        return {
            "runtime": str(lib),
            "includedir": str(inc),
            "libdir": str(lib.parent),
            "libfiles": str(lib),
            "cflags": f"-I{inc}",
            "ldflags": f"-L{lib.parent}",
            "libs": "-ltvm_ffi",
        }

    if as_json:
        import json

        v = values()
        click.echo(json.dumps(v, indent=2))
        return 0
    if what is None:
        for k, v in values().items():
            click.echo(f"{k}: {v}")
        return 0
    click.echo(values()[what])
    return 0
