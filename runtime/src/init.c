/* Fallbacks for functions runtime B's files provide (tensor.c,
 * container.c). Weak, so the real definitions replace them at link time;
 * they keep the library linkable while those files are being written. */
#include "internal.h"

__attribute__((weak)) int rt_cpu_tensor_alloc(DLTensor* prototype, DLManagedTensorVersioned** out,
                                              void* error_ctx,
                                              void (*set_error)(void*, const char*, const char*)) {
  (void)prototype;
  (void)out;
  if (set_error) set_error(error_ctx, "RuntimeError", "no CPU tensor allocator in this build");
  return -1;
}

__attribute__((weak)) int rt_array_from_anys(const TVMFFIAny* items, int64_t n, TVMFFIAny* out) {
  (void)items;
  (void)n;
  (void)out;
  return rt_raise("RuntimeError", "Array objects are not available in this build");
}
