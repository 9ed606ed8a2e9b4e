/* tvmffi runtime extensions: instrumentation, timing and library loading.
 * Exported by tvmffi's libtvm_ffi.so next to the ABI's 50 C functions; the
 * official runtime does not have them. Unless noted, functions return 0 on
 * success and -1 with an error raised (fetch it with
 * TVMFFIErrorMoveFromRaised). */
#ifndef TVMFFI_RT_H_
#define TVMFFI_RT_H_

#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- instrumentation ---- */
/* Objects alive that this runtime created or will destroy. */
TVM_FFI_DLL int64_t tvmffi_rt_live_objects(void);
TVM_FFI_DLL int64_t tvmffi_rt_live_objects_of_type(int32_t type_index);
/* Read the combined count of a live object without changing it. */
TVM_FFI_DLL uint32_t tvmffi_rt_strong_count(TVMFFIObjectHandle obj);
TVM_FFI_DLL uint32_t tvmffi_rt_weak_count(TVMFFIObjectHandle obj);
/* 1 if this thread holds a raised error that was not moved out yet. */
TVM_FFI_DLL int tvmffi_rt_error_pending(void);
/* 1 for a static POD/object index or a registered one, else 0. */
TVM_FFI_DLL int tvmffi_rt_type_index_valid(int32_t type_index);
/* 0: off. 1: record misuse (DecRef of a dead object, IncRef from zero, ...). */
TVM_FFI_DLL void tvmffi_rt_set_checking(int level);
TVM_FFI_DLL int64_t tvmffi_rt_violation_count(void);
/* *out = String holding a JSON list of {"kind": ..., "detail": ...}. */
TVM_FFI_DLL int tvmffi_rt_violations(TVMFFIAny* out);
/* *out = Array of String: all global function names, sorted. */
TVM_FFI_DLL int tvmffi_rt_list_globals(TVMFFIAny* out);
/* One past the largest allocated type index. */
TVM_FFI_DLL int32_t tvmffi_rt_type_index_end(void);

/* ---- timing (for `tvmffi bench`) ----
 * Calls func(args) calls_per_round times per round through
 * TVMFFIFunctionCall, releasing each result; out_ns_per_round[r] receives
 * the total nanoseconds of round r. */
TVM_FFI_DLL int tvmffi_rt_time_calls(TVMFFIObjectHandle func, const TVMFFIAny* args,
                                     int32_t num_args, int64_t calls_per_round, int32_t rounds,
                                     int64_t* out_ns_per_round);

/* ---- library loading ----
 * dlopen(path, RTLD_LAZY | RTLD_LOCAL); the caller has loaded this runtime
 * RTLD_GLOBAL so the library binds to it. *out_module: a Module object. */
TVM_FFI_DLL int tvmffi_rt_library_load(const char* path, TVMFFIObjectHandle* out_module);
/* Function `name` (the `__tvm_ffi_<name>` export, else from imports when
 * query_imports); *out = NULL when absent (returns 0). */
TVM_FFI_DLL int tvmffi_rt_module_get_function(TVMFFIObjectHandle mod, const TVMFFIByteArray* name,
                                              int query_imports, TVMFFIObjectHandle* out);
/* *out = String holding JSON: {"kind", "path", "imports", "missing_loaders",
 * "context_symbols", "library_bin", "errors"}. */
TVM_FFI_DLL int tvmffi_rt_module_describe(TVMFFIObjectHandle mod, TVMFFIAny* out);

#ifdef __cplusplus
}
#endif

#endif /* TVMFFI_RT_H_ */
