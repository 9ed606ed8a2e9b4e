/* Argument checking for global functions implemented in C: the messages
 * name the signature and the offending argument as the official runtime's
 * do. */
#include <stdio.h>
#include <string.h>

#include "container_internal.h"

const char* rt_b_type_name(const TVMFFIAny* v, size_t* len) {
  return rt_type_key(v->type_index, len);
}

int rt_b_check_nargs(const char* sig, int32_t got, int32_t want) {
  if (got == want) return 0;
  return rt_raise("TypeError",
                  "Mismatched number of arguments when calling: `%s`. Expected %d but got %d "
                  "arguments",
                  sig, (int)want, (int)got);
}

int rt_b_type_error(const char* sig, int32_t i, const char* expected, const TVMFFIAny* got) {
  size_t n = 0;
  const char* name = rt_b_type_name(got, &n);
  return rt_raise("TypeError",
                  "Mismatched type on argument #%d when calling: `%s`. Expected `%s` but got `%.*s`",
                  (int)i, sig, expected, (int)n, name);
}

int rt_b_arg_obj(const TVMFFIAny* args, int32_t i, const char* sig, int32_t type_index,
                 const char* expected, void** out) {
  const TVMFFIAny* a = &args[i];
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj != NULL &&
      (a->type_index == type_index || rt_type_is_instance(a->type_index, type_index))) {
    *out = a->v_obj;
    return 0;
  }
  return rt_b_type_error(sig, i, expected, a);
}

int rt_b_arg_int(const TVMFFIAny* args, int32_t i, const char* sig, int64_t* out) {
  const TVMFFIAny* a = &args[i];
  if (a->type_index == kTVMFFIInt || a->type_index == kTVMFFIBool) {
    *out = a->v_int64;
    return 0;
  }
  return rt_b_type_error(sig, i, "int", a);
}

int rt_b_arg_bool(const TVMFFIAny* args, int32_t i, const char* sig, int* out) {
  const TVMFFIAny* a = &args[i];
  if (a->type_index == kTVMFFIInt || a->type_index == kTVMFFIBool) {
    *out = a->v_int64 != 0;
    return 0;
  }
  return rt_b_type_error(sig, i, "bool", a);
}

int rt_b_arg_str(const TVMFFIAny* args, int32_t i, const char* sig, TVMFFIByteArray* out) {
  if (rt_any_get_bytes(&args[i], 0, out)) return 0;
  return rt_b_type_error(sig, i, "str", &args[i]);
}
