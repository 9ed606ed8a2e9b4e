"""Symbol names of the ABI, defined once: the families of exported symbols a
TVM-FFI library carries and the file names of runtime libraries.

    __tvm_ffi_<name>            a function (TVMFFISafeCallType)
    __tvm_ffi_main              the library's main function (may alias another)
    __tvm_ffi__<...>            reserved for the special symbols below
    __tvm_ffi__metadata_<name>  getter of <name>'s metadata JSON
    __tvm_ffi__doc_<name>       getter of <name>'s doc string
    __tvm_ffi__cubin_<name>     an embedded CUDA binary, ends at ..._end
    __tvm_ffi__library_bin      serialized module tree (binary/libbin.py)
    __tvm_ffi__library_ctx      writable void* the loader points at the module
    __TVMFFI<api>               writable pointer the loader fills with C API <api>
"""

#: Common start of every function and special symbol.
TVM_FFI_PREFIX = "__tvm_ffi"
FUNC_PREFIX = "__tvm_ffi_"
SPECIAL_PREFIX = "__tvm_ffi__"
CTX_PREFIX = "__TVMFFI"
MAIN = "__tvm_ffi_main"
METADATA_PREFIX = "__tvm_ffi__metadata_"
DOC_PREFIX = "__tvm_ffi__doc_"
CUBIN_PREFIX = "__tvm_ffi__cubin_"
CUBIN_END_SUFFIX = "_end"
LIBRARY_BIN = "__tvm_ffi__library_bin"
LIBRARY_CTX = "__tvm_ffi__library_ctx"

#: Name prefixes of runtime library files (as found in DT_NEEDED / imports).
RUNTIME_LIBS = ("libtvm_ffi.", "tvm_ffi.dll", "libtvm_ffi.dll")
#: Prefix of the runtime's C functions imported by libraries.
C_API_PREFIX = "TVMFFI"

# Reflection: the static method an object type registers as its constructor
# (refl::init<...> in the C++ headers); it returns the new object.
INIT_METHOD = "__ffi_init__"
#: Copy method the headers register for every copy-constructible type: as an
#: instance method up to apache-tvm-ffi 0.1.9, as a type attribute of the same
#: name from 0.1.10 (ObjectDef's destructor). Whether a type has it says which
#: headers built the library, not what the library offers.
SHALLOW_COPY = "__ffi_shallow_copy__"
#: Methods the headers generate for every type (not written by the library).
GENERATED_METHODS = frozenset({SHALLOW_COPY})
#: Type attributes that stand for a member a caller uses: the constructor
#: (0.1.10+ headers register an auto-generated one here, not in the method
#: table) and the copy. Read per type by `inspect` (a TVMFFIGetTypeAttrColumn
#: entry that is not None).
MEMBER_ATTRS = (INIT_METHOD, SHALLOW_COPY)
#: Type keys in this namespace are the runtime's own (ffi.Enum, ffi.reflection.*):
#: a library's headers may register them lazily while it loads, but they are
#: not the library's types.
RUNTIME_TYPE_PREFIX = "ffi."
