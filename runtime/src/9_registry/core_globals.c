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

/* ---- ffi.GetGlobalFuncMetadata ---- */
static int rt_ffi_global_metadata(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.GetGlobalFuncMetadata(0: str) -> str";
  TVMFFIByteArray name;
  if (n != 1) return rt_raise("TypeError", "%s expects 1 argument but %d were given", sig, (int)n);
  if (!rt_any_get_bytes(&args[0], 0, &name)) {
    size_t len;
    const char* key = rt_type_key(args[0].type_index, &len);
    return rt_raise("TypeError",
                    "Mismatched type on argument #0 when calling: `%s`. Expected `str` but got "
                    "`%.*s`", sig, (int)len, key);
  }
  char* meta = NULL;
  int found = rt_global_metadata(name.data, name.size, &meta);
  if (found < 0) return -1;
  if (!found)
    return rt_raise("RuntimeError", "Global Function is not found: %.*s", (int)name.size,
                    name.data);
  int rc = rt_string_to_any(meta, strlen(meta), ret);
  free(meta);
  return rc;
}

/* ---- ffi.FunctionFromExternC(self, safe_call, deleter) ---- */
static int rt_ptr_arg(const TVMFFIAny* a, void** out) {
  if (a->type_index == kTVMFFIOpaquePtr) {
    *out = a->v_ptr;
    return 1;
  }
  if (a->type_index == kTVMFFINone) {
    *out = NULL;
    return 1;
  }
  return 0;
}

static int rt_ffi_from_extern_c(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] =
      "ffi.FunctionFromExternC(0: void*, 1: void*, 2: void*) -> ffi.Function";
  if (n != 3)
    return rt_raise("TypeError",
                    "Mismatched number of arguments when calling: `%s`. Expected 3 but got %d "
                    "arguments", sig, (int)n);
  void* p[3];
  for (int i = 0; i < 3; ++i) {
    if (!rt_ptr_arg(&args[i], &p[i])) {
      size_t len;
      const char* key = rt_type_key(args[i].type_index, &len);
      return rt_raise("TypeError",
                      "Mismatched type on argument #%d when calling: `%s`. Expected `void*` but "
                      "got `%.*s`", i, sig, (int)len, key);
    }
  }
  if (p[1] == NULL) return rt_raise("ValueError", "FunctionFromExternC: safe_call is NULL");
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(p[0], (TVMFFISafeCallType)p[1], (void (*)(void*))p[2], &f) != 0)
    return -1;
  rt_any_set_obj(ret, f);
  return 0;
}

/* ---- ffi.VisitInterrupt(value): the object a visitor returns to stop ---- */
typedef struct {
  TVMFFIObject header;
  TVMFFIAny value;
} rt_visit_interrupt;

static void rt_visit_interrupt_deleter(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong)
    rt_any_release(&((rt_visit_interrupt*)self)->value);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

static int rt_ffi_visit_interrupt(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (n != 1)
    return rt_raise("TypeError",
                    "Mismatched number of arguments when calling: `ffi.VisitInterrupt(0: Any) "
                    "-> ffi.VisitInterrupt`. Expected 1 but got %d arguments", (int)n);
  rt_visit_interrupt* o = (rt_visit_interrupt*)rt_object_alloc(
      sizeof(rt_visit_interrupt), kTVMFFIVisitInterrupt, rt_visit_interrupt_deleter);
  if (o == NULL) return -1;
  if (TVMFFIAnyViewToOwnedAny(&args[0], &o->value) != 0) {
    rt_any_set_none(&o->value);
    rt_decref(o);
    return -1;
  }
  rt_any_set_obj(ret, o);
  return 0;
}

RT_INIT(rt_core_globals_init) {
  rt_register_global("ffi.GetGlobalFuncMetadata", rt_ffi_global_metadata);
  rt_register_global("ffi.FunctionFromExternC", rt_ffi_from_extern_c);
  rt_register_global("ffi.VisitInterrupt", rt_ffi_visit_interrupt);
  rt_register_global("ffi.GetInvalidObject", rt_ffi_invalid_object);
  rt_register_global("ffi.GetKwargsObject", rt_ffi_kwargs_object);
  rt_register_global("ffi.String", rt_ffi_string);
  rt_register_global("ffi.Bytes", rt_ffi_bytes);
  rt_register_global("ffi.GetRegisteredTypeKeys", rt_ffi_registered_type_keys);
}
