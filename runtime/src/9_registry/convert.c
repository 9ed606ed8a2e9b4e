/* The __ffi_convert__ hooks of the built-in types: a Function taking one
 * value and returning it as the type (a derived type passes; str and bytes
 * forms become String/Bytes; Array<->List and Map<->Dict are copied), or
 * raising TypeError "Cannot cast from `A` to `B`" as the official does. */
#include <string.h>

#include "container_internal.h"

typedef struct {
  const char* key;
  const char* type_str; /* the target as the official messages write it */
} rt_convert_spec;

static const rt_convert_spec rt_converts[] = {
    {"ffi.Object", "ffi.Object"},  {"ffi.String", "str"},
    {"ffi.Bytes", "bytes"},    {"ffi.Error", "ffi.Error"},
    {"ffi.Function", "ffi.Function"}, {"ffi.Shape", "ffi.Shape"},
    {"ffi.Tensor", "ffi.Tensor"},  {"ffi.Array", "Array<Any>"},
    {"ffi.Map", "Map<Any, Any>"},  {"ffi.List", "List<Any>"},
    {"ffi.Dict", "Dict<Any, Any>"}, {"ffi.IntEnum", "ffi.IntEnum"},
    {"ffi.StrEnum", "ffi.StrEnum"},
};
#define RT_N_CONVERTS (sizeof(rt_converts) / sizeof(rt_converts[0]))
static int32_t rt_convert_index[RT_N_CONVERTS];

static int copy_seq(const TVMFFIAny* v, int to_list, TVMFFIAny* ret) {
  int64_t n;
  const TVMFFIAny* items = rt_seq_items(v->v_obj, &n);
  if (!to_list) return rt_array_from_anys(items, n, ret);
  void* l = rt_list_new(n);
  if (l == NULL) return -1;
  for (int64_t i = 0; i < n; ++i) {
    if (rt_list_append(l, &items[i]) != 0) {
      rt_decref(l);
      return -1;
    }
  }
  rt_any_set_obj(ret, l);
  return 0;
}

static int copy_map(const TVMFFIAny* v, int to_dict, TVMFFIAny* ret) {
  void* src = v->v_obj;
  void* m = to_dict ? rt_dict_new() : rt_map_new();
  if (m == NULL) return -1;
  for (uint64_t it = rt_map_iter_begin(src); it != rt_map_iter_end(src);
       it = rt_map_iter_next(src, it)) {
    const TVMFFIAny *k, *val;
    rt_map_iter_kv(src, it, &k, &val);
    if ((to_dict ? rt_dict_set(m, k, val) : rt_map_set(&m, k, val)) != 0) {
      rt_decref(m);
      return -1;
    }
  }
  rt_any_set_obj(ret, m);
  return 0;
}

static int rt_convert_call(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  const rt_convert_spec* spec = &rt_converts[(size_t)(uintptr_t)self];
  int32_t target = rt_convert_index[(size_t)(uintptr_t)self];
  if (nargs != 1)
    return rt_raise("TypeError", "%s.__ffi_convert__ expects 1 argument but %d were given",
                    spec->key, (int)nargs);
  const TVMFFIAny* v = &args[0];
  int32_t ti = v->type_index;
  TVMFFIByteArray s;
  if (target == kTVMFFIStr || target == kTVMFFIBytes) {
    if (rt_any_get_bytes(v, target == kTVMFFIBytes, &s))
      return target == kTVMFFIStr ? rt_string_to_any(s.data, s.size, ret)
                                  : rt_bytes_to_any(s.data, s.size, ret);
  } else if (ti == kTVMFFINone && (target == kTVMFFIObject || target == kTVMFFIFunction ||
                                   target == kTVMFFITensor)) {
    rt_any_set_none(ret); /* these references are nullable */
    return 0;
  } else if (ti >= kTVMFFIStaticObjectBegin &&
             (ti == target || rt_type_is_instance(ti, target))) {
    *ret = *v;
    rt_any_retain(ret);
    return 0;
  } else if ((target == kTVMFFIArray && ti == kTVMFFIList) ||
             (target == kTVMFFIList && ti == kTVMFFIArray)) {
    return copy_seq(v, target == kTVMFFIList, ret);
  } else if ((target == kTVMFFIMap && ti == kTVMFFIDict) ||
             (target == kTVMFFIDict && ti == kTVMFFIMap)) {
    return copy_map(v, target == kTVMFFIDict, ret);
  }
  size_t len;
  const char* key = rt_type_key(ti, &len);
  return rt_raise("TypeError", "Cannot cast from `%.*s` to `%s`", (int)len, key,
                  spec->type_str);
}

void rt_register_convert_hooks(void) {
  TVMFFIByteArray col = {"__ffi_convert__", 15};
  for (size_t i = 0; i < RT_N_CONVERTS; ++i) {
    TVMFFIByteArray key = {rt_converts[i].key, strlen(rt_converts[i].key)};
    int32_t ti = -1;
    if (TVMFFITypeKeyToIndex(&key, &ti) != 0) continue;
    rt_convert_index[i] = ti;
    TVMFFIObjectHandle f = NULL;
    if (TVMFFIFunctionCreate((void*)(uintptr_t)i, rt_convert_call, NULL, &f) != 0) continue;
    TVMFFIAny v;
    rt_any_set_obj(&v, f);
    (void)TVMFFITypeRegisterAttr(ti, &col, &v);
    rt_decref(f);
  }
}
