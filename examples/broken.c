/* A deliberately broken library for `tvmffi conform` to catch: `first`
 * reads args[0] without checking num_args, and `stale` returns success but
 * leaves an error raised. Built by run.sh, never checked there. */
#include <tvm/ffi/c_api.h>

TVM_FFI_DLL_EXPORT int __tvm_ffi_first(void* handle, const TVMFFIAny* args, int32_t num_args,
                                       TVMFFIAny* result) {
  (void)handle;
  (void)num_args; /* the bug: no arity check */
  int is_int = args[0].type_index == kTVMFFIInt;
  result->type_index = is_int ? kTVMFFIInt : kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = is_int ? args[0].v_int64 : 0;
  return 0;
}

TVM_FFI_DLL_EXPORT int __tvm_ffi_stale(void* handle, const TVMFFIAny* args, int32_t num_args,
                                       TVMFFIAny* result) {
  (void)handle;
  (void)args;
  (void)num_args;
  TVMFFIErrorSetRaisedFromCStr("ValueError", "left behind"); /* the bug: then returns 0 */
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = 0;
  return 0;
}
