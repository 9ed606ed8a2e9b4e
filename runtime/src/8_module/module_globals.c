/* ffi.ModuleGlobalsAdd / ffi.ModuleGlobalsRemove: modules kept alive for the
 * rest of the process (a library whose functions were registered as
 * globals must not be unloaded while those globals exist). */
#include <pthread.h>

#include "container_internal.h"

static pthread_mutex_t rt_mod_globals_lock = PTHREAD_MUTEX_INITIALIZER;
static void* rt_mod_globals; /* a Dict: module -> 1 */

static int g_add(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  static const char sig[] = "ffi.ModuleGlobalsAdd(0: ffi.Module) -> None";
  void* mod = NULL;
  if (rt_b_check_nargs(sig, nargs, 1) ||
      rt_b_arg_obj(args, 0, sig, kTVMFFIModule, "ffi.Module", &mod))
    return -1;
  TVMFFIAny key, one;
  rt_any_set_obj(&key, mod); /* a view: rt_dict_set copies it */
  rt_any_set_int(&one, 1);
  pthread_mutex_lock(&rt_mod_globals_lock);
  if (rt_mod_globals == NULL) rt_mod_globals = rt_dict_new();
  int rc = rt_mod_globals ? rt_dict_set(rt_mod_globals, &key, &one) : -1;
  pthread_mutex_unlock(&rt_mod_globals_lock);
  return rc;
}

static int g_remove(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  static const char sig[] = "ffi.ModuleGlobalsRemove(0: ffi.Module) -> None";
  void* mod = NULL;
  if (rt_b_check_nargs(sig, nargs, 1) ||
      rt_b_arg_obj(args, 0, sig, kTVMFFIModule, "ffi.Module", &mod))
    return -1;
  TVMFFIAny key;
  rt_any_set_obj(&key, mod);
  int erased = 0, rc = 0;
  pthread_mutex_lock(&rt_mod_globals_lock);
  if (rt_mod_globals != NULL) rc = rt_dict_erase(rt_mod_globals, &key, &erased);
  pthread_mutex_unlock(&rt_mod_globals_lock);
  return rc;
}

RT_INIT(rt_module_globals_init) {
  rt_register_global("ffi.ModuleGlobalsAdd", g_add);
  rt_register_global("ffi.ModuleGlobalsRemove", g_remove);
}
