/* Object types and type attribute columns the official runtime has from
 * start-up, beyond the static ones: enum and reflection types (keys,
 * parents, read-only fields with getters over the official layouts), the
 * attribute columns libraries look up (a library built with the official
 * headers aborts when one it needs is missing), and the __ffi_type_final__
 * marks. Registered in the official order so the indices match too. */
#include <string.h>

#include "container_internal.h"


enum { F_OBJ, F_ANY, F_STR, F_I64, F_I32 };

typedef struct {
  const char* name;
  int64_t offset;
  int kind;
} rt_field_spec;


static int get_obj(void* field, TVMFFIAny* out) {
  TVMFFIObject* o = *(TVMFFIObject**)field;
  if (o == NULL) {
    rt_any_set_none(out);
  } else {
    rt_incref(o);
    rt_any_set_obj(out, o);
  }
  return 0;
}
static int get_any(void* field, TVMFFIAny* out) {
  *out = *(const TVMFFIAny*)field;
  rt_any_retain(out);
  return 0;
}
static int get_i64(void* field, TVMFFIAny* out) {
  rt_any_set_int(out, *(const int64_t*)field);
  return 0;
}
static int get_i32(void* field, TVMFFIAny* out) {
  rt_any_set_int(out, *(const int32_t*)field);
  return 0;
}

/* Setters (the official registers one for every field, read-only ones
 * too: creation from field values goes through them). */
static int set_mismatch(const TVMFFIAny* v, const char* to) {
  size_t n;
  const char* k = rt_type_key(v->type_index, &n);
  return rt_raise("TypeError", "Cannot convert from type `%.*s` to `%s`", (int)n, k, to);
}
static int32_t rt_index_of(const char* key);
static int store_obj(void* field, const TVMFFIAny* v) {
  void* old = *(void**)field;
  void* obj = v->type_index == kTVMFFINone ? NULL : v->v_obj;
  if (obj) rt_incref(obj);
  *(void**)field = obj;
  rt_decref(old);
  return 0;
}
/* Optional<ObjectRef> */
static int set_obj(void* field, const TVMFFIAny* v) {
  if (v->type_index != kTVMFFINone && v->type_index < kTVMFFIStaticObjectBegin)
    return set_mismatch(v, "Optional<ffi.Object>");
  return store_obj(field, v);
}
/* Optional<AccessStep> (AccessPath::step) */
static int set_step(void* field, const TVMFFIAny* v) {
  if (v->type_index != kTVMFFINone &&
      v->type_index != rt_index_of("ffi.reflection.AccessStep"))
    return set_mismatch(v, "Optional<ffi.reflection.AccessStep>");
  return store_obj(field, v);
}
static int set_any(void* field, const TVMFFIAny* v) {
  TVMFFIAny owned, old = *(TVMFFIAny*)field;
  if (TVMFFIAnyViewToOwnedAny(v, &owned) != 0) return -1;
  *(TVMFFIAny*)field = owned;
  rt_any_release(&old);
  return 0;
}
static int set_str(void* field, const TVMFFIAny* v) {
  TVMFFIByteArray b;
  if (!rt_any_get_bytes(v, 0, &b)) return set_mismatch(v, "str");
  return set_any(field, v);
}
static int set_i64(void* field, const TVMFFIAny* v) {
  if (v->type_index != kTVMFFIInt && v->type_index != kTVMFFIBool) return set_mismatch(v, "int");
  *(int64_t*)field = v->v_int64;
  return 0;
}
static int set_i32(void* field, const TVMFFIAny* v) {
  if (v->type_index != kTVMFFIInt && v->type_index != kTVMFFIBool) return set_mismatch(v, "int");
  *(int32_t*)field = (int32_t)v->v_int64;
  return 0;
}

/* convert.c */
RT_HIDDEN void rt_register_convert_hooks(void);

#define H 24 /* the object header */
/* Layouts as the official C++ classes lay them out (a String member is a
 * 16-byte Any-like cell). `size` 0: no __ffi_new__ / __ffi_shallow_copy__
 * (the official objects of that type carry C++ state we do not model). */
enum { D_NONE, D_ENUM_STATE, D_VISIT_ERROR };
typedef struct {
  const char* key;
  const char* parent; /* NULL: ffi.Object */
  int32_t depth;
  int32_t size;
  int defaults;
  rt_field_spec fields[3];
} rt_type_spec_ex;

static const rt_type_spec_ex rt_types[] = {
    {"ffi.EnumState", NULL, 1, 48, D_ENUM_STATE,
     {{"entries", H, F_OBJ}, {"indexes", H + 8, F_OBJ}, {"attrs", H + 16, F_OBJ}}},
    {"ffi.Enum", NULL, 1, 48, D_NONE, {{"_int_index", H, F_I64}, {"_str_index", H + 8, F_STR}}},
    {"ffi.IntEnum", "ffi.Enum", 2, 48, D_NONE, {{"value", H, F_I64}}},
    {"ffi.StrEnum", "ffi.Enum", 2, 48, D_NONE, {{"value", H + 8, F_STR}}},
    {"ffi.reflection.AccessStep", NULL, 1, 48, D_NONE,
     {{"kind", H, F_I32}, {"key", H + 8, F_ANY}}},
    {"ffi.reflection.AccessPath", NULL, 1, 48, D_NONE,
     {{"parent", H, F_OBJ}, {"step", H + 8, F_OBJ}, {"depth", H + 16, F_I32}}},
    {"ffi.StructuralVisitor", NULL, 1, 0, D_NONE, {{NULL, 0, 0}}},
    {"ffi.VisitErrorContext", NULL, 1, 40, D_VISIT_ERROR,
     {{"reverse_visit_pattern", H, F_OBJ}, {"prev_error_context", H + 8, F_OBJ}}},
    {"ffi.StructuralMutator", NULL, 1, 0, D_NONE, {{NULL, 0, 0}}},
    {"ffi.StructuralKey", NULL, 1, 48, D_NONE, {{"key", H, F_ANY}, {"hash_i64", H + 16, F_I64}}},
};
#define RT_N_TYPES (sizeof(rt_types) / sizeof(rt_types[0]))
static const rt_type_spec_ex rt_visit_interrupt_spec = {
    "ffi.VisitInterrupt", NULL, 1, 40, D_NONE, {{"value", H, F_ANY}}};
static int32_t rt_type_index_of_spec[RT_N_TYPES];

static const rt_type_spec_ex* rt_spec_of(int32_t type_index) {
  if (type_index == kTVMFFIVisitInterrupt) return &rt_visit_interrupt_spec;
  for (size_t i = 0; i < RT_N_TYPES; ++i)
    if (rt_type_index_of_spec[i] == type_index) return &rt_types[i];
  return NULL;
}

/* The spec of t's parent among ours (inherited fields live there), or NULL. */
static const rt_type_spec_ex* rt_parent_spec(const rt_type_spec_ex* t) {
  for (size_t i = 0; t->parent && i < RT_N_TYPES; ++i)
    if (strcmp(rt_types[i].key, t->parent) == 0) return &rt_types[i];
  return NULL;
}

/* ---- __ffi_new__ / __ffi_shallow_copy__ over those layouts ---- */
static void rt_builtin_deleter(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    const rt_type_spec_ex* own = rt_spec_of(((TVMFFIObject*)self)->type_index);
    const rt_type_spec_ex* t = own ? rt_parent_spec(own) : NULL;
    if (t == NULL) t = own;
    /* the parent's fields cover the child's (a child only renames them) */
    for (int f = 0; t && f < 3 && t->fields[f].name; ++f) {
      char* p = (char*)self + t->fields[f].offset;
      if (t->fields[f].kind == F_OBJ) {
        rt_decref(*(void**)p);
        *(void**)p = NULL;
      } else if (t->fields[f].kind == F_ANY || t->fields[f].kind == F_STR) {
        rt_any_release((TVMFFIAny*)p);
      }
    }
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

/* What a default-constructing Function was made as (its message names it). */
typedef struct {
  const rt_type_spec_ex* spec;
  const char* name; /* "__ffi_new__" or "__ffi_init__" */
} rt_ctor;

static int rt_new_call(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)args;
  const rt_ctor* c = (const rt_ctor*)self;
  const rt_type_spec_ex* t = c->spec;
  if (nargs != 0)
    return rt_raise("TypeError",
                    "Mismatched number of arguments when calling: `%s.%s() -> "
                    "ffi.Object`. Expected 0 but got %d arguments", t->key, c->name, (int)nargs);
  TVMFFIByteArray key = rt_ba(t->key);
  int32_t ti = -1;
  if (TVMFFITypeKeyToIndex(&key, &ti) != 0) return -1;
  char* o = (char*)rt_object_alloc((size_t)t->size, ti, rt_builtin_deleter);
  if (o == NULL) return -1;
  const rt_type_spec_ex* lay = rt_parent_spec(t) ? rt_parent_spec(t) : t;
  for (int f = 0; f < 3 && lay->fields[f].name; ++f)
    if (lay->fields[f].kind == F_STR) /* "" as a small string */
      ((TVMFFIAny*)(o + lay->fields[f].offset))->type_index = kTVMFFISmallStr;
  void* made[3] = {NULL, NULL, NULL};
  if (t->defaults == D_ENUM_STATE) {
    made[0] = rt_list_new(0);
    made[1] = rt_dict_new();
    made[2] = rt_dict_new();
  } else if (t->defaults == D_VISIT_ERROR) {
    made[0] = rt_list_new(0);
  }
  for (int f = 0; f < 3; ++f) {
    if (made[f]) *(void**)(o + t->fields[f].offset) = made[f];
    else if ((t->defaults == D_ENUM_STATE && f < 3) || (t->defaults == D_VISIT_ERROR && f == 0)) {
      rt_decref(o);
      return -1;
    }
  }
  rt_any_set_obj(ret, o);
  return 0;
}

static int rt_copy_call(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  const rt_type_spec_ex* t = (const rt_type_spec_ex*)self;
  if (nargs != 1 || args[0].type_index < kTVMFFIStaticObjectBegin)
    return rt_raise("TypeError", "%s.__ffi_shallow_copy__ expects one object", t->key);
  const char* src = (const char*)args[0].v_obj;
  int32_t ti = args[0].type_index;
  char* o = (char*)rt_object_alloc((size_t)t->size, ti, rt_builtin_deleter);
  if (o == NULL) return -1;
  memcpy(o + H, src + H, (size_t)t->size - H);
  const rt_type_spec_ex* lay = rt_parent_spec(t) ? rt_parent_spec(t) : t;
  for (int f = 0; f < 3 && lay->fields[f].name; ++f) {
    char* p = o + lay->fields[f].offset;
    if (lay->fields[f].kind == F_OBJ && *(void**)p) rt_incref(*(void**)p);
    else if (lay->fields[f].kind == F_ANY || lay->fields[f].kind == F_STR)
      rt_any_retain((TVMFFIAny*)p);
  }
  rt_any_set_obj(ret, o);
  return 0;
}

static rt_ctor rt_new_ctors[RT_N_TYPES + 1];
static rt_ctor rt_init_ctor;

/* EnumState's constructor without arguments: the __ffi_init__ column value
 * and a static method of the same name, as the official registers it. */
static void rt_register_enum_state_init(int32_t ti, const rt_type_spec_ex* t) {
  static const char schema[] =
      "{\"type_schema\":\"{\\\"type\\\":\\\"ffi.Function\\\",\\\"named_args\\\":"
      "{\\\"return\\\":[{\\\"type\\\":\\\"ffi.Object\\\"}],\\\"params\\\":[]}}\"}";
  rt_init_ctor.spec = t;
  rt_init_ctor.name = "__ffi_init__";
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(&rt_init_ctor, rt_new_call, NULL, &f) != 0) return;
  TVMFFIMethodInfo m;
  memset(&m, 0, sizeof(m));
  m.name = rt_ba("__ffi_init__");
  m.metadata = rt_ba(schema);
  m.flags = kTVMFFIFieldFlagBitMaskIsStaticMethod;
  rt_any_set_obj(&m.method, f);
  (void)TVMFFITypeRegisterMethod(ti, &m);
  TVMFFIByteArray col = rt_ba("__ffi_init__");
  (void)TVMFFITypeRegisterAttr(ti, &col, &m.method);
  rt_decref(f);
}

static void rt_register_new_and_copy(int32_t ti, const rt_type_spec_ex* t, size_t slot) {
  if (t->size == 0) return;
  TVMFFIByteArray new_col = rt_ba("__ffi_new__"), copy_col = rt_ba("__ffi_shallow_copy__");
  TVMFFIObjectHandle f = NULL;
  rt_new_ctors[slot].spec = t;
  rt_new_ctors[slot].name = "__ffi_new__";
  if (TVMFFIFunctionCreate(&rt_new_ctors[slot], rt_new_call, NULL, &f) == 0) {
    TVMFFIAny v;
    rt_any_set_obj(&v, f);
    (void)TVMFFITypeRegisterAttr(ti, &new_col, &v);
    rt_decref(f);
  }
  if (TVMFFIFunctionCreate((void*)t, rt_copy_call, NULL, &f) == 0) {
    TVMFFIAny v;
    rt_any_set_obj(&v, f);
    (void)TVMFFITypeRegisterAttr(ti, &copy_col, &v);
    rt_decref(f);
  }
}

static const char* const rt_columns[] = {
    "__any_equal__", "__any_hash__", "__data_from_json__", "__data_to_json__",
    "__ffi_compare__", "__ffi_convert__", "__ffi_enum__", "__ffi_eq__", "__ffi_hash__",
    "__ffi_init__", "__ffi_new__", "__ffi_repr__", "__ffi_shallow_copy__",
    "__ffi_type_final__", "__s_equal__", "__s_hash__", "__s_maybe_inplace_mutate__",
    "__s_mutate__", "__s_visit__",
};

static const char* const rt_final_types[] = {
    "ffi.BigInt", "ffi.Module", "ffi.VisitInterrupt", "ffi.EnumState", "ffi.Enum",
    "ffi.IntEnum", "ffi.StrEnum", "ffi.reflection.AccessStep", "ffi.reflection.AccessPath",
    "ffi.StructuralVisitor", "ffi.VisitErrorContext", "ffi.StructuralMutator",
    "ffi.StructuralKey",
};

static int32_t rt_index_of(const char* key) {
  TVMFFIByteArray b = rt_ba(key);
  int32_t idx = -1;
  return TVMFFITypeKeyToIndex(&b, &idx) == 0 ? idx : -1;
}

static int rt_add_field(int32_t ti, const rt_field_spec* f) {
  TVMFFIFieldInfo info;
  memset(&info, 0, sizeof(info));
  info.name = rt_ba(f->name);
  info.offset = f->offset;
  info.size = (f->kind == F_ANY || f->kind == F_STR) ? 16 : f->kind == F_I32 ? 4 : 8;
  info.alignment = f->kind == F_I32 ? 4 : 8;
  info.getter = f->kind == F_OBJ ? get_obj : (f->kind == F_ANY || f->kind == F_STR) ? get_any
                : f->kind == F_I64 ? get_i64 : get_i32;
  info.setter = (void*)(f->kind == F_OBJ   ? (strcmp(f->name, "step") == 0 ? set_step : set_obj)
                        : f->kind == F_ANY ? set_any
                        : f->kind == F_STR ? set_str
                        : f->kind == F_I64 ? set_i64
                                           : set_i32);
  info.field_static_type_index = f->kind == F_OBJ   ? kTVMFFIObject
                                 : f->kind == F_ANY ? kTVMFFIAny
                                 : f->kind == F_STR ? kTVMFFIStr
                                                    : kTVMFFIInt;
  rt_any_set_none(&info.default_value_or_factory);
  return TVMFFITypeRegisterField(ti, &info);
}

RT_INIT(rt_builtin_types_init) {
  for (size_t i = 0; i < RT_N_TYPES; ++i) {
    const rt_type_spec_ex* t = &rt_types[i];
    int32_t parent = t->parent ? rt_index_of(t->parent) : kTVMFFIObject;
    TVMFFIByteArray key = rt_ba(t->key);
    int32_t ti = TVMFFITypeGetOrAllocIndex(&key, -1, t->depth, 0, 1, parent);
    if (ti < 0) continue;
    rt_type_index_of_spec[i] = ti;
    for (int f = 0; f < 3 && t->fields[f].name; ++f) (void)rt_add_field(ti, &t->fields[f]);
  }
  (void)rt_add_field(kTVMFFIVisitInterrupt, &rt_visit_interrupt_spec.fields[0]);
  TVMFFIAny none;
  rt_any_set_none(&none);
  for (size_t i = 0; i < sizeof(rt_columns) / sizeof(rt_columns[0]); ++i) {
    TVMFFIByteArray name = rt_ba(rt_columns[i]);
    (void)TVMFFITypeRegisterAttr(kTVMFFINone, &name, &none);
  }
  TVMFFIByteArray final_col = rt_ba("__ffi_type_final__");
  TVMFFIAny yes;
  rt_any_set_bool(&yes, 1);
  for (size_t i = 0; i < sizeof(rt_final_types) / sizeof(rt_final_types[0]); ++i) {
    int32_t ti = rt_index_of(rt_final_types[i]);
    if (ti >= 0) (void)TVMFFITypeRegisterAttr(ti, &final_col, &yes);
  }
  rt_register_convert_hooks();
  rt_register_new_and_copy(kTVMFFIVisitInterrupt, &rt_visit_interrupt_spec, RT_N_TYPES);
  for (size_t i = 0; i < RT_N_TYPES; ++i) {
    if (rt_type_index_of_spec[i] <= 0) continue;
    rt_register_new_and_copy(rt_type_index_of_spec[i], &rt_types[i], i);
    if (rt_types[i].defaults == D_ENUM_STATE)
      rt_register_enum_state_init(rt_type_index_of_spec[i], &rt_types[i]);
  }
  /* registration failures above leave an error behind; start-up has no
   * caller to give it to */
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  rt_decref(err);
}
