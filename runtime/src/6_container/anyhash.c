/* Hashing and equality of Any values as the official AnyHash / AnyEqual
 * (map keys, Array contains): POD bits, string content, and the custom
 * __ffi_hash__ / __ffi_eq__ hooks of a type when it registered them. */
#include <stdlib.h>
#include <string.h>

#include "container_internal.h"

static uint64_t hash_combine(uint64_t key, uint64_t value) {
  return key ^ (value + 0x9e3779b9u + (key << 6) + (key >> 2));
}

/* Bytes hashed as 64-bit little-endian words mod 2^31-1 (x86/arm: native). */
uint64_t rt_hash_bytes(const char* data, size_t size) {
  const uint64_t mul = 1099511628211ull, mod = 2147483647ull;
  uint64_t r = 0;
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    memcpy(&w, data + i, 8);
    r = (r * mul + w) % mod;
  }
  if (i < size) {
    uint64_t w = 0;
    memcpy(&w, data + i, size - i);
    r = (r * mul + w) % mod;
  }
  return r;
}

static const TVMFFITypeAttrColumn* attr_column(const char* name) {
  TVMFFIByteArray n = {name, strlen(name)};
  return TVMFFIGetTypeAttrColumn(&n);
}

/* The custom entry for `type_index` in a type attribute column, or NULL. */
static const TVMFFIAny* custom_entry(const char* column, int32_t type_index) {
  const TVMFFITypeAttrColumn* c = attr_column(column);
  if (c == NULL) return NULL;
  int64_t off = (int64_t)type_index - c->begin_index;
  if (off < 0 || off >= c->size) return NULL;
  const TVMFFIAny* e = &c->data[off];
  return e->type_index == kTVMFFINone ? NULL : e;
}

/* Calls a custom hook (raw function pointer in the C++ convention, or a
 * Function object) on n operands; *out is its owned result. */
typedef TVMFFIAny (*hook1_fn)(const TVMFFIAny*);
typedef TVMFFIAny (*hook2_fn)(const TVMFFIAny*, const TVMFFIAny*);
static int call_hook(const TVMFFIAny* hook, const TVMFFIAny* a, const TVMFFIAny* b, TVMFFIAny* out) {
  if (hook->type_index == kTVMFFIOpaquePtr) {
    if (hook->v_ptr == NULL) return rt_raise("InternalError", "custom map hook is NULL");
    *out = b ? ((hook2_fn)hook->v_ptr)(a, b) : ((hook1_fn)hook->v_ptr)(a);
    if (out->type_index == kTVMFFIError) {
      TVMFFIErrorSetRaised(out->v_obj);
      rt_any_release(out);
      return -1;
    }
    return 0;
  }
  if (hook->type_index == kTVMFFIFunction) {
    TVMFFIAny args[2];
    args[0] = *a;
    if (b) args[1] = *b;
    rt_any_set_none(out);
    return TVMFFIFunctionCall(hook->v_obj, args, b ? 2 : 1, out);
  }
  return rt_raise("InternalError", "custom map hook has type index %d", (int)hook->type_index);
}

int rt_any_hash(const TVMFFIAny* v, uint64_t* out) {
  int32_t ti = v->type_index;
  const uint64_t mod = 2147483647ull;
  if (ti == kTVMFFISmallStr) {
    *out = hash_combine(kTVMFFIStr, v->v_uint64 % mod);
  } else if (ti == kTVMFFISmallBytes) {
    *out = hash_combine(kTVMFFIBytes, v->v_uint64 % mod);
  } else if (ti == kTVMFFIStr || ti == kTVMFFIBytes) {
    const TVMFFIByteArray* b = (const TVMFFIByteArray*)rt_cell(v->v_obj);
    *out = hash_combine((uint64_t)ti, rt_hash_bytes(b->data, b->size));
  } else {
    if (ti >= kTVMFFIStaticObjectBegin) {
      const TVMFFIAny* hook = custom_entry("__any_hash__", ti);
      if (hook != NULL) {
        TVMFFIAny r;
        if (call_hook(hook, v, NULL, &r) != 0) return -1;
        if (r.type_index != kTVMFFIInt) {
          rt_any_release(&r);
          return rt_raise("TypeError", "__any_hash__ must return an int");
        }
        *out = hash_combine((uint64_t)ti, (uint64_t)r.v_int64);
        return 0;
      }
    }
    *out = hash_combine((uint64_t)(int64_t)ti, v->v_uint64);
  }
  return 0;
}

static int bytes_eq(const char* a, size_t na, const char* b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

int rt_any_equal(const TVMFFIAny* a, const TVMFFIAny* b, int* out) {
  if (memcmp(a, b, sizeof(TVMFFIAny)) == 0) {
    *out = 1;
    return 0;
  }
  *out = 0;
  int32_t ta = a->type_index, tb = b->type_index;
  if (ta == tb) {
    if (ta == kTVMFFIStr || ta == kTVMFFIBytes) {
      const TVMFFIByteArray* x = (const TVMFFIByteArray*)rt_cell(a->v_obj);
      const TVMFFIByteArray* y = (const TVMFFIByteArray*)rt_cell(b->v_obj);
      *out = bytes_eq(x->data, x->size, y->data, y->size);
      return 0;
    }
    if (ta >= kTVMFFIStaticObjectBegin) {
      const TVMFFIAny* hook = custom_entry("__any_equal__", ta);
      if (hook != NULL) {
        TVMFFIAny r;
        if (call_hook(hook, a, b, &r) != 0) return -1;
        if (r.type_index != kTVMFFIBool && r.type_index != kTVMFFIInt) {
          rt_any_release(&r);
          return rt_raise("TypeError", "__any_equal__ must return a bool");
        }
        *out = r.v_int64 != 0;
      }
    }
    return 0;
  }
  /* a heap and an inline string (or bytes) with the same content are equal */
  int str_pair = (ta == kTVMFFIStr && tb == kTVMFFISmallStr) || (ta == kTVMFFISmallStr && tb == kTVMFFIStr);
  int bytes_pair = (ta == kTVMFFIBytes && tb == kTVMFFISmallBytes) ||
                   (ta == kTVMFFISmallBytes && tb == kTVMFFIBytes);
  if (str_pair || bytes_pair) {
    TVMFFIByteArray x, y;
    if (rt_any_get_bytes(a, -1, &x) && rt_any_get_bytes(b, -1, &y)) {
      *out = bytes_eq(x.data, x.size, y.data, y.size);
    }
  }
  return 0;
}
