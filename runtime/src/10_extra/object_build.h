/* Building objects of reflected types from their field metadata: the
 * shared steps of ffi.MakeObjectFromPackedArgs, the auto-generated
 * __ffi_init__ and FromJSONGraph (10_extra/object_build.c). */
#ifndef TVMFFI_RT_OBJECT_BUILD_H_
#define TVMFFI_RT_OBJECT_BUILD_H_

#include "container_internal.h"

/* Calls fn(field, ctx) for every reflected field of `info`: the fields of
 * the ancestors first (root side first), then the type's own. Stops at the
 * first fn that returns non-zero and returns that value. */
typedef int (*rt_xb_field_fn)(const TVMFFIFieldInfo* field, void* ctx);
RT_HIDDEN int rt_xb_each_field(const TVMFFITypeInfo* info, rt_xb_field_fn fn, void* ctx);

/* 1 if the type has a native creator or a Function in __ffi_new__. */
RT_HIDDEN int rt_xb_has_creator(const TVMFFITypeInfo* info);
/* A fresh object of the type (new reference in *out) made by its native
 * creator or its __ffi_new__ Function; RuntimeError when it has neither. */
RT_HIDDEN int rt_xb_create_empty(const TVMFFITypeInfo* info, void** out);

/* Stores `value` in the field of `obj` through the field's setter (a C
 * function or a Function object). Returns the setter's status. */
RT_HIDDEN int rt_xb_set_field(const TVMFFIFieldInfo* field, void* obj, const TVMFFIAny* value);
/* Stores the field's default (its value, or what its factory returns). */
RT_HIDDEN int rt_xb_set_default(const TVMFFIFieldInfo* field, void* obj);

/* The value of `column` for `type_index` (a view into the column), or
 * NULL when the column does not exist or holds None there. */
RT_HIDDEN const TVMFFIAny* rt_xb_column_value(const char* column, int32_t type_index);

/* Type index of a type key; an unknown key raises what the official
 * runtime raises there (an InternalError from its failed check). */
RT_HIDDEN int rt_xb_type_index(const TVMFFIByteArray* key, int32_t* out);

/* Calls a Function object with n arguments; *ret owned. */
RT_HIDDEN int rt_xb_call(void* fn, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret);

/* TypeError "Cannot convert from type `<key of v>` to `<to>`" (the
 * official message of a failed typed cast); returns -1. */
RT_HIDDEN int rt_xb_cast_fail(const TVMFFIAny* v, const char* to);
/* An int32 argument (int or bool) of a C global, as its signature says. */
RT_HIDDEN int rt_xb_arg_i32(const TVMFFIAny* args, int32_t i, const char* sig, int32_t* out);

/* 1 when the calling thread's stack is nearly used up (less than a
 * quarter of it, at most 256 KiB, is left): recursive walks over data
 * stop there with an error instead of overflowing. */
RT_HIDDEN int rt_xb_stack_low(void);

/* Type key of a type index as a NUL-free slice (for messages). */
static inline TVMFFIByteArray rt_xb_key(int32_t type_index) {
  TVMFFIByteArray b;
  b.data = rt_type_key(type_index, &b.size);
  return b;
}

#endif /* TVMFFI_RT_OBJECT_BUILD_H_ */
