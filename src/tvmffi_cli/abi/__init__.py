"""Facts of the TVM-FFI stable C ABI, each defined once: C API names (capi),
the ctypes mirror of its structs (structs), the type_schema parser (typeschema).
Importing the package itself imports nothing (the fast inspect path relies on it)."""
