/* Reflection builders: globals that make objects and type attribute hooks
 * from the reflected field metadata of a type (the field accessors are in
 * field_accessors.c).
 *
 *  ffi.MakeObjectFromPackedArgs(type, name0, value0, ...) -> object
 *  ffi._RegisterFFIInit(type_index): an __ffi_init__ that binds positional
 *      and keyword (after the KWARGS sentinel) arguments to the fields
 *  ffi._PyClassRegisterTypeAttrColumns(type_index, total_size): that
 *      __ffi_init__ plus __ffi_new__ and __ffi_shallow_copy__ for a type
 *      whose layout was described field by field (Python dataclasses)
 *
 * Field storage of such types: a field of static type Any is a 16-byte Any
 * (or an 8-byte object pointer when its size says so), an object type is
 * an object pointer (NULL = None), anything else is plain bytes. */
#include <string.h>

#include "10_extra/object_build.h"

/* ------------------------------------------------------------------ */
/* ffi.MakeObjectFromPackedArgs                                       */
/* ------------------------------------------------------------------ */

typedef struct {
  void* obj;
  const TVMFFIAny* args;
  int32_t nargs;
  unsigned char* found;
  int32_t type_index;
} packed_ctx;

static int packed_field(const TVMFFIFieldInfo* f, void* ctx_) {
  packed_ctx* c = (packed_ctx*)ctx_;
  for (int32_t i = 1; i + 1 < c->nargs; i += 2) {
    int32_t k = (i - 1) / 2;
    TVMFFIByteArray name;
    if (c->found[k]) continue;
    rt_any_get_bytes(&c->args[i], 0, &name);
    if (name.size == f->name.size && memcmp(name.data, f->name.data, name.size) == 0) {
      if (rt_xb_set_field(f, c->obj, &c->args[i + 1]) != 0) return -1;
      c->found[k] = 1;
      return 0;
    }
  }
  if (f->flags & kTVMFFIFieldFlagBitMaskHasDefault) return rt_xb_set_default(f, c->obj);
  TVMFFIByteArray key = rt_xb_key(c->type_index);
  return rt_raise("TypeError", "Required field `%.*s` not set in type `%.*s`", (int)f->name.size,
                  f->name.data, (int)key.size, key.data);
}

static int g_make_object(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  int32_t ti = -1;
  if (nargs < 1)
    return rt_raise("IndexError", "ffi.MakeObjectFromPackedArgs: the type argument is missing");
  if (args[0].type_index == kTVMFFIInt || args[0].type_index == kTVMFFIBool) {
    ti = (int32_t)args[0].v_int64;
  } else {
    TVMFFIByteArray key;
    if (!rt_any_get_bytes(&args[0], 0, &key)) return rt_xb_cast_fail(&args[0], "str");
    if (rt_xb_type_index(&key, &ti) != 0) return -1;
  }
  if (nargs % 2 != 1)
    return rt_raise("InternalError", "Check failed: (args.size() %% 2 == 1) is false: ");
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
  if (info == NULL) return rt_raise("ValueError", "unknown type index %d", (int)ti);
  for (int32_t i = 1; i < nargs; i += 2) {
    TVMFFIByteArray name;
    if (!rt_any_get_bytes(&args[i], 0, &name)) return rt_xb_cast_fail(&args[i], "str");
  }
  void* obj = NULL;
  if (rt_xb_create_empty(info, &obj) != 0) return -1;
  unsigned char* found = (unsigned char*)calloc((size_t)nargs / 2 + 1, 1);
  if (found == NULL) {
    rt_decref(obj);
    return rt_raise("MemoryError", "out of memory");
  }
  packed_ctx c = {obj, args, nargs, found, ti};
  int rc = rt_xb_each_field(info, packed_field, &c);
  for (int32_t i = 1; rc == 0 && i < nargs; i += 2) {
    if (found[(i - 1) / 2]) continue;
    TVMFFIByteArray name, key = rt_xb_key(ti);
    rt_any_get_bytes(&args[i], 0, &name);
    rc = rt_raise("TypeError", "Type `%.*s` does not have field `%.*s`", (int)key.size, key.data,
                  (int)name.size, name.data);
  }
  free(found);
  if (rc != 0) {
    rt_decref(obj);
    return -1;
  }
  rt_any_set_obj(ret, obj);
  return 0;
}

/* ------------------------------------------------------------------ */
/* the auto-generated __ffi_init__                                    */
/* ------------------------------------------------------------------ */

typedef struct {
  const TVMFFIFieldInfo* info;
  unsigned char init, kw_only, has_default;
} init_field;

typedef struct {
  int32_t type_index;
  init_field* fields;
  size_t n_fields;
  size_t* pos; /* positional order: required fields first, then defaulted */
  size_t n_pos;
} init_info;

static void init_info_free(void* p) {
  init_info* ii = (init_info*)p;
  free(ii->fields);
  free(ii->pos);
  free(ii);
}

static int count_field(const TVMFFIFieldInfo* f, void* ctx) {
  (void)f;
  ++*(size_t*)ctx;
  return 0;
}

static int add_field(const TVMFFIFieldInfo* f, void* ctx) {
  init_info* ii = (init_info*)ctx;
  init_field* e = &ii->fields[ii->n_fields++];
  e->info = f;
  e->init = (f->flags & kTVMFFIFieldFlagBitMaskInitOff) == 0;
  e->kw_only = (f->flags & kTVMFFIFieldFlagBitMaskKwOnly) != 0;
  e->has_default = (f->flags & kTVMFFIFieldFlagBitMaskHasDefault) != 0;
  return 0;
}

static init_info* init_info_new(int32_t ti) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
  if (info == NULL) {
    rt_raise("ValueError", "unknown type index %d", (int)ti);
    return NULL;
  }
  size_t n = 0;
  rt_xb_each_field(info, count_field, &n);
  init_info* ii = (init_info*)calloc(1, sizeof(init_info));
  if (ii) ii->fields = (init_field*)calloc(n ? n : 1, sizeof(init_field));
  if (ii) ii->pos = (size_t*)calloc(n ? n : 1, sizeof(size_t));
  if (ii == NULL || ii->fields == NULL || ii->pos == NULL) {
    if (ii) init_info_free(ii);
    rt_raise("MemoryError", "out of memory");
    return NULL;
  }
  ii->type_index = ti;
  rt_xb_each_field(info, add_field, ii);
  for (int pass = 0; pass < 2; ++pass)
    for (size_t i = 0; i < ii->n_fields; ++i) {
      const init_field* e = &ii->fields[i];
      if (e->init && !e->kw_only && e->has_default == pass) ii->pos[ii->n_pos++] = i;
    }
  return ii;
}

/* Re-raises the pending error of a field setter with the field named:
 * "<type>.__ffi_init__() <what> '<field>':\n  <message, indented>". */
static int rethrow_field(const init_info* ii, size_t fi, const char* what) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) return rt_raise("RuntimeError", "a field setter failed without an error");
  const TVMFFIErrorCell* cell = (const TVMFFIErrorCell*)rt_cell(err);
  char kind[128];
  size_t kn = cell->kind.size < sizeof(kind) - 1 ? cell->kind.size : sizeof(kind) - 1;
  memcpy(kind, cell->kind.data, kn);
  kind[kn] = 0;
  rt_sbuf b;
  rt_sb_init(&b);
  for (size_t i = 0; i < cell->message.size; ++i) {
    char ch = cell->message.data[i];
    rt_sb_append(&b, &ch, 1);
    if (ch == '\n') rt_sb_puts(&b, "  ");
  }
  TVMFFIByteArray key = rt_xb_key(ii->type_index);
  const TVMFFIFieldInfo* f = ii->fields[fi].info;
  int rc = rt_raise(kind, "%.*s.__ffi_init__() %s '%.*s':\n  %.*s", (int)key.size, key.data, what,
                    (int)f->name.size, f->name.data, (int)b.size, b.data ? b.data : "");
  rt_sb_free(&b);
  rt_decref(err);
  return rc;
}

static int bind_args(const init_info* ii, void* obj, const TVMFFIAny* args, int32_t nargs,
                     unsigned char* set) {
  TVMFFIByteArray tk = rt_xb_key(ii->type_index);
  TVMFFIAny kw;
  if (rt_kwargs_object(&kw) != 0) return -1;
  int32_t kw_pos = -1;
  for (int32_t i = 0; i < nargs && kw_pos < 0; ++i)
    if (args[i].type_index >= kTVMFFIStaticObjectBegin && args[i].v_obj == kw.v_obj) kw_pos = i;
  rt_any_release(&kw);
  int32_t n_positional = kw_pos >= 0 ? kw_pos : nargs;
  if ((size_t)n_positional > ii->n_pos)
    return rt_raise("TypeError",
                    "%.*s.__ffi_init__() takes at most %zu positional argument(s), but %d were given",
                    (int)tk.size, tk.data, ii->n_pos, (int)n_positional);
  for (int32_t i = 0; i < n_positional; ++i) {
    size_t fi = ii->pos[i];
    if (rt_xb_set_field(ii->fields[fi].info, obj, &args[i]) != 0) return rethrow_field(ii, fi, "field");
    set[fi] = 1;
  }
  if (kw_pos >= 0) {
    if ((nargs - kw_pos - 1) % 2 != 0)
      return rt_raise("TypeError",
                      "%.*s.__ffi_init__() KWARGS requires an even number of key-value arguments",
                      (int)tk.size, tk.data);
    for (int32_t i = kw_pos + 1; i < nargs; i += 2) {
      TVMFFIByteArray name;
      if (!rt_any_get_bytes(&args[i], 0, &name)) return rt_xb_cast_fail(&args[i], "str");
      size_t fi = ii->n_fields;
      for (size_t j = 0; j < ii->n_fields; ++j) {
        const TVMFFIFieldInfo* f = ii->fields[j].info;
        if (ii->fields[j].init && f->name.size == name.size &&
            memcmp(f->name.data, name.data, name.size) == 0)
          fi = j; /* the last field of that name wins, as a name -> index map */
      }
      if (fi == ii->n_fields)
        return rt_raise("TypeError", "%.*s.__ffi_init__() got an unexpected keyword argument '%.*s'",
                        (int)tk.size, tk.data, (int)name.size, name.data);
      if (set[fi])
        return rt_raise("TypeError", "%.*s.__ffi_init__() got multiple values for argument '%.*s'",
                        (int)tk.size, tk.data, (int)name.size, name.data);
      if (rt_xb_set_field(ii->fields[fi].info, obj, &args[i + 1]) != 0)
        return rethrow_field(ii, fi, "field");
      set[fi] = 1;
    }
  }
  for (size_t fi = 0; fi < ii->n_fields; ++fi) {
    const init_field* e = &ii->fields[fi];
    if (set[fi]) continue;
    if (e->has_default) {
      if (rt_xb_set_default(e->info, obj) != 0) return rethrow_field(ii, fi, "default for field");
    } else if (e->init) {
      return rt_raise("TypeError", "%.*s.__ffi_init__() missing required %sargument: '%.*s'",
                      (int)tk.size, tk.data, e->kw_only ? "keyword-only " : "",
                      (int)e->info->name.size, e->info->name.data);
    }
  }
  return 0;
}

static int init_call(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  const init_info* ii = (const init_info*)self;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ii->type_index);
  void* obj = NULL;
  if (rt_xb_create_empty(info, &obj) != 0) return -1;
  unsigned char* set = (unsigned char*)calloc(ii->n_fields + 1, 1);
  int rc = set ? bind_args(ii, obj, args, nargs, set) : rt_raise("MemoryError", "out of memory");
  free(set);
  if (rc != 0) {
    rt_decref(obj);
    return -1;
  }
  rt_any_set_obj(ret, obj);
  return 0;
}

static int register_attr_fn(int32_t ti, const char* name, void* state, TVMFFISafeCallType call,
                            void (*del)(void*)) {
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(state, call, del, &f) != 0) {
    if (del) del(state);
    return -1;
  }
  TVMFFIAny v;
  rt_any_set_obj(&v, f);
  TVMFFIByteArray col = {name, strlen(name)};
  int rc = TVMFFITypeRegisterAttr(ti, &col, &v);
  rt_decref(f);
  return rc;
}

static int register_init(int32_t ti) {
  init_info* ii = init_info_new(ti);
  if (ii == NULL) return -1;
  return register_attr_fn(ti, "__ffi_init__", ii, init_call, init_info_free);
}

static int g_register_ffi_init(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  static const char sig[] = "ffi._RegisterFFIInit(0: int) -> void";
  int32_t ti;
  if (rt_b_check_nargs(sig, nargs, 1) != 0 || rt_xb_arg_i32(args, 0, sig, &ti) != 0) return -1;
  return register_init(ti);
}

/* ------------------------------------------------------------------ */
/* __ffi_new__ / __ffi_shallow_copy__ for field-described layouts     */
/* ------------------------------------------------------------------ */

enum { K_POD, K_ANY, K_OBJ };
static int storage_kind(const TVMFFIFieldInfo* f) {
  if (f->field_static_type_index == kTVMFFIAny) return f->size == 8 ? K_OBJ : K_ANY;
  return f->field_static_type_index >= kTVMFFIStaticObjectBegin ? K_OBJ : K_POD;
}

static int release_field(const TVMFFIFieldInfo* f, void* obj) {
  char* p = (char*)obj + f->offset;
  int k = storage_kind(f);
  if (k == K_ANY) rt_any_release((TVMFFIAny*)p);
  else if (k == K_OBJ) {
    rt_decref(*(void**)p);
    *(void**)p = NULL;
  }
  return 0;
}

static void pyclass_deleter(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(((TVMFFIObject*)self)->type_index);
    if (info) rt_xb_each_field(info, release_field, self);
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

typedef struct {
  int32_t type_index;
  int32_t total_size;
} layout;

static int new_call(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)args;
  const layout* l = (const layout*)self;
  if (nargs != 0) return rt_b_check_nargs("__ffi_new__() -> ffi.Object", nargs, 0);
  if (l->total_size < (int32_t)sizeof(TVMFFIObject))
    return rt_raise("ValueError", "total_size %d is smaller than the object header", (int)l->total_size);
  void* o = rt_object_alloc((size_t)l->total_size, l->type_index, pyclass_deleter);
  if (o == NULL) return -1; /* zeroed: Any fields None, object fields NULL */
  rt_any_set_obj(ret, o);
  return 0;
}

static int copy_field(const TVMFFIFieldInfo* f, void* ctx) {
  void** pair = (void**)ctx; /* {dst, src} */
  char* dst = (char*)pair[0] + f->offset;
  const char* src = (const char*)pair[1] + f->offset;
  int k = f->field_static_type_index == kTVMFFIAny ? K_ANY
          : f->field_static_type_index >= kTVMFFIStaticObjectBegin ? K_OBJ : K_POD;
  if (k == K_ANY) {
    *(TVMFFIAny*)dst = *(const TVMFFIAny*)src;
    rt_any_retain((TVMFFIAny*)dst);
  } else if (k == K_OBJ) {
    *(void**)dst = *(void* const*)src;
    if (*(void**)dst) rt_incref(*(void**)dst);
  } else if (f->size > 0) {
    memcpy(dst, src, (size_t)f->size);
  }
  return 0;
}

static int copy_call(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  const layout* l = (const layout*)self;
  static const char sig[] = "__ffi_shallow_copy__(0: ffi.Object) -> ffi.Object";
  void* src;
  if (rt_b_check_nargs(sig, nargs, 1) != 0 ||
      rt_b_arg_obj(args, 0, sig, kTVMFFIObject, "ffi.Object", &src) != 0)
    return -1;
  void* o = rt_object_alloc((size_t)l->total_size, l->type_index, pyclass_deleter);
  if (o == NULL) return -1;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(l->type_index);
  void* pair[2] = {o, src};
  if (info) rt_xb_each_field(info, copy_field, pair);
  rt_any_set_obj(ret, o);
  return 0;
}

static int g_pyclass_columns(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  static const char sig[] = "ffi._PyClassRegisterTypeAttrColumns(0: int, 1: int) -> void";
  int32_t ti, size;
  if (rt_b_check_nargs(sig, nargs, 2) != 0 || rt_xb_arg_i32(args, 0, sig, &ti) != 0 ||
      rt_xb_arg_i32(args, 1, sig, &size) != 0)
    return -1;
  if (TVMFFIGetTypeInfo(ti) == NULL) return rt_raise("ValueError", "unknown type index %d", (int)ti);
  if (register_init(ti) != 0) return -1;
  for (int i = 0; i < 2; ++i) {
    layout* l = (layout*)malloc(sizeof(layout));
    if (l == NULL) return rt_raise("MemoryError", "out of memory");
    l->type_index = ti;
    l->total_size = size;
    if (register_attr_fn(ti, i == 0 ? "__ffi_new__" : "__ffi_shallow_copy__", l,
                         i == 0 ? new_call : copy_call, free) != 0)
      return -1;
  }
  return 0;
}

RT_INIT(rt_reflection_builders_init) {
  (void)rt_register_global("ffi.MakeObjectFromPackedArgs", g_make_object);
  (void)rt_register_global("ffi._RegisterFFIInit", g_register_ffi_init);
  (void)rt_register_global("ffi._PyClassRegisterTypeAttrColumns", g_pyclass_columns);
}
