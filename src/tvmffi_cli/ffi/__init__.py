"""In-process access to a libtvm_ffi.so: the runtime (ctypes declarations), the
conversion between Python values and TVMFFIAny, and load(path) -> Library."""
