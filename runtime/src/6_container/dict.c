/* The ffi.Dict* global functions: Dicts change in place (map.c keeps the
 * storage); reads share the Map code since the layout is the same. */
#include "container_internal.h"

#define DICT_ARG(sig, n)                                                                      \
  void* d = NULL;                                                                             \
  if (rt_b_check_nargs(sig, nargs, n) ||                                                      \
      rt_b_arg_obj(args, 0, sig, kTVMFFIDict, "ffi.Dict", &d))                                \
    return -1;

static int g_dict(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  if (nargs % 2 != 0)
    return rt_raise("InternalError", "Check failed: args.size() %% 2 == 0 (%d vs. 0) : ",
                    (int)(nargs % 2));
  void* d = rt_dict_new();
  if (d == NULL) return -1;
  for (int32_t i = 0; i < nargs; i += 2) {
    if (rt_dict_set(d, &args[i], &args[i + 1]) != 0) {
      rt_decref(d);
      return -1;
    }
  }
  rt_any_set_obj(ret, d);
  return 0;
}

static int g_size(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  DICT_ARG("ffi.DictSize(0: ffi.Dict) -> int", 1);
  rt_any_set_int(ret, rt_map_size(d));
  return 0;
}

static int g_get_item(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  DICT_ARG("ffi.DictGetItem(0: ffi.Dict, 1: Any) -> Any", 2);
  const TVMFFIAny* v;
  if (rt_map_find(d, &args[1], &v) != 0) return -1;
  if (v == NULL) return rt_raise("KeyError", "key is not in Map");
  *ret = *v;
  rt_any_retain(ret);
  return 0;
}

static int g_get_or_missing(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  DICT_ARG("ffi.DictGetItemOrMissing(0: ffi.Dict, 1: Any) -> Any", 2);
  const TVMFFIAny* v;
  if (rt_map_find(d, &args[1], &v) != 0) return -1;
  if (v == NULL) return rt_missing_object(ret);
  *ret = *v;
  rt_any_retain(ret);
  return 0;
}

static int g_set_item(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  DICT_ARG("ffi.DictSetItem(0: ffi.Dict, 1: Any, 2: Any) -> None", 3);
  return rt_dict_set(d, &args[1], &args[2]);
}

static int g_count(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  DICT_ARG("ffi.DictCount(0: ffi.Dict, 1: Any) -> int", 2);
  const TVMFFIAny* v;
  if (rt_map_find(d, &args[1], &v) != 0) return -1;
  rt_any_set_int(ret, v != NULL);
  return 0;
}

static int g_erase(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  DICT_ARG("ffi.DictErase(0: ffi.Dict, 1: Any) -> None", 2);
  int erased = 0;
  return rt_dict_erase(d, &args[1], &erased);
}

static int g_clear(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  DICT_ARG("ffi.DictClear(0: ffi.Dict) -> None", 1);
  return rt_dict_clear(d);
}

static int g_iter(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  DICT_ARG("ffi.DictForwardIterFunctor(0: ffi.Dict) -> ffi.Function", 1);
  return rt_map_iter_functor(d, ret);
}

RT_INIT(dict_init) {
  rt_register_global("ffi.Dict", g_dict);
  rt_register_global("ffi.DictSize", g_size);
  rt_register_global("ffi.DictGetItem", g_get_item);
  rt_register_global("ffi.DictGetItemOrMissing", g_get_or_missing);
  rt_register_global("ffi.DictSetItem", g_set_item);
  rt_register_global("ffi.DictCount", g_count);
  rt_register_global("ffi.DictErase", g_erase);
  rt_register_global("ffi.DictClear", g_clear);
  rt_register_global("ffi.DictForwardIterFunctor", g_iter);
}
