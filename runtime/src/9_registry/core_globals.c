/* Global functions over the core layers (strings and the type table): they
 * need the function registry and Array, so they live above both. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- ffi.String, ffi.Bytes ---- */
static int rt_ffi_string(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  TVMFFIByteArray s;
  if (n != 1) return rt_raise("TypeError", "ffi.String expects 1 argument but %d were given", (int)n);
  if (!rt_any_get_bytes(&args[0], 0, &s)) {
    size_t len;
    const char* key = rt_type_key(args[0].type_index, &len);
    return rt_raise("TypeError",
                    "Mismatched type on argument #0 when calling: `ffi.String(0: str) -> str`. "
                    "Expected `str` but got `%.*s`", (int)len, key);
  }
  return rt_string_to_any(s.data, s.size, ret);
}

static int rt_ffi_bytes(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  TVMFFIByteArray s;
  if (n != 1) return rt_raise("TypeError", "ffi.Bytes expects 1 argument but %d were given", (int)n);
  if (!rt_any_get_bytes(&args[0], 1, &s)) {
    size_t len;
    const char* key = rt_type_key(args[0].type_index, &len);
    return rt_raise("TypeError",
                    "Mismatched type on argument #0 when calling: `ffi.Bytes(0: bytes) -> bytes`. "
                    "Expected `bytes` but got `%.*s`", (int)len, key);
  }
  return rt_bytes_to_any(s.data, s.size, ret);
}

/* ---- ffi.GetRegisteredTypeKeys ---- */
static int rt_ffi_registered_type_keys(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  (void)args;
  (void)n;
  char** keys;
  size_t count;
  if (rt_type_keys(&keys, &count) != 0) return -1;
  TVMFFIAny* items = (TVMFFIAny*)calloc(count ? count : 1, sizeof(TVMFFIAny));
  int rc = items ? 0 : rt_raise("MemoryError", "out of memory");
  size_t made = 0;
  for (; rc == 0 && made < count; ++made) rc = rt_string_to_any(keys[made], strlen(keys[made]), &items[made]);
  if (rc == 0) rc = rt_array_from_anys(items, (int64_t)count, ret);
  for (size_t i = 0; items && i < made; ++i) rt_any_release(&items[i]);
  free(items);
  for (size_t i = 0; i < count; ++i) free(keys[i]);
  free(keys);
  return rc;
}

/* ---- the sentinel objects ---- */
static int rt_ffi_invalid_object(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  (void)args;
  if (n != 0) return rt_raise("TypeError", "ffi.GetInvalidObject takes no arguments");
  return rt_missing_object(ret);
}
static int rt_ffi_kwargs_object(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  (void)args;
  if (n != 0) return rt_raise("TypeError", "ffi.GetKwargsObject takes no arguments");
  return rt_kwargs_object(ret);
}

RT_INIT(rt_core_globals_init) {
  rt_register_global("ffi.GetInvalidObject", rt_ffi_invalid_object);
  rt_register_global("ffi.GetKwargsObject", rt_ffi_kwargs_object);
  rt_register_global("ffi.String", rt_ffi_string);
  rt_register_global("ffi.Bytes", rt_ffi_bytes);
  rt_register_global("ffi.GetRegisteredTypeKeys", rt_ffi_registered_type_keys);
}
