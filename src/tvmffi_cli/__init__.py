"""tvmffi: inspect, call and check libraries that speak the TVM-FFI stable C ABI."""

__version__ = "0.1.0"

__all__ = ["__version__", "load"]


def load(path, **kwargs):
    """Load a TVM-FFI library in this process and return it (see tvmffi_cli.ffi.library)."""
    from .ffi.library import load as _load

    return _load(path, **kwargs)
