/* ffi.SystemLib([prefix]): the library module made of the symbols
 * registered with TVMFFIEnvModRegisterSystemLibSymbol (statically linked
 * code registers its functions that way instead of being dlopened). One
 * module per prefix, kept for the life of the process, as the official
 * runtime keeps them; the module itself lives in 8_module/module.c. */
#include <string.h>

#include "container_internal.h"

/* 8_module/module.c */
RT_HIDDEN int rt_module_system_lib(const char* prefix, size_t n, TVMFFIObjectHandle* out);

static pthread_mutex_t syslib_lock = PTHREAD_MUTEX_INITIALIZER;
static void* syslib_by_prefix; /* Map: prefix -> Module; guarded by syslib_lock */

static int g_system_lib(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  TVMFFIByteArray prefix = {"", 0};
  if (nargs > 0 && !rt_any_get_bytes(&args[0], 0, &prefix)) {
    size_t n;
    const char* k = rt_type_key(args[0].type_index, &n);
    return rt_raise("TypeError", "Cannot convert from type `%.*s` to `str`", (int)n, k);
  }
  TVMFFIAny key;
  if (rt_string_to_any(prefix.data, prefix.size, &key) != 0) return -1;
  pthread_mutex_lock(&syslib_lock);
  int rc = 0;
  if (syslib_by_prefix == NULL) syslib_by_prefix = rt_map_new();
  const TVMFFIAny* hit = NULL;
  if (syslib_by_prefix == NULL || rt_map_find(syslib_by_prefix, &key, &hit) != 0) rc = -1;
  if (rc == 0 && hit != NULL) {
    *ret = *hit;
    rt_any_retain(ret);
  } else if (rc == 0) {
    TVMFFIObjectHandle mod = NULL;
    rc = rt_module_system_lib(prefix.data, prefix.size, &mod);
    if (rc == 0) {
      rt_any_set_obj(ret, mod);
      rc = rt_map_set(&syslib_by_prefix, &key, ret);
      if (rc != 0) rt_any_release(ret);
    }
  }
  pthread_mutex_unlock(&syslib_lock);
  rt_any_release(&key);
  return rc;
}

RT_INIT(rt_system_lib_init) { (void)rt_register_global("ffi.SystemLib", g_system_lib); }
