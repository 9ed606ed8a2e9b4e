/* tvmffi: environment part of the TVM-FFI C ABI (0.1.16): streams, tensor
 * allocation, signals, C API registration and module symbols. Declared from
 * the ABI specification; the text is tvmffi's own. */
#ifndef TVM_FFI_EXTRA_C_ENV_API_H_
#define TVM_FFI_EXTRA_C_ENV_API_H_

#include <tvm/ffi/c_api.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A device stream (cudaStream_t and the like); never owned by the runtime. */
typedef void* TVMFFIStreamHandle;

/* Sets this thread's current stream for (device_type, device_id); the
 * previous one is written to *opt_out_original_stream when that is non-NULL. */
TVM_FFI_DLL int TVMFFIEnvSetStream(int32_t device_type, int32_t device_id,
                                   TVMFFIStreamHandle stream,
                                   TVMFFIStreamHandle* opt_out_original_stream);
/* This thread's current stream for the device, NULL if none was set. */
TVM_FFI_DLL TVMFFIStreamHandle TVMFFIEnvGetStream(int32_t device_type, int32_t device_id);

/* Sets this thread's tensor allocator (and the process-wide one when
 * write_to_global_context is nonzero); the previous thread-local allocator
 * goes to *opt_out_original_allocator when non-NULL. */
TVM_FFI_DLL int TVMFFIEnvSetDLPackManagedTensorAllocator(
    DLPackManagedTensorAllocator allocator, int write_to_global_context,
    DLPackManagedTensorAllocator* opt_out_original_allocator);
/* The allocator in effect: thread-local first, then process-wide. */
TVM_FFI_DLL DLPackManagedTensorAllocator TVMFFIEnvGetDLPackManagedTensorAllocator(void);
/* Allocates a Tensor object shaped like prototype (dtype, ndim, shape, device). */
TVM_FFI_DLL int TVMFFIEnvTensorAlloc(DLTensor* prototype, TVMFFIObjectHandle* out);
/* Nonzero (with an error raised) when the host environment has a pending signal. */
TVM_FFI_DLL int TVMFFIEnvCheckSignals(void);
/* Lets the host environment (e.g. Python) provide a named C entry point. */
TVM_FFI_DLL int TVMFFIEnvRegisterCAPI(const char* name, void* symbol);

/* Finds func_name among the imports of the module stored in a library's
 * context symbol (then among global functions). *out is borrowed: the module
 * caches the function and keeps it alive, so the caller must not release it. */
TVM_FFI_DLL int TVMFFIEnvModLookupFromImports(TVMFFIObjectHandle library_ctx, const char* func_name,
                                              TVMFFIObjectHandle* out);
/* A symbol that the loader writes into each library exporting `name`. */
TVM_FFI_DLL int TVMFFIEnvModRegisterContextSymbol(const char* name, void* symbol);
/* A symbol of the statically linked "system library". */
TVM_FFI_DLL int TVMFFIEnvModRegisterSystemLibSymbol(const char* name, void* symbol);

#ifdef __cplusplus
}
#endif

#endif /* TVM_FFI_EXTRA_C_ENV_API_H_ */
