/* Field accessors for layouts described field by field (Python
 * dataclasses):
 *  ffi.MakeFieldGetter(field_type_index) -> address of a C field getter
 *  ffi.MakeFieldSetter(field_type_index, converter, f_convert) -> Function
 *      that converts a value through f_convert(converter, value, &out)
 *      and stores it in the field at the address it is given
 * Storage by static type: int64, double, bool (1 byte), void*, DLDataType,
 * DLDevice, a 16-byte Any (Any and None), an object pointer (object types,
 * NULL = None). */
#include <string.h>

#include "10_extra/object_build.h"

/* ------------------------------------------------------------------ */
/* field getters and setters                                          */
/* ------------------------------------------------------------------ */

static int get_i64(void* f, TVMFFIAny* out) {
  rt_any_set_int(out, *(const int64_t*)f);
  return 0;
}
static int get_f64(void* f, TVMFFIAny* out) {
  out->type_index = kTVMFFIFloat;
  out->zero_padding = 0;
  out->v_float64 = *(const double*)f;
  return 0;
}
static int get_bool(void* f, TVMFFIAny* out) {
  rt_any_set_bool(out, *(const unsigned char*)f != 0);
  return 0;
}
static int get_ptr(void* f, TVMFFIAny* out) {
  out->type_index = kTVMFFIOpaquePtr;
  out->zero_padding = 0;
  out->v_int64 = 0;
  out->v_ptr = *(void* const*)f;
  return 0;
}
static int get_dtype(void* f, TVMFFIAny* out) {
  out->type_index = kTVMFFIDataType;
  out->zero_padding = 0;
  out->v_int64 = 0;
  memcpy(&out->v_dtype, f, sizeof(DLDataType));
  return 0;
}
static int get_device(void* f, TVMFFIAny* out) {
  out->type_index = kTVMFFIDevice;
  out->zero_padding = 0;
  out->v_int64 = 0;
  memcpy(&out->v_device, f, sizeof(DLDevice));
  return 0;
}
static int get_any(void* f, TVMFFIAny* out) {
  *out = *(const TVMFFIAny*)f;
  rt_any_retain(out);
  return 0;
}
static int get_obj(void* f, TVMFFIAny* out) {
  TVMFFIObject* o = *(TVMFFIObject**)f;
  if (o == NULL) {
    rt_any_set_none(out);
    return 0;
  }
  rt_incref(o);
  rt_any_set_obj(out, o);
  return 0;
}

static TVMFFIFieldGetter getter_for(int32_t ti) {
  switch (ti) {
    case kTVMFFIInt: return get_i64;
    case kTVMFFIFloat: return get_f64;
    case kTVMFFIBool: return get_bool;
    case kTVMFFIOpaquePtr: return get_ptr;
    case kTVMFFIDataType: return get_dtype;
    case kTVMFFIDevice: return get_device;
    case kTVMFFIAny:
    case kTVMFFINone: return get_any;
    default: return ti >= kTVMFFIStaticObjectBegin ? get_obj : NULL;
  }
}

static int g_make_field_getter(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.MakeFieldGetter(0: int) -> int";
  int32_t ti;
  if (rt_b_check_nargs(sig, nargs, 1) != 0 || rt_xb_arg_i32(args, 0, sig, &ti) != 0) return -1;
  TVMFFIFieldGetter g = getter_for(ti);
  if (g == NULL) return rt_raise("ValueError", "Unsupported field type index for getter: %d", (int)ti);
  rt_any_set_int(ret, (int64_t)(intptr_t)g);
  return 0;
}

/* Stores an owned value (consumed) into a field of static type `ti`. */
static int write_field(void* addr, int32_t ti, TVMFFIAny* v) {
  int rc = 0;
  switch (ti) {
    case kTVMFFIInt:
      if (v->type_index == kTVMFFIInt || v->type_index == kTVMFFIBool) *(int64_t*)addr = v->v_int64;
      else rc = rt_xb_cast_fail(v, "int");
      break;
    case kTVMFFIFloat:
      if (v->type_index == kTVMFFIFloat) *(double*)addr = v->v_float64;
      else if (v->type_index == kTVMFFIInt || v->type_index == kTVMFFIBool) *(double*)addr = (double)v->v_int64;
      else rc = rt_xb_cast_fail(v, "float");
      break;
    case kTVMFFIBool:
      if (v->type_index == kTVMFFIInt || v->type_index == kTVMFFIBool) *(unsigned char*)addr = v->v_int64 != 0;
      else rc = rt_xb_cast_fail(v, "bool");
      break;
    case kTVMFFIOpaquePtr:
      if (v->type_index == kTVMFFIOpaquePtr) *(void**)addr = v->v_ptr;
      else if (v->type_index == kTVMFFINone) *(void**)addr = NULL;
      else rc = rt_xb_cast_fail(v, "void*");
      break;
    case kTVMFFIDataType: {
      TVMFFIByteArray s;
      if (v->type_index == kTVMFFIDataType) memcpy(addr, &v->v_dtype, sizeof(DLDataType));
      else if (rt_any_get_bytes(v, 0, &s)) rc = TVMFFIDataTypeFromString(&s, (DLDataType*)addr);
      else rc = rt_xb_cast_fail(v, "DataType");
      break;
    }
    case kTVMFFIDevice:
      if (v->type_index == kTVMFFIDevice) memcpy(addr, &v->v_device, sizeof(DLDevice));
      else rc = rt_xb_cast_fail(v, "Device");
      break;
    default:
      if (ti == kTVMFFIAny || ti == kTVMFFINone) {
        TVMFFIAny old = *(TVMFFIAny*)addr;
        *(TVMFFIAny*)addr = *v;
        rt_any_set_none(v);
        rt_any_release(&old);
      } else if (ti >= kTVMFFIStaticObjectBegin) {
        if (v->type_index != kTVMFFINone && v->type_index < kTVMFFIStaticObjectBegin) {
          rc = rt_xb_cast_fail(v, "ffi.Object");
          break;
        }
        void* old = *(void**)addr;
        *(void**)addr = v->type_index == kTVMFFINone ? NULL : v->v_obj;
        rt_any_set_none(v);
        rt_decref(old);
      } else {
        rc = rt_raise("ValueError", "Unsupported field type index for setter: %d", (int)ti);
      }
  }
  rt_any_release(v);
  return rc;
}

typedef int (*convert_fn)(void* converter, const TVMFFIAny* value, TVMFFIAny* out);
typedef struct {
  int32_t ti;
  void* converter;
  convert_fn convert;
} setter_state;

static int setter_call(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)ret;
  const setter_state* s = (const setter_state*)self;
  if (nargs < 2)
    return rt_raise("IndexError", "a field setter takes (field address, value), got %d argument(s)",
                    (int)nargs);
  void* addr;
  if (args[0].type_index == kTVMFFIOpaquePtr) addr = args[0].v_ptr;
  else if (args[0].type_index == kTVMFFINone) addr = NULL;
  else return rt_xb_cast_fail(&args[0], "void*");
  TVMFFIAny v;
  rt_any_set_none(&v);
  if (s->convert(s->converter, &args[1], &v) != 0) return -1;
  if (addr == NULL) {
    rt_any_release(&v);
    return rt_raise("ValueError", "field setter called with a NULL field address");
  }
  return write_field(addr, s->ti, &v);
}

static int g_make_field_setter(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.MakeFieldSetter(0: int, 1: int, 2: int) -> ffi.Function";
  int32_t ti;
  int64_t conv, fn;
  if (rt_b_check_nargs(sig, nargs, 3) != 0 || rt_xb_arg_i32(args, 0, sig, &ti) != 0 ||
      rt_b_arg_int(args, 1, sig, &conv) != 0 || rt_b_arg_int(args, 2, sig, &fn) != 0)
    return -1;
  if (fn == 0) return rt_raise("ValueError", "ffi.MakeFieldSetter: the convert function is NULL");
  setter_state* s = (setter_state*)malloc(sizeof(setter_state));
  if (s == NULL) return rt_raise("MemoryError", "out of memory");
  s->ti = ti;
  s->converter = (void*)(intptr_t)conv;
  s->convert = (convert_fn)(intptr_t)fn;
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(s, setter_call, free, &f) != 0) {
    free(s);
    return -1;
  }
  rt_any_set_obj(ret, f);
  return 0;
}

RT_INIT(rt_field_accessors_init) {
  (void)rt_register_global("ffi.MakeFieldGetter", g_make_field_getter);
  (void)rt_register_global("ffi.MakeFieldSetter", g_make_field_setter);
}
