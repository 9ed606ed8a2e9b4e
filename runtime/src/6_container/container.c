/* Array and Shape objects with the official layouts and their global
 * functions (ffi.Array, ffi.ArrayGetItem, ffi.ArraySize, ffi.Shape). */
#include <stdio.h>
#include <string.h>

#include "container_internal.h"

/* ------------------------------------------------------------------ */
/* Array                                                               */
/* ------------------------------------------------------------------ */

static void array_deleter(void* self, int flags) {
  rt_array* a = (rt_array*)self;
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    /* C++ code holding a unique reference may have edited the cell in place
     * (shrunk it, or moved the data out with its own deleter), so trust the
     * cell rather than our own capacity. */
    TVMFFIAny* items = (TVMFFIAny*)a->seq.data;
    for (int64_t i = 0; items != NULL && i < a->seq.size; ++i) rt_any_release(&items[i]);
    a->seq.size = 0;
    if (a->seq.data_deleter != NULL) a->seq.data_deleter(a->seq.data);
    a->seq.data = NULL;
    a->seq.data_deleter = NULL;
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

rt_array* rt_array_new(int64_t capacity) {
  if (capacity < 0 || (uint64_t)capacity > (SIZE_MAX - sizeof(rt_array)) / sizeof(TVMFFIAny)) {
    rt_raise("ValueError", "Array capacity %lld is out of range", (long long)capacity);
    return NULL;
  }
  rt_array* a = (rt_array*)rt_object_alloc(sizeof(rt_array) + (size_t)capacity * sizeof(TVMFFIAny),
                                           kTVMFFIArray, array_deleter);
  if (a == NULL) return NULL;
  a->seq.data = a->items;
  a->seq.size = 0;
  a->seq.capacity = capacity;
  a->seq.data_deleter = NULL;
  return a;
}

int rt_array_from_anys(const TVMFFIAny* items, int64_t n, TVMFFIAny* out) {
  rt_array* a = rt_array_new(n);
  if (a == NULL) return -1;
  for (int64_t i = 0; i < n; ++i) {
    a->items[i] = items[i];
    rt_any_retain(&items[i]);
  }
  a->seq.size = n;
  rt_any_set_obj(out, a);
  return 0;
}

static int g_array(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  rt_array* a = rt_array_new(nargs);
  if (a == NULL) return -1;
  for (int32_t i = 0; i < nargs; ++i) {
    TVMFFIAny v;
    if (TVMFFIAnyViewToOwnedAny(&args[i], &v) != 0) {
      rt_decref(a);
      return -1;
    }
    rt_array_push_move(a, &v);
  }
  rt_any_set_obj(ret, a);
  return 0;
}

static int g_array_get_item(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.ArrayGetItem(0: ffi.Array, 1: int) -> Any";
  void* obj = NULL;
  int64_t i = 0;
  if (rt_b_check_nargs(sig, nargs, 2) || rt_b_arg_obj(args, 0, sig, kTVMFFIArray, "ffi.Array", &obj) ||
      rt_b_arg_int(args, 1, sig, &i)) {
    return -1;
  }
  int64_t n;
  const TVMFFIAny* items = rt_seq_items(obj, &n);
  if (i < 0 || i >= n) return rt_raise("IndexError", "Index %lld out of bounds %lld", (long long)i, (long long)n);
  *ret = items[i];
  rt_any_retain(ret);
  return 0;
}

static int g_array_size(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.ArraySize(0: ffi.Array) -> int";
  void* obj = NULL;
  if (rt_b_check_nargs(sig, nargs, 1) || rt_b_arg_obj(args, 0, sig, kTVMFFIArray, "ffi.Array", &obj)) {
    return -1;
  }
  int64_t n;
  (void)rt_seq_items(obj, &n);
  rt_any_set_int(ret, n);
  return 0;
}

static int g_array_contains(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.ArrayContains(0: ffi.Array, 1: Any) -> bool";
  void* obj = NULL;
  if (rt_b_check_nargs(sig, nargs, 2) || rt_b_arg_obj(args, 0, sig, kTVMFFIArray, "ffi.Array", &obj)) {
    return -1;
  }
  TVMFFIAny key;
  if (TVMFFIAnyViewToOwnedAny(&args[1], &key) != 0) return -1;
  int64_t n;
  const TVMFFIAny* items = rt_seq_items(obj, &n);
  int found = 0;
  for (int64_t i = 0; i < n && !found; ++i) {
    if (rt_any_equal(&items[i], &key, &found) != 0) {
      rt_any_release(&key);
      return -1;
    }
  }
  rt_any_release(&key);
  rt_any_set_bool(ret, found);
  return 0;
}

/* ------------------------------------------------------------------ */
/* Shape                                                               */
/* ------------------------------------------------------------------ */

static int g_shape(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  rt_shape* s = (rt_shape*)rt_object_alloc(sizeof(rt_shape) + (size_t)nargs * sizeof(int64_t),
                                           kTVMFFIShape, rt_object_plain_deleter);
  if (s == NULL) return -1;
  s->cell.data = s->dims;
  s->cell.size = (size_t)nargs;
  for (int32_t i = 0; i < nargs; ++i) {
    if (args[i].type_index != kTVMFFIInt && args[i].type_index != kTVMFFIBool) {
      rt_decref(s);
      return rt_raise("ValueError", "Expect shape to take list of int arguments");
    }
    s->dims[i] = args[i].v_int64;
  }
  rt_any_set_obj(ret, s);
  return 0;
}

RT_INIT(container_init) {
  rt_register_global("ffi.Array", g_array);
  rt_register_global("ffi.ArrayGetItem", g_array_get_item);
  rt_register_global("ffi.ArraySize", g_array_size);
  rt_register_global("ffi.ArrayContains", g_array_contains);
  rt_register_global("ffi.Shape", g_shape);
}
