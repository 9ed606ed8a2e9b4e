/* Object types and type attribute columns the official runtime has from
 * start-up, beyond the static ones: enum and reflection types (keys,
 * parents, read-only fields with getters over the official layouts), the
 * attribute columns libraries look up (a library built with the official
 * headers aborts when one it needs is missing), and the __ffi_type_final__
 * marks. Registered in the official order so the indices match too. */
#include <string.h>

#include "internal.h"

enum { F_OBJ, F_ANY, F_I64, F_I32 };

typedef struct {
  const char* name;
  int64_t offset;
  int kind;
} rt_field_spec;

typedef struct {
  const char* key;
  const char* parent; /* NULL: ffi.Object */
  int32_t depth;
  rt_field_spec fields[3];
} rt_type_spec;

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

/* convert.c */
RT_HIDDEN void rt_register_convert_hooks(void);

#define H 24 /* the object header */
static const rt_type_spec rt_types[] = {
    {"ffi.EnumState", NULL, 1,
     {{"entries", H, F_OBJ}, {"indexes", H + 8, F_OBJ}, {"attrs", H + 16, F_OBJ}}},
    {"ffi.Enum", NULL, 1, {{"_int_index", H, F_I64}, {"_str_index", H + 8, F_OBJ}}},
    {"ffi.IntEnum", "ffi.Enum", 2, {{"value", H, F_I64}}},
    {"ffi.StrEnum", "ffi.Enum", 2, {{"value", H + 8, F_OBJ}}},
    {"ffi.reflection.AccessStep", NULL, 1, {{"kind", H, F_I32}, {"key", H + 8, F_ANY}}},
    {"ffi.reflection.AccessPath", NULL, 1,
     {{"parent", H, F_OBJ}, {"step", H + 8, F_OBJ}, {"depth", H + 16, F_I32}}},
    {"ffi.StructuralVisitor", NULL, 1, {{NULL, 0, 0}}},
    {"ffi.VisitErrorContext", NULL, 1,
     {{"reverse_visit_pattern", H, F_OBJ}, {"prev_error_context", H + 8, F_OBJ}}},
    {"ffi.StructuralMutator", NULL, 1, {{NULL, 0, 0}}},
    {"ffi.StructuralKey", NULL, 1, {{"key", H, F_ANY}, {"hash_i64", H + 16, F_I64}}},
};

static const char* const rt_columns[] = {
    "__any_equal__", "__any_hash__", "__data_from_json__", "__data_to_json__",
    "__ffi_compare__", "__ffi_convert__", "__ffi_enum__", "__ffi_eq__", "__ffi_hash__",
    "__ffi_init__", "__ffi_new__", "__ffi_repr__", "__ffi_shallow_copy__",
    "__ffi_type_final__", "__s_equal__", "__s_hash__", "__s_maybe_inplace_mutate__",
    "__s_mutate__", "__s_visit__", "__ffi_convert_type_schema__",
};

static const char* const rt_final_types[] = {
    "ffi.BigInt", "ffi.Module", "ffi.VisitInterrupt", "ffi.EnumState", "ffi.Enum",
    "ffi.IntEnum", "ffi.StrEnum", "ffi.reflection.AccessStep", "ffi.reflection.AccessPath",
    "ffi.StructuralVisitor", "ffi.VisitErrorContext", "ffi.StructuralMutator",
    "ffi.StructuralKey",
};

static TVMFFIByteArray rt_ba(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}

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
  info.size = f->kind == F_ANY ? 16 : f->kind == F_I32 ? 4 : 8;
  info.alignment = f->kind == F_I32 ? 4 : 8;
  info.getter = f->kind == F_OBJ ? get_obj : f->kind == F_ANY ? get_any
                : f->kind == F_I64 ? get_i64 : get_i32;
  info.field_static_type_index = f->kind == F_OBJ ? kTVMFFIObject : f->kind == F_ANY
                                                                       ? kTVMFFIAny
                                                                       : kTVMFFIInt;
  rt_any_set_none(&info.default_value_or_factory);
  return TVMFFITypeRegisterField(ti, &info);
}

RT_INIT(rt_builtin_types_init) {
  for (size_t i = 0; i < sizeof(rt_types) / sizeof(rt_types[0]); ++i) {
    const rt_type_spec* t = &rt_types[i];
    int32_t parent = t->parent ? rt_index_of(t->parent) : kTVMFFIObject;
    TVMFFIByteArray key = rt_ba(t->key);
    int32_t ti = TVMFFITypeGetOrAllocIndex(&key, -1, t->depth, 0, 1, parent);
    if (ti < 0) continue;
    for (int f = 0; f < 3 && t->fields[f].name; ++f) (void)rt_add_field(ti, &t->fields[f]);
  }
  rt_field_spec interrupt_value = {"value", H, F_ANY};
  (void)rt_add_field(kTVMFFIVisitInterrupt, &interrupt_value);
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
  /* registration failures above leave an error behind; start-up has no
   * caller to give it to */
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  rt_decref(err);
}
