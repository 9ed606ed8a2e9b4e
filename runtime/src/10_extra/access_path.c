/* Methods of ffi.reflection.AccessPath: building paths step by step
 * (_root, _extend, _attr, _array_item, _map_item and their *_missing
 * forms) and comparing them (_is_prefix_of, _path_equal, _to_steps).
 *
 * Layouts as the official C++ classes (the fields are registered in
 * 9_registry/builtin_types.c):
 *   AccessStep: header, int32 kind, (pad), Any key          (48 bytes)
 *   AccessPath: header, parent (object or NULL), step (object or NULL),
 *               int32 depth                                  (48 bytes)
 * A root path has no parent and no step, depth 0. */
#include <string.h>

#include "10_extra/access_path.h"

typedef struct {
  TVMFFIObject header;
  int32_t kind;
  int32_t pad;
  TVMFFIAny key;
} step_obj;

typedef struct {
  TVMFFIObject header;
  void* parent;
  void* step;
  int32_t depth;
  int32_t pad;
} path_obj;

_Static_assert(sizeof(step_obj) == 48, "AccessStepObj layout");
_Static_assert(sizeof(path_obj) == 48, "AccessPathObj layout");

static int32_t path_type = -1, step_type = -1;

static void step_deleter(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) rt_any_release(&((step_obj*)self)->key);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

static void path_deleter(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    path_obj* p = (path_obj*)self;
    rt_decref(p->parent);
    rt_decref(p->step);
    p->parent = p->step = NULL;
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

/* New path (parent retained, step taken over). */
static int path_new(path_obj* parent, void* step, TVMFFIAny* out) {
  path_obj* p = (path_obj*)rt_object_alloc(sizeof(path_obj), path_type, path_deleter);
  if (p == NULL) {
    rt_decref(step);
    return -1;
  }
  if (parent != NULL) rt_incref(parent);
  p->parent = parent;
  p->step = step;
  p->depth = parent ? parent->depth + 1 : 0;
  rt_any_set_obj(out, p);
  return 0;
}

/* New step (key copied from a view or owned value). */
static step_obj* step_new(int32_t kind, const TVMFFIAny* key) {
  step_obj* s = (step_obj*)rt_object_alloc(sizeof(step_obj), step_type, step_deleter);
  if (s == NULL) return NULL;
  s->kind = kind;
  if (TVMFFIAnyViewToOwnedAny(key, &s->key) != 0) {
    rt_any_set_none(&s->key);
    rt_decref(s);
    return NULL;
  }
  return s;
}

static int step_equal(const step_obj* a, const step_obj* b, int* out) {
  if (a->kind != b->kind) {
    *out = 0;
    return 0;
  }
  return rt_any_equal(&a->key, &b->key, out);
}

static int path_equal(const path_obj* a, const path_obj* b, int* out) {
  *out = 1;
  if (a == b) return 0;
  if (a->depth != b->depth) {
    *out = 0;
    return 0;
  }
  while (a->parent != NULL) {
    if (b->parent == NULL || a->step == NULL || b->step == NULL)
      return rt_raise("InternalError", "malformed AccessPath (a step without its parent)");
    if (step_equal((const step_obj*)a->step, (const step_obj*)b->step, out) != 0) return -1;
    if (!*out) return 0;
    a = (const path_obj*)a->parent;
    b = (const path_obj*)b->parent;
    if (a == b) return 0;
  }
  return 0;
}

int rt_access_path_root(TVMFFIAny* out) { return path_new(NULL, NULL, out); }

int rt_access_path_extend(void* parent, int32_t kind, const TVMFFIAny* key, TVMFFIAny* out) {
  if (parent == NULL || ((TVMFFIObject*)parent)->type_index != path_type)
    return rt_raise("TypeError", "rt_access_path_extend: the parent is not an AccessPath");
  step_obj* s = step_new(kind, key);
  if (s == NULL) return -1;
  return path_new((path_obj*)parent, s, out);
}

/* ---- method bodies: args[0] is self (checked by the caller) ---- */

static const char* const kNames[] = {"_attr", "_array_item", "_map_item",
                                     "_attr_missing", "_array_item_missing", "_map_item_missing"};

#define PATH "ffi.reflection.AccessPath"
/* Signatures as the official typed methods print them in messages. */
static const char* const kStepSigs[] = {
    PATH "._attr(0: " PATH ", 1: str) -> " PATH,
    PATH "._array_item(0: " PATH ", 1: int) -> " PATH,
    PATH "._map_item(0: " PATH ", 1: Any) -> " PATH,
    PATH "._attr_missing(0: " PATH ", 1: str) -> " PATH,
    PATH "._array_item_missing(0: " PATH ", 1: int) -> " PATH,
    PATH "._map_item_missing(0: " PATH ", 1: Any) -> " PATH,
};
static const char kSigRoot[] = PATH "._root() -> " PATH;
static const char kSigExtend[] = PATH "._extend(0: " PATH ", 1: ffi.reflection.AccessStep) -> " PATH;
static const char kSigPrefix[] = PATH "._is_prefix_of(0: " PATH ", 1: " PATH ") -> bool";
static const char kSigEqual[] = PATH "._path_equal(0: " PATH ", 1: " PATH ") -> bool";
static const char kSigSteps[] = PATH "._to_steps(0: " PATH ") -> Array<ffi.reflection.AccessStep>";

static int self_arg(const char* sig, const TVMFFIAny* args, int32_t nargs, int32_t want,
                    path_obj** self) {
  if (rt_b_check_nargs(sig, nargs, want) != 0) return -1;
  return rt_b_arg_obj(args, 0, sig, path_type, PATH, (void**)self);
}

/* One method per step kind: the kind is the function's handle. */
static int m_step(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  int32_t kind = (int32_t)(intptr_t)h;
  const char* sig = kStepSigs[kind];
  path_obj* self;
  if (self_arg(sig, args, nargs, 2, &self) != 0) return -1;
  TVMFFIAny key;
  if (kind == K_ATTR || kind == K_ATTR_MISSING) {
    TVMFFIByteArray s;
    if (rt_b_arg_str(args, 1, sig, &s) != 0) return -1;
    if (rt_string_to_any(s.data, s.size, &key) != 0) return -1;
  } else if (kind == K_ARRAY_ITEM || kind == K_ARRAY_ITEM_MISSING) {
    int64_t i;
    if (rt_b_arg_int(args, 1, sig, &i) != 0) return -1;
    rt_any_set_int(&key, i);
  } else {
    key = args[1];
  }
  step_obj* s = step_new(kind, &key);
  if (kind == K_ATTR || kind == K_ATTR_MISSING) rt_any_release(&key);
  if (s == NULL) return -1;
  return path_new(self, s, ret);
}

static int m_root(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)args;
  if (rt_b_check_nargs(kSigRoot, nargs, 0) != 0) return -1;
  return path_new(NULL, NULL, ret);
}

static int m_extend(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  path_obj* self;
  void* step;
  if (self_arg(kSigExtend, args, nargs, 2, &self) != 0 ||
      rt_b_arg_obj(args, 1, kSigExtend, step_type, "ffi.reflection.AccessStep", &step) != 0)
    return -1;
  rt_incref(step);
  return path_new(self, step, ret);
}

static int m_compare(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  int prefix = h != NULL;
  const char* sig = prefix ? kSigPrefix : kSigEqual;
  path_obj *self, *other;
  if (self_arg(sig, args, nargs, 2, &self) != 0 ||
      rt_b_arg_obj(args, 1, sig, path_type, PATH, (void**)&other) != 0)
    return -1;
  int eq = 0;
  if (prefix) {
    if (self->depth > other->depth) {
      rt_any_set_bool(ret, 0);
      return 0;
    }
    while (other->depth > self->depth) {
      if (other->parent == NULL) return rt_raise("InternalError", "malformed AccessPath depth");
      other = (path_obj*)other->parent;
    }
  }
  if (path_equal(self, other, &eq) != 0) return -1;
  rt_any_set_bool(ret, eq);
  return 0;
}

static int m_to_steps(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  path_obj* self;
  if (self_arg(kSigSteps, args, nargs, 1, &self) != 0) return -1;
  int64_t n = 0;
  for (const path_obj* p = self; p->parent != NULL; p = (const path_obj*)p->parent) ++n;
  rt_array* arr = rt_array_new(n);
  if (arr == NULL) return -1;
  arr->seq.size = n;
  int64_t i = n;
  for (const path_obj* p = self; p->parent != NULL; p = (const path_obj*)p->parent) {
    --i;
    if (p->step == NULL) {
      rt_any_set_none(&arr->items[i]);
      continue;
    }
    rt_incref(p->step);
    rt_any_set_obj(&arr->items[i], p->step);
  }
  rt_any_set_obj(ret, arr);
  return 0;
}

/* {"type_schema": "<schema>"} as the official typed methods carry: params
 * and return given as type-schema JSON fragments. */
static void method_metadata(rt_sbuf* b, const char* ret, const char* p1) {
  rt_sbuf schema;
  rt_sb_init(&schema);
  rt_sb_printf(&schema,
               "{\"type\":\"ffi.Function\",\"named_args\":{\"return\":[%s],\"params\":[%s%s%s]}}",
               ret, p1 ? "{\"type\":\"" PATH "\"}" : "", p1 && *p1 ? "," : "", p1 ? p1 : "");
  rt_sb_puts(b, "{\"type_schema\":");
  rt_sb_json_str(b, schema.data ? schema.data : "", schema.size);
  rt_sb_puts(b, "}");
  rt_sb_free(&schema);
}

/* p1: NULL for a static method (no self), "" for self only, else the
 * schema of the second parameter. */
static void add_method(const char* name, TVMFFISafeCallType fn, void* h, const char* ret,
                       const char* p1) {
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(h, fn, NULL, &f) != 0) return;
  rt_sbuf meta;
  rt_sb_init(&meta);
  method_metadata(&meta, ret, p1);
  TVMFFIMethodInfo m;
  memset(&m, 0, sizeof(m));
  m.name.data = name;
  m.name.size = strlen(name);
  m.metadata.data = meta.data ? meta.data : "";
  m.metadata.size = meta.failed ? 0 : meta.size;
  m.flags = p1 == NULL ? kTVMFFIFieldFlagBitMaskIsStaticMethod : 0;
  rt_any_set_obj(&m.method, f);
  (void)TVMFFITypeRegisterMethod(path_type, &m);
  rt_sb_free(&meta);
  rt_decref(f);
}

/* After the RT_INIT constructors: the types come from builtin_types.c. */
__attribute__((constructor(250))) static void rt_access_path_init(void) {
  TVMFFIByteArray pk = {"ffi.reflection.AccessPath", 25}, sk = {"ffi.reflection.AccessStep", 25};
  if (TVMFFITypeKeyToIndex(&pk, &path_type) != 0 || TVMFFITypeKeyToIndex(&sk, &step_type) != 0) {
    TVMFFIObjectHandle e = NULL;
    TVMFFIErrorMoveFromRaised(&e);
    rt_decref(e);
    return;
  }
#define T_PATH "{\"type\":\"" PATH "\"}"
#define T_STEP "{\"type\":\"ffi.reflection.AccessStep\"}"
  static const char* const kStepParam[] = {
      "{\"type\":\"ffi.String\"}", "{\"type\":\"int\"}", "{\"type\":\"Any\"}",
      "{\"type\":\"ffi.String\"}", "{\"type\":\"int\"}", "{\"type\":\"Any\"}"};
  add_method("_root", m_root, NULL, T_PATH, NULL);
  add_method("_extend", m_extend, NULL, T_PATH, T_STEP);
  for (int k = K_ATTR; k <= K_MAP_ITEM_MISSING; ++k)
    add_method(kNames[k], m_step, (void*)(intptr_t)k, T_PATH, kStepParam[k]);
  add_method("_is_prefix_of", m_compare, (void*)1, "{\"type\":\"bool\"}", T_PATH);
  add_method("_to_steps", m_to_steps, NULL, "{\"type\":\"ffi.Array\",\"args\":[" T_STEP "]}", "");
  add_method("_path_equal", m_compare, NULL, "{\"type\":\"bool\"}", T_PATH);
}
