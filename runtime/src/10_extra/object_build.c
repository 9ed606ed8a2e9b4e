/* Building objects of reflected types from their field metadata (see
 * object_build.h): field walks in ancestor order, creation through the
 * native creator or __ffi_new__, field setters and defaults. */
#include <pthread.h>
#include <string.h>

#include "10_extra/object_build.h"

int rt_xb_each_field(const TVMFFITypeInfo* info, rt_xb_field_fn fn, void* ctx) {
  /* type_ancestors[0] is ffi.Object, which has no fields */
  for (int32_t d = 1; d < info->type_depth; ++d) {
    const TVMFFITypeInfo* a = info->type_ancestors[d];
    for (int32_t i = 0; a != NULL && i < a->num_fields; ++i) {
      int rc = fn(&a->fields[i], ctx);
      if (rc != 0) return rc;
    }
  }
  for (int32_t i = 0; i < info->num_fields; ++i) {
    int rc = fn(&info->fields[i], ctx);
    if (rc != 0) return rc;
  }
  return 0;
}

const TVMFFIAny* rt_xb_column_value(const char* column, int32_t type_index) {
  TVMFFIByteArray name = {column, strlen(column)};
  const TVMFFITypeAttrColumn* c = TVMFFIGetTypeAttrColumn(&name);
  if (c == NULL) return NULL;
  int64_t off = (int64_t)type_index - c->begin_index;
  if (off < 0 || off >= c->size) return NULL;
  const TVMFFIAny* v = &c->data[off];
  return v->type_index == kTVMFFINone ? NULL : v;
}

int rt_xb_call(void* fn, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  rt_any_set_none(ret);
  return TVMFFIFunctionCall(fn, (TVMFFIAny*)args, n, ret);
}

/* Lowest address this thread's recursive walks may reach (0: not known
 * yet, 1: unknown, no check). Per thread, so no shared mutable state. */
static __thread uintptr_t rt_stack_floor;

int rt_xb_stack_low(void) {
  char here;
  if (rt_stack_floor == 0) {
    pthread_attr_t a;
    void* base = NULL;
    size_t size = 0;
    rt_stack_floor = 1;
    if (pthread_getattr_np(pthread_self(), &a) == 0) {
      if (pthread_attr_getstack(&a, &base, &size) == 0 && base != NULL && size > 0) {
        size_t margin = size / 4 < ((size_t)256 << 10) ? size / 4 : ((size_t)256 << 10);
        rt_stack_floor = (uintptr_t)base + margin;
      }
      pthread_attr_destroy(&a);
    }
  }
  return (uintptr_t)&here < rt_stack_floor;
}

int rt_xb_cast_fail(const TVMFFIAny* v, const char* to) {
  size_t n;
  const char* k = rt_type_key(v->type_index, &n);
  return rt_raise("TypeError", "Cannot convert from type `%.*s` to `%s`", (int)n, k, to);
}

int rt_xb_arg_i32(const TVMFFIAny* args, int32_t i, const char* sig, int32_t* out) {
  int64_t v;
  if (rt_b_arg_int(args, i, sig, &v) != 0) return -1;
  *out = (int32_t)v;
  return 0;
}

int rt_xb_type_index(const TVMFFIByteArray* key, int32_t* out) {
  if (TVMFFITypeKeyToIndex(key, out) == 0) return 0;
  TVMFFIObjectHandle e = NULL;
  TVMFFIErrorMoveFromRaised(&e);
  rt_decref(e);
  return rt_raise("InternalError",
                  "Check failed: (it != type_key2index_.end()) is false: Cannot find type `%.*s`",
                  (int)key->size, key->data);
}

int rt_xb_has_creator(const TVMFFITypeInfo* info) {
  if (info->metadata != NULL && info->metadata->creator != NULL) return 1;
  const TVMFFIAny* f = rt_xb_column_value("__ffi_new__", info->type_index);
  return f != NULL && f->type_index == kTVMFFIFunction;
}

int rt_xb_create_empty(const TVMFFITypeInfo* info, void** out) {
  *out = NULL;
  if (info->metadata != NULL && info->metadata->creator != NULL) {
    TVMFFIObjectHandle h = NULL;
    if (info->metadata->creator(&h) != 0) return -1;
    *out = h;
    return 0;
  }
  const TVMFFIAny* f = rt_xb_column_value("__ffi_new__", info->type_index);
  if (f != NULL && f->type_index == kTVMFFIFunction) {
    TVMFFIAny r;
    if (rt_xb_call(f->v_obj, NULL, 0, &r) != 0) return -1;
    if (r.type_index < kTVMFFIStaticObjectBegin || r.v_obj == NULL) {
      size_t n;
      const char* k = rt_type_key(r.type_index, &n);
      rt_any_release(&r);
      return rt_raise("TypeError", "__ffi_new__ returned `%.*s`, not an object", (int)n, k);
    }
    *out = r.v_obj;
    return 0;
  }
  return rt_raise("RuntimeError",
                  "Type `%.*s` does not support reflection creation (no native creator or "
                  "__ffi_new__ type attr)",
                  (int)info->type_key.size, info->type_key.data);
}

int rt_xb_set_field(const TVMFFIFieldInfo* field, void* obj, const TVMFFIAny* value) {
  void* addr = (char*)obj + field->offset;
  if (field->setter == NULL)
    return rt_raise("RuntimeError", "field `%.*s` has no setter", (int)field->name.size,
                    field->name.data);
  if (!(field->flags & kTVMFFIFieldFlagBitSetterIsFunctionObj))
    return ((TVMFFIFieldSetter)field->setter)(addr, value);
  TVMFFIAny args[2];
  args[0].type_index = kTVMFFIOpaquePtr;
  args[0].zero_padding = 0;
  args[0].v_ptr = addr;
  args[1] = *value;
  TVMFFIAny r;
  int rc = rt_xb_call(field->setter, args, 2, &r);
  if (rc == 0) rt_any_release(&r);
  return rc;
}

int rt_xb_set_default(const TVMFFIFieldInfo* field, void* obj) {
  if (!(field->flags & kTVMFFIFieldFlagBitMaskDefaultFromFactory))
    return rt_xb_set_field(field, obj, &field->default_value_or_factory);
  const TVMFFIAny* factory = &field->default_value_or_factory;
  if (factory->type_index != kTVMFFIFunction)
    return rt_raise("TypeError", "the default factory of field `%.*s` is not a Function",
                    (int)field->name.size, field->name.data);
  TVMFFIAny v;
  if (rt_xb_call(factory->v_obj, NULL, 0, &v) != 0) return -1;
  int rc = rt_xb_set_field(field, obj, &v);
  rt_any_release(&v);
  return rc;
}
