/* ffi.StructuralKey: a key wrapper that caches the structural hash of what
 * it holds, so that maps keyed by it compare keys structurally. Layout as
 * the official class: header, Any key, int64 hash_i64 (48 bytes). Here: the
 * globals ffi.StructuralKey and ffi.StructuralKeyEqual, the type's
 * __ffi_init__ (method and attribute column) and its native __any_hash__ /
 * __any_equal__ hooks (raw function pointers, the official native-hook
 * convention: operands by address, an Any back holding the result or an
 * Error object). */
#include <string.h>

#include "structural_internal.h"

typedef struct {
  TVMFFIObject header;
  TVMFFIAny key;
  int64_t hash_i64;
} st_key_obj;

_Static_assert(sizeof(st_key_obj) == 48, "StructuralKey layout");

static int32_t st_key_index(void) {
  static int32_t cache = -1;
  int32_t ti = __atomic_load_n(&cache, __ATOMIC_RELAXED);
  if (ti > 0) return ti;
  TVMFFIByteArray k = {"ffi.StructuralKey", strlen("ffi.StructuralKey")};
  if (TVMFFITypeKeyToIndex(&k, &ti) != 0) return -1;
  __atomic_store_n(&cache, ti, __ATOMIC_RELAXED);
  return ti;
}

static void st_key_deleter(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) rt_any_release(&((st_key_obj*)self)->key);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

/* A new StructuralKey of a view argument (converted to an owned value). */
static int st_key_make(const TVMFFIAny* view, TVMFFIAny* ret) {
  int32_t ti = st_key_index();
  if (ti < 0) return -1;
  TVMFFIAny key;
  if (TVMFFIAnyViewToOwnedAny(view, &key) != 0) return -1;
  uint64_t h = 0;
  if (rt_structural_hash(&key, 0, 0, &h) != 0) {
    rt_any_release(&key);
    return -1;
  }
  st_key_obj* o = (st_key_obj*)rt_object_alloc(sizeof(st_key_obj), ti, st_key_deleter);
  if (o == NULL) {
    rt_any_release(&key);
    return -1;
  }
  o->key = key;
  o->hash_i64 = (int64_t)h;
  rt_any_set_obj(ret, o);
  return 0;
}

static const st_key_obj* st_key_of(const TVMFFIAny* v) {
  int32_t ti = st_key_index();
  if (ti < 0 || v->type_index != ti) return NULL;
  return (const st_key_obj*)v->v_obj;
}

/* The official comparison: identical cells, else both keys with the same
 * cached hash and structurally equal content. */
static int st_key_equal(const TVMFFIAny* a, const TVMFFIAny* b, int* out) {
  if (a->type_index == b->type_index && a->zero_padding == b->zero_padding &&
      a->v_int64 == b->v_int64) {
    *out = 1;
    return 0;
  }
  const st_key_obj* x = st_key_of(a);
  const st_key_obj* y = st_key_of(b);
  if (x == NULL) return rt_raise("InternalError", "Check not null: lhs_obj ");
  if (y == NULL) return rt_raise("InternalError", "Check not null: rhs_obj ");
  if (x->hash_i64 != y->hash_i64) {
    *out = 0;
    return 0;
  }
  return rt_structural_equal(&x->key, &y->key, 0, 0, out);
}

static int g_structural_key(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs("ffi.StructuralKey(0: Any) -> ffi.StructuralKey", nargs, 1) != 0) return -1;
  return st_key_make(&args[0], ret);
}

static int g_structural_key_equal(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs("ffi.StructuralKeyEqual(0: Any, 1: Any) -> bool", nargs, 2) != 0) return -1;
  int eq = 0;
  if (st_key_equal(&args[0], &args[1], &eq) != 0) return -1;
  rt_any_set_bool(ret, eq);
  return 0;
}

static int st_key_init(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs("ffi.StructuralKey.__ffi_init__(0: Any) -> ffi.Object", nargs, 1) != 0)
    return -1;
  return st_key_make(&args[0], ret);
}

/* ---- native hooks ---- */
static TVMFFIAny st_native_error(void) {
  TVMFFIAny r;
  rt_any_set_none(&r);
  TVMFFIObjectHandle e = NULL;
  TVMFFIErrorMoveFromRaised(&e);
  if (e != NULL) rt_any_set_obj(&r, e);
  return r;
}

static TVMFFIAny st_native_hash(const TVMFFIAny* v) {
  const st_key_obj* k = st_key_of(v);
  if (k == NULL) {
    (void)rt_raise("InternalError", "Check not null: key_obj ");
    return st_native_error();
  }
  TVMFFIAny r;
  rt_any_set_int(&r, k->hash_i64);
  return r;
}

static TVMFFIAny st_native_equal(const TVMFFIAny* a, const TVMFFIAny* b) {
  int eq = 0;
  if (st_key_equal(a, b, &eq) != 0) return st_native_error();
  TVMFFIAny r;
  rt_any_set_bool(&r, eq);
  return r;
}

static void st_key_register_type(int32_t ti) {
  static const char schema[] =
      "{\"type_schema\":\"{\\\"type\\\":\\\"ffi.Function\\\",\\\"named_args\\\":"
      "{\\\"return\\\":[{\\\"type\\\":\\\"ffi.Object\\\"}],\\\"params\\\":[{\\\"type\\\":"
      "\\\"Any\\\"}]}}\"}";
  static const char doc[] = "Constructor that takes any key and computes its structural hash";
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(NULL, st_key_init, NULL, &f) == 0) {
    TVMFFIMethodInfo m;
    memset(&m, 0, sizeof(m));
    m.name.data = "__ffi_init__";
    m.name.size = strlen("__ffi_init__");
    m.doc.data = doc;
    m.doc.size = strlen(doc);
    m.metadata.data = schema;
    m.metadata.size = strlen(schema);
    m.flags = kTVMFFIFieldFlagBitMaskIsStaticMethod;
    rt_any_set_obj(&m.method, f);
    (void)TVMFFITypeRegisterMethod(ti, &m);
    (void)TVMFFITypeRegisterAttr(ti, &m.name, &m.method);
    rt_decref(f);
  }
  (void)rt_type_set_native_attr(ti, "__any_hash__", (void*)st_native_hash);
  (void)rt_type_set_native_attr(ti, "__any_equal__", (void*)st_native_equal);
}

/* After the type exists (builtin types register at RT_INIT priority 200). */
__attribute__((constructor(201))) static void rt_structural_key_init(void) {
  rt_register_global("ffi.StructuralKey", g_structural_key);
  rt_register_global("ffi.StructuralKeyEqual", g_structural_key_equal);
  int32_t ti = st_key_index();
  if (ti > 0) st_key_register_type(ti);
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  rt_decref(err);
}
