/* Shared pieces of the dataclass operations (see dataclass.h): the pointer
 * map, the children of a container or reflected object, attribute columns,
 * field setters and callback Functions. */
#include <string.h>

#include "10_extra/dataclass.h"

/* ---- pointer map ---- */
static size_t dc_slot(const dc_map* m, const void* k1, const void* k2) {
  /* a 64-bit finalizer: object addresses share their low bits */
  uint64_t h = (uint64_t)(uintptr_t)k1 ^ ((uint64_t)(uintptr_t)k2 * 0x9e3779b97f4a7c15ULL);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdULL;
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ULL;
  h ^= h >> 33;
  return (size_t)h & (m->cap - 1);
}

dc_entry* dc_map_find(dc_map* m, const void* k1, const void* k2) {
  if (m->cap == 0) return NULL;
  for (size_t i = dc_slot(m, k1, k2);; i = (i + 1) & (m->cap - 1)) {
    dc_entry* e = &m->e[i];
    if (e->live == 0) return NULL;
    if (e->live == 1 && e->k1 == k1 && e->k2 == k2) return e;
  }
}

/* Rehash into room for 2x the live entries (removed ones are dropped, so a
 * map with many insert/erase pairs does not keep growing). */
static int dc_map_grow(dc_map* m) {
  size_t live = 0, cap = 64;
  for (size_t i = 0; i < m->cap; ++i) live += m->e[i].live == 1;
  while (cap < (live + 1) * 2) cap *= 2;
  dc_entry* e = (dc_entry*)calloc(cap, sizeof(dc_entry));
  if (e == NULL) return rt_raise("MemoryError", "out of memory");
  dc_map old = *m;
  m->e = e;
  m->cap = cap;
  m->used = 0;
  for (size_t i = 0; i < old.cap; ++i) {
    if (old.e[i].live != 1) continue;
    size_t j = dc_slot(m, old.e[i].k1, old.e[i].k2);
    while (m->e[j].live) j = (j + 1) & (cap - 1);
    m->e[j] = old.e[i];
    ++m->used;
  }
  free(old.e);
  return 0;
}

dc_entry* dc_map_put(dc_map* m, const void* k1, const void* k2) {
  dc_entry* e = dc_map_find(m, k1, k2);
  if (e) return e;
  if ((m->used + 1) * 4 > m->cap * 3 && dc_map_grow(m) != 0) return NULL;
  size_t i = dc_slot(m, k1, k2);
  while (m->e[i].live == 1) i = (i + 1) & (m->cap - 1);
  e = &m->e[i];
  if (e->live == 0) ++m->used;
  memset(e, 0, sizeof(*e));
  e->k1 = k1;
  e->k2 = k2;
  e->live = 1;
  rt_any_set_none(&e->any);
  return e;
}

static void dc_entry_clear(dc_entry* e) {
  rt_any_release(&e->any);
  free(e->text);
  e->text = NULL;
}

void dc_map_erase(dc_map* m, const void* k1, const void* k2) {
  dc_entry* e = dc_map_find(m, k1, k2);
  if (e == NULL) return;
  dc_entry_clear(e);
  e->live = 2;
}

void dc_map_free(dc_map* m) {
  for (size_t i = 0; i < m->cap; ++i)
    if (m->e[i].live == 1) dc_entry_clear(&m->e[i]);
  free(m->e);
  m->e = NULL;
  m->cap = m->used = 0;
}

/* ---- children ---- */
void dc_children_free(dc_children* c) {
  for (size_t i = 0; i < c->n; ++i) rt_any_release(&c->items[i]);
  free(c->items);
  free(c->fields);
  memset(c, 0, sizeof(*c));
}

static int dc_reserve(dc_children* c, size_t n, int with_fields) {
  c->items = (TVMFFIAny*)calloc(n ? n : 1, sizeof(TVMFFIAny));
  if (with_fields) c->fields = (const TVMFFIFieldInfo**)calloc(n ? n : 1, sizeof(void*));
  if (c->items == NULL || (with_fields && c->fields == NULL))
    return rt_raise("MemoryError", "out of memory");
  return 0;
}

static void dc_push_copy(dc_children* c, const TVMFFIAny* v) {
  c->items[c->n] = *v;
  rt_any_retain(&c->items[c->n]);
  ++c->n;
}

int dc_children_of(const TVMFFIAny* v, int64_t skip_mask, dc_children* out) {
  memset(out, 0, sizeof(*out));
  void* obj = v->v_obj;
  int32_t ti = ((TVMFFIObject*)obj)->type_index;
  if (ti == kTVMFFIArray || ti == kTVMFFIList) {
    int64_t n = 0;
    const TVMFFIAny* items = rt_seq_items(obj, &n);
    out->kind = DC_SEQ;
    out->size = (size_t)n;
    if (dc_reserve(out, (size_t)n, 0) != 0) return -1;
    for (int64_t i = 0; i < n; ++i) dc_push_copy(out, &items[i]);
    return 0;
  }
  if (ti == kTVMFFIMap || ti == kTVMFFIDict) {
    int64_t n = rt_map_size(obj);
    out->kind = DC_MAP;
    out->size = (size_t)n;
    if (dc_reserve(out, (size_t)n * 2, 0) != 0) return -1;
    for (uint64_t it = rt_map_iter_begin(obj); it != rt_map_iter_end(obj);
         it = rt_map_iter_next(obj, it)) {
      const TVMFFIAny *k, *val;
      rt_map_iter_kv(obj, it, &k, &val);
      if (out->n + 2 > (size_t)n * 2) break;
      dc_push_copy(out, k);
      dc_push_copy(out, val);
    }
    return 0;
  }
  out->kind = DC_OBJ;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
  if (info == NULL) return 0;
  size_t total = (size_t)info->num_fields;
  for (int32_t d = 1; d < info->type_depth; ++d) total += (size_t)info->type_ancestors[d]->num_fields;
  if (dc_reserve(out, total, 1) != 0) return -1;
  for (int32_t d = 1; d <= info->type_depth; ++d) {
    const TVMFFITypeInfo* t = d < info->type_depth ? info->type_ancestors[d] : info;
    for (int32_t i = 0; i < t->num_fields; ++i) {
      const TVMFFIFieldInfo* f = &t->fields[i];
      if (f->flags & skip_mask) continue;
      TVMFFIAny got;
      rt_any_set_none(&got);
      if (f->getter == NULL) {
        return rt_raise("InternalError", "field `%.*s` of `%.*s` has no getter",
                        (int)f->name.size, f->name.data, (int)info->type_key.size,
                        info->type_key.data);
      }
      if (f->getter((char*)obj + f->offset, &got) != 0) return -1;
      out->items[out->n] = got;
      out->fields[out->n] = f;
      ++out->n;
    }
  }
  out->size = out->n;
  return 0;
}

/* ---- helpers ---- */
/* A column, once it exists, keeps its address (its data may move): the
 * lookup by name is done once per process, the pointer published
 * atomically (every thread would find the same one). */
static const TVMFFITypeAttrColumn* dc_columns[DC_N_COLUMNS];
static const char* const dc_column_names[DC_N_COLUMNS] = {
    "__ffi_repr__",         "__ffi_hash__",         "__ffi_eq__",
    "__ffi_compare__",      "__ffi_shallow_copy__", "__data_to_json__"};

const TVMFFIAny* dc_column(int which, int32_t type_index) {
  const TVMFFITypeAttrColumn* col = __atomic_load_n(&dc_columns[which], __ATOMIC_ACQUIRE);
  if (col == NULL) {
    TVMFFIByteArray b = {dc_column_names[which], strlen(dc_column_names[which])};
    col = TVMFFIGetTypeAttrColumn(&b);
    if (col != NULL) __atomic_store_n(&dc_columns[which], col, __ATOMIC_RELEASE);
  }
  if (col == NULL || type_index < col->begin_index || type_index >= col->begin_index + col->size)
    return NULL;
  const TVMFFIAny* v = &col->data[type_index - col->begin_index];
  return v->type_index == kTVMFFINone ? NULL : v;
}

int dc_call(const TVMFFIAny* f, const char* sig, TVMFFIAny* args, int32_t n,
            TVMFFIAny* ret) {
  rt_any_set_none(ret);
  if (f->type_index != kTVMFFIFunction || f->v_obj == NULL) {
    TVMFFIByteArray k = dc_type_key(f->type_index);
    if (sig == NULL)
      return rt_raise("TypeError", "Cannot convert from type `%.*s` to `ffi.Function`",
                      (int)k.size, k.data);
    return rt_raise("TypeError", "Cannot treat type `%.*s` as type `%s`", (int)k.size, k.data,
                    sig);
  }
  return TVMFFIFunctionCall(f->v_obj, args, n, ret);
}

TVMFFIByteArray dc_type_key(int32_t type_index) {
  TVMFFIByteArray b;
  b.data = rt_type_key(type_index, &b.size);
  return b;
}

int dc_own(const TVMFFIAny* view, TVMFFIAny* out) { return TVMFFIAnyViewToOwnedAny(view, out); }

TVMFFIByteArray dc_bytes(const TVMFFIAny* v) {
  TVMFFIByteArray r = {"", 0};
  if (v->type_index == kTVMFFISmallStr || v->type_index == kTVMFFISmallBytes) {
    r.data = v->v_bytes;
    r.size = v->small_str_len;
  } else if (v->type_index == kTVMFFIStr || v->type_index == kTVMFFIBytes) {
    r = *(const TVMFFIByteArray*)rt_cell(v->v_obj);
  }
  return r;
}

int dc_is_enum(int32_t type_index) {
  /* ffi.Enum's index, looked up once (-1: not yet; published atomically) */
  static int32_t enum_index = -1;
  int32_t enum_ti = __atomic_load_n(&enum_index, __ATOMIC_ACQUIRE);
  if (enum_ti < 0) {
    TVMFFIByteArray key = {"ffi.Enum", 8};
    if (TVMFFITypeKeyToIndex(&key, &enum_ti) != 0) {
      TVMFFIObjectHandle err = NULL;
      TVMFFIErrorMoveFromRaised(&err);
      rt_decref(err);
      return 0;
    }
    __atomic_store_n(&enum_index, enum_ti, __ATOMIC_RELEASE);
  }
  return type_index == enum_ti || rt_type_is_instance(type_index, enum_ti);
}

/* A field registered without a setter (our built-in reflection types):
 * stored by its layout, an Any cell, an object pointer or an integer. */
static int dc_store_field(TVMFFIObject* obj, const TVMFFIFieldInfo* f, void* addr,
                          const TVMFFIAny* value) {
  int32_t st = f->field_static_type_index;
  int is_obj = value->type_index >= kTVMFFIStaticObjectBegin;
  if (f->size == 16 && (st == kTVMFFIAny || st == kTVMFFIStr)) {
    TVMFFIAny old = *(TVMFFIAny*)addr, v;
    if (dc_own(value, &v) != 0) return -1;
    *(TVMFFIAny*)addr = v;
    rt_any_release(&old);
    return 0;
  }
  if (f->size == 8 && st >= kTVMFFIStaticObjectBegin &&
      (is_obj || value->type_index == kTVMFFINone)) {
    void* old = *(void**)addr;
    if (is_obj && value->v_obj) rt_incref(value->v_obj);
    *(void**)addr = is_obj ? value->v_obj : NULL;
    rt_decref(old);
    return 0;
  }
  if (st == kTVMFFIInt && (value->type_index == kTVMFFIInt || value->type_index == kTVMFFIBool)) {
    if (f->size == 8) *(int64_t*)addr = value->v_int64;
    else if (f->size == 4) *(int32_t*)addr = (int32_t)value->v_int64;
    else return rt_raise("TypeError", "unsupported field size %lld", (long long)f->size);
    return 0;
  }
  TVMFFIByteArray key = dc_type_key(obj->type_index), got = dc_type_key(value->type_index);
  return rt_raise("TypeError", "cannot set field `%.*s` of `%.*s` to a value of type `%.*s`",
                  (int)f->name.size, f->name.data, (int)key.size, key.data, (int)got.size,
                  got.data);
}

int dc_set_field(TVMFFIObject* obj, const TVMFFIFieldInfo* f, const TVMFFIAny* value) {
  void* addr = (char*)obj + f->offset;
  if (f->setter == NULL) return dc_store_field(obj, f, addr, value);
  if (f->flags & kTVMFFIFieldFlagBitSetterIsFunctionObj) {
    TVMFFIAny args[2];
    rt_any_set_none(&args[0]);
    args[0].type_index = kTVMFFIOpaquePtr;
    args[0].v_ptr = addr;
    args[1] = *value;
    TVMFFIAny fn, ret;
    rt_any_set_obj(&fn, f->setter); /* a view: no reference taken */
    if (dc_call(&fn, NULL, args, 2, &ret) != 0) return -1;
    rt_any_release(&ret);
    return 0;
  }
  return ((TVMFFIFieldSetter)f->setter)(addr, value);
}

int dc_make_callback(void* ctx, TVMFFISafeCallType fn, TVMFFIAny* out) {
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(ctx, fn, NULL, &f) != 0) return -1;
  rt_any_set_obj(out, f);
  return 0;
}

static const void* dc_sentinel(int (*get)(TVMFFIAny*)) {
  TVMFFIAny a;
  if (get(&a) != 0) {
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err);
    rt_decref(err);
    return NULL;
  }
  const void* p = a.v_obj;
  rt_any_release(&a); /* the sentinel itself lives for the whole process */
  return p;
}
const void* dc_missing_ptr(void) { return dc_sentinel(rt_missing_object); }
const void* dc_kwargs_ptr(void) { return dc_sentinel(rt_kwargs_object); }

static void dc_drop_error(void) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  rt_decref(err);
}

void dc_register_global(const char* name, TVMFFISafeCallType fn, int nparams,
                        const char* ret_type) {
  rt_sbuf md;
  rt_sb_init(&md);
  rt_sb_printf(&md,
               "{\"type_schema\":\"{\\\"type\\\":\\\"ffi.Function\\\",\\\"named_args\\\":"
               "{\\\"return\\\":[{\\\"type\\\":\\\"%s\\\"}],\\\"params\\\":[",
               ret_type);
  for (int i = 0; i < nparams; ++i) rt_sb_puts(&md, i ? ",{\\\"type\\\":\\\"Any\\\"}" : "{\\\"type\\\":\\\"Any\\\"}");
  rt_sb_puts(&md, "]}}\"}");
  TVMFFIObjectHandle f = NULL;
  if (md.failed || TVMFFIFunctionCreate(NULL, fn, NULL, &f) != 0) {
    rt_sb_free(&md);
    dc_drop_error();
    return;
  }
  TVMFFIMethodInfo info;
  memset(&info, 0, sizeof(info));
  info.name.data = name;
  info.name.size = strlen(name);
  info.metadata.data = md.data;
  info.metadata.size = md.size;
  rt_any_set_obj(&info.method, f);
  if (TVMFFIFunctionSetGlobalFromMethodInfo(&info, 1) != 0) dc_drop_error();
  rt_decref(f);
  rt_sb_free(&md);
}

void dc_register_attr(const char* type_key, const char* column, TVMFFISafeCallType fn) {
  TVMFFIByteArray key = {type_key, strlen(type_key)};
  int32_t ti = -1;
  TVMFFIObjectHandle f = NULL;
  if (TVMFFITypeKeyToIndex(&key, &ti) != 0 || TVMFFIFunctionCreate(NULL, fn, NULL, &f) != 0) {
    dc_drop_error();
    return;
  }
  TVMFFIByteArray col = {column, strlen(column)};
  TVMFFIAny v;
  rt_any_set_obj(&v, f);
  if (TVMFFITypeRegisterAttr(ti, &col, &v) != 0) dc_drop_error();
  rt_decref(f);
}
