/* Structural mutation: the mutator object (ffi.StructuralMutator) with its
 * variable-remap table, its default mutation (a type's __s_mutate__ /
 * __s_maybe_inplace_mutate__ hook, else a shallow copy of the object with
 * its reflected fields mutated, copy-on-write), the hooks of the built-in
 * containers and immutable leaves, the map (pre/post order) and mutate
 * engines driven by callback tables, and the globals ffi.StructuralMap /
 * ffi.StructuralMutate / ffi.StructuralMutator*.
 *
 * In-place permission: a value may be changed in place only when the caller
 * allows it (mode ALLOW along the whole path from the root) and the value
 * is uniquely owned (strong and weak count one) when it is reached. */
#include <string.h>

#include "structural_visit.h"

enum { SM_DISALLOW = 0, SM_ALLOW = 1 };
enum { SM_MAP_PRE, SM_MAP_POST, SM_MUTATE };

typedef struct {
  TVMFFIObject* key; /* NULL: empty slot (keys are never removed) */
  TVMFFIAny value;
} sm_slot;

typedef struct {
  rt_sv_head head;
  int32_t engine;
  int32_t depth;
  void* callbacks;      /* map: (type, fn); mutate: (type, fn, takes mode) */
  void* callbacks_kind; /* map: callbacks also given the region kind */
  sm_slot* remap;       /* open addressing on the key's address */
  size_t remap_cap;     /* a power of two, or 0 */
  size_t remap_size;
} sm_mutator;

static TVMFFIAny sm_owned(const TVMFFIAny* v) {
  TVMFFIAny out;
  if (TVMFFIAnyViewToOwnedAny(v, &out) != 0) return rt_sv_take_raised();
  return out;
}

/* ---- dispatch through any mutator's vtable (ours or a C++ engine's) ---- */
static const rt_sv_mutate_vtable* sm_vt(void* m) {
  return (const rt_sv_mutate_vtable*)((rt_sv_head*)m)->vtable;
}

/* The official MutateExpected: in-place dispatch only for a unique value. */
static TVMFFIAny sm_mutate(void* m, TVMFFIAny value, int mode) {
  if (mode == SM_ALLOW && rt_sv_unique(&value)) return sm_vt(m)->maybe_inplace_mutate(m, value);
  return sm_vt(m)->mutate(m, value);
}

/* ---- columns ---- */
static const TVMFFIAny* sm_attr(const TVMFFITypeAttrColumn** cache, const char* name,
                                int32_t type_index) {
  static const TVMFFIAny none = {kTVMFFINone, {0}, {0}};
  const TVMFFITypeAttrColumn* c = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (c == NULL) {
    TVMFFIByteArray b = rt_ba(name);
    c = TVMFFIGetTypeAttrColumn(&b);
    if (c == NULL) return &none;
    __atomic_store_n(cache, c, __ATOMIC_RELEASE);
  }
  if (type_index < 0 || type_index >= c->size) return &none;
  return &c->data[type_index];
}
static const TVMFFITypeAttrColumn *sm_mutate_col, *sm_inplace_col, *sm_copy_col;

/* ---- reflected fields: shallow copy, then mutate each field ---- */
static TVMFFIAny sm_mutate_fields(rt_sv_head* m, TVMFFIAny value) {
  const TVMFFIAny* copy_fn = sm_attr(&sm_copy_col, "__ffi_shallow_copy__", value.type_index);
  if (copy_fn->type_index != kTVMFFIFunction)
    return rt_sv_error("TypeError", "__ffi_shallow_copy__ must be an ffi.Function");
  TVMFFIAny copy = rt_sv_call(copy_fn->v_obj, &value, 1);
  if (copy.type_index == kTVMFFIError) return copy;
  if (copy.type_index < kTVMFFIStaticObjectBegin || copy.type_index != value.type_index ||
      copy.v_obj == value.v_obj) {
    rt_any_release(&copy);
    return rt_sv_error("TypeError",
                       "Shallow copy callback must return a distinct object with the same type "
                       "as its input");
  }
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(copy.type_index);
  int32_t saved = m->region;
  int clamp = saved == kTVMFFIDefRegionKindSimple && info->metadata != NULL &&
              info->metadata->structural_eq_hash_kind == kTVMFFISEqHashKindFreeVar;
  if (clamp) m->region = kTVMFFIDefRegionKindNone;
  TVMFFIAny err = rt_sv_none();
  int changed = 0;
  for (int32_t level = 1; level <= info->type_depth && err.type_index == kTVMFFINone; ++level) {
    const TVMFFITypeInfo* t = level < info->type_depth ? info->type_ancestors[level] : info;
    for (int32_t f = 0; f < t->num_fields && err.type_index == kTVMFFINone; ++f) {
      const TVMFFIFieldInfo* fi = &t->fields[f];
      if (fi->flags & kTVMFFIFieldFlagBitMaskSEqHashIgnore) continue;
      void* addr = (char*)copy.v_obj + fi->offset;
      TVMFFIAny fv;
      rt_any_set_none(&fv);
      if (fi->getter(addr, &fv) != 0) {
        err = rt_sv_take_raised();
        break;
      }
      int32_t before = m->region;
      if (before != kTVMFFIDefRegionKindPattern) {
        if (fi->flags & kTVMFFIFieldFlagBitMaskSEqHashDefSimple)
          m->region = kTVMFFIDefRegionKindSimple;
        else if (fi->flags & kTVMFFIFieldFlagBitMaskSEqHashDefPattern)
          m->region = kTVMFFIDefRegionKindPattern;
      }
      TVMFFIAny nv = sm_mutate(m, fv, SM_DISALLOW);
      m->region = before;
      if (nv.type_index == kTVMFFIError) {
        err = nv;
      } else if (nv.type_index != kTVMFFIUnchanged && !rt_sv_same(&fv, &nv)) {
        if (fi->setter == NULL) {
          size_t klen = info->type_key.size;
          err = rt_sv_error("TypeError",
                            "Cannot structurally mutate field `%.*s` of type `%.*s` because it "
                            "does not define a setter",
                            (int)fi->name.size, fi->name.data, (int)klen, info->type_key.data);
        } else {
          int rc;
          if (fi->flags & kTVMFFIFieldFlagBitSetterIsFunctionObj) {
            TVMFFIAny sargs[2];
            sargs[0].type_index = kTVMFFIOpaquePtr;
            sargs[0].zero_padding = 0;
            sargs[0].v_int64 = 0;
            sargs[0].v_ptr = addr;
            sargs[1] = nv;
            TVMFFIAny sret;
            rt_any_set_none(&sret);
            rc = TVMFFIFunctionCall((TVMFFIObjectHandle)fi->setter, sargs, 2, &sret);
            if (rc == 0) rt_any_release(&sret);
          } else {
            rc = ((TVMFFIFieldSetter)fi->setter)(addr, &nv);
          }
          if (rc != 0) err = rt_sv_take_raised();
          else changed = 1;
        }
        if (nv.type_index != kTVMFFIError) rt_any_release(&nv);
      } else {
        rt_any_release(&nv);
      }
      rt_any_release(&fv);
    }
  }
  if (clamp) m->region = saved;
  if (err.type_index != kTVMFFINone) {
    rt_any_release(&copy);
    return err;
  }
  if (!changed) {
    rt_any_release(&copy);
    return rt_sv_unchanged();
  }
  return copy;
}

/* The official DefaultMutateRaw: the __s_mutate__ hook, else a plain value
 * as itself, else (objects) the remap for FreeVar/DAG identities and the
 * reflected fields. */
static TVMFFIAny sm_default_mutate(rt_sv_head* m, TVMFFIAny value) {
  const TVMFFIAny* attr = sm_attr(&sm_mutate_col, "__s_mutate__", value.type_index);
  TVMFFIAny r;
  if (attr->type_index == kTVMFFIOpaquePtr) {
    r = ((TVMFFIAny(*)(void*, TVMFFIAny))attr->v_ptr)(m, value);
  } else if (attr->type_index == kTVMFFIFunction) {
    TVMFFIAny args[2];
    rt_any_set_obj(&args[0], m);
    args[1] = value;
    r = rt_sv_call(attr->v_obj, args, 2);
  } else if (attr->type_index != kTVMFFINone) {
    r = rt_sv_error("TypeError", "__s_mutate__ must be a direct hook pointer or ffi.Function");
  } else if (value.type_index < kTVMFFIStaticObjectBegin) {
    return sm_owned(&value);
  } else {
    const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(value.type_index);
    int32_t kind = info && info->metadata ? info->metadata->structural_eq_hash_kind
                                          : kTVMFFISEqHashKindUnsupported;
    int is_var = kind == kTVMFFISEqHashKindFreeVar, is_dag = kind == kTVMFFISEqHashKindDAGNode;
    r = rt_sv_none();
    if (is_var || is_dag) {
      r = sm_vt(m)->var_remap_get(m, value);
      if (r.type_index != kTVMFFINone) goto done;
    }
    if (is_var && m->region == kTVMFFIDefRegionKindNone) return rt_sv_unchanged();
    r = sm_mutate_fields(m, value);
    if (r.type_index != kTVMFFIError && (is_var || is_dag) &&
        (is_dag || m->region == kTVMFFIDefRegionKindPattern ||
         r.type_index != kTVMFFIUnchanged)) {
      TVMFFIAny s = sm_vt(m)->var_remap_set(m, value, r);
      if (s.type_index == kTVMFFIError) {
        rt_any_release(&r);
        r = s;
      } else {
        rt_any_release(&s);
      }
    }
  }
done:
  if (r.type_index == kTVMFFIError) rt_sv_attach_context(&r, &value);
  return r;
}

static TVMFFIAny sm_default_inplace(rt_sv_head* m, TVMFFIAny value) {
  const TVMFFIAny* attr =
      sm_attr(&sm_inplace_col, "__s_maybe_inplace_mutate__", value.type_index);
  TVMFFIAny r;
  if (attr->type_index == kTVMFFIOpaquePtr) {
    r = ((TVMFFIAny(*)(void*, TVMFFIAny))attr->v_ptr)(m, value);
  } else if (attr->type_index == kTVMFFIFunction) {
    TVMFFIAny args[2];
    rt_any_set_obj(&args[0], m);
    args[1] = value;
    r = rt_sv_call(attr->v_obj, args, 2);
  } else {
    return sm_default_mutate(m, value);
  }
  if (r.type_index == kTVMFFIError) rt_sv_attach_context(&r, &value);
  return r;
}

static TVMFFIAny sm_default(rt_sv_head* m, TVMFFIAny value, int mode) {
  return mode == SM_ALLOW ? sm_default_inplace(m, value) : sm_default_mutate(m, value);
}

/* ---- hooks of the built-in containers and leaves ---- */
static TVMFFIAny sm_hook_leaf(void* m, TVMFFIAny value) {
  (void)m;
  (void)value;
  return rt_sv_unchanged();
}

/* Copy-on-write: the source is kept; a new container from the first change. */
static TVMFFIAny sm_hook_seq(void* m, TVMFFIAny value) {
  int is_list = value.type_index == kTVMFFIList;
  int64_t n = 0;
  const TVMFFIAny* items = rt_seq_items(value.v_obj, &n);
  int64_t i = 0;
  TVMFFIAny first = rt_sv_unchanged();
  for (; i < n; ++i) {
    first = sm_mutate(m, items[i], SM_DISALLOW);
    if (first.type_index == kTVMFFIError) return first;
    items = rt_seq_items(value.v_obj, &n);
    if (first.type_index != kTVMFFIUnchanged && !rt_sv_same(&first, &items[i])) break;
    rt_any_release(&first);
  }
  if (i >= n) return rt_sv_unchanged();
  void* out = is_list ? rt_list_new(n) : (void*)rt_array_new(n);
  if (out == NULL) {
    rt_any_release(&first);
    return rt_sv_take_raised();
  }
  TVMFFIAny result;
  rt_any_set_obj(&result, out);
  for (int64_t k = 0; k < n; ++k) {
    TVMFFIAny item;
    if (k < i) {
      item = items[k];
      rt_any_retain(&item);
    } else if (k == i) {
      item = first;
    } else {
      item = sm_mutate(m, items[k], SM_DISALLOW);
      if (item.type_index == kTVMFFIError) {
        rt_any_release(&result);
        return item;
      }
      items = rt_seq_items(value.v_obj, &n);
      if (item.type_index == kTVMFFIUnchanged) {
        item = items[k];
        rt_any_retain(&item);
      }
    }
    if (is_list) {
      int rc = rt_list_append(out, &item);
      rt_any_release(&item);
      if (rc != 0) {
        rt_any_release(&result);
        return rt_sv_take_raised();
      }
    } else {
      rt_array_push_move((rt_array*)out, &item);
    }
  }
  return result;
}

/* In place: each changed element is replaced in the source itself. */
static TVMFFIAny sm_hook_seq_inplace(void* m, TVMFFIAny value) {
  int64_t n = 0;
  (void)rt_seq_items(value.v_obj, &n);
  for (int64_t i = 0; i < n; ++i) {
    TVMFFIAny* items = (TVMFFIAny*)rt_seq_items(value.v_obj, &n);
    if (i >= n) break;
    TVMFFIAny nv = sm_mutate(m, items[i], SM_ALLOW);
    if (nv.type_index == kTVMFFIError) return nv;
    items = (TVMFFIAny*)rt_seq_items(value.v_obj, &n);
    if (i < n && nv.type_index != kTVMFFIUnchanged && !rt_sv_same(&nv, &items[i])) {
      TVMFFIAny old = items[i];
      items[i] = nv;
      rt_any_release(&old);
    } else {
      rt_any_release(&nv);
    }
    (void)rt_seq_items(value.v_obj, &n);
  }
  return rt_sv_unchanged();
}

/* Map and Dict values (keys are anchors): copy-on-write rebuilds the
 * container in the source's (insertion) order from the first change. */
static TVMFFIAny sm_hook_map(void* m, TVMFFIAny value) {
  int is_dict = value.type_index == kTVMFFIDict;
  void* src = value.v_obj;
  uint64_t end = rt_map_iter_end(src);
  uint64_t it = rt_map_iter_begin(src);
  TVMFFIAny first = rt_sv_unchanged();
  for (; it != end; it = rt_map_iter_next(src, it)) {
    const TVMFFIAny *k = NULL, *v = NULL;
    rt_map_iter_kv(src, it, &k, &v);
    first = sm_mutate(m, *v, SM_DISALLOW);
    if (first.type_index == kTVMFFIError) return first;
    if (first.type_index != kTVMFFIUnchanged && !rt_sv_same(&first, v)) break;
    rt_any_release(&first);
  }
  if (it == end) return rt_sv_unchanged();
  void* out = is_dict ? rt_dict_new() : rt_map_new();
  if (out == NULL) {
    rt_any_release(&first);
    return rt_sv_take_raised();
  }
  TVMFFIAny err = rt_sv_none();
  int reached = 0;
  for (uint64_t j = rt_map_iter_begin(src); j != end; j = rt_map_iter_next(src, j)) {
    const TVMFFIAny *k = NULL, *v = NULL;
    rt_map_iter_kv(src, j, &k, &v);
    TVMFFIAny nv;
    if (j == it) {
      nv = first;
      reached = 1;
    } else if (!reached) {
      nv = *v;
      rt_any_retain(&nv);
    } else {
      nv = sm_mutate(m, *v, SM_DISALLOW);
      if (nv.type_index == kTVMFFIError) {
        err = nv;
        break;
      }
      if (nv.type_index == kTVMFFIUnchanged) {
        nv = *v;
        rt_any_retain(&nv);
      }
    }
    int rc = is_dict ? rt_dict_set(out, k, &nv) : rt_map_set(&out, k, &nv);
    rt_any_release(&nv);
    if (rc != 0) {
      err = rt_sv_take_raised();
      break;
    }
  }
  if (!reached) rt_any_release(&first);
  if (err.type_index != kTVMFFINone) {
    rt_decref(out);
    return err;
  }
  TVMFFIAny result;
  rt_any_set_obj(&result, out);
  return result;
}

static TVMFFIAny sm_hook_map_inplace(void* m, TVMFFIAny value) {
  void* src = value.v_obj;
  for (uint64_t it = rt_map_iter_begin(src); it != rt_map_iter_end(src);
       it = rt_map_iter_next(src, it)) {
    const TVMFFIAny *k = NULL, *v = NULL;
    rt_map_iter_kv(src, it, &k, &v);
    TVMFFIAny nv = sm_mutate(m, *v, SM_ALLOW);
    if (nv.type_index == kTVMFFIError) return nv;
    if (nv.type_index != kTVMFFIUnchanged && !rt_sv_same(&nv, v)) {
      TVMFFIAny* slot = (TVMFFIAny*)v;
      TVMFFIAny old = *slot;
      *slot = nv;
      rt_any_release(&old);
    } else {
      rt_any_release(&nv);
    }
  }
  return rt_sv_unchanged();
}

/* ---- the variable-remap table of our mutator ---- */
static size_t sm_hash_ptr(const void* p, size_t cap) {
  uint64_t x = (uint64_t)(uintptr_t)p;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  return (size_t)x & (cap - 1);
}

static sm_slot* sm_find_slot(sm_mutator* s, const TVMFFIObject* key) {
  if (s->remap_cap == 0) return NULL;
  for (size_t i = sm_hash_ptr(key, s->remap_cap);; i = (i + 1) & (s->remap_cap - 1)) {
    if (s->remap[i].key == key || s->remap[i].key == NULL) return &s->remap[i];
  }
}

static int sm_grow(sm_mutator* s) {
  size_t cap = s->remap_cap ? s->remap_cap * 2 : 16;
  sm_slot* slots = (sm_slot*)calloc(cap, sizeof(sm_slot));
  if (slots == NULL) return rt_raise("MemoryError", "structural mutate: out of memory");
  sm_slot* old = s->remap;
  size_t old_cap = s->remap_cap;
  s->remap = slots;
  s->remap_cap = cap;
  for (size_t i = 0; i < old_cap; ++i)
    if (old[i].key) *sm_find_slot(s, old[i].key) = old[i];
  free(old);
  return 0;
}

static TVMFFIAny sm_key_error(void) {
  return rt_sv_error("TypeError", "Variable-remap key must be an object-backed value");
}

static TVMFFIAny sm_remap_get(void* self, TVMFFIAny var) {
  sm_mutator* s = (sm_mutator*)self;
  if (var.type_index < kTVMFFIStaticObjectBegin) return sm_key_error();
  sm_slot* slot = sm_find_slot(s, var.v_obj);
  if (slot == NULL || slot->key == NULL) return rt_sv_none();
  TVMFFIAny out = slot->value;
  rt_any_retain(&out);
  return out;
}

static TVMFFIAny sm_remap_set(void* self, TVMFFIAny var, TVMFFIAny mapped) {
  sm_mutator* s = (sm_mutator*)self;
  if (var.type_index < kTVMFFIStaticObjectBegin) return sm_key_error();
  TVMFFIAny owned = mapped; /* the Unchanged marker and plain values copy as they are */
  if (mapped.type_index >= kTVMFFIStaticObjectBegin || mapped.type_index == kTVMFFIRawStr ||
      mapped.type_index == kTVMFFIByteArrayPtr || mapped.type_index == kTVMFFIObjectRValueRef) {
    owned = sm_owned(&mapped);
    if (owned.type_index == kTVMFFIError && mapped.type_index != kTVMFFIError) return owned;
  }
  if ((s->remap_size + 1) * 4 > s->remap_cap * 3 && sm_grow(s) != 0) {
    rt_any_release(&owned);
    return rt_sv_take_raised();
  }
  sm_slot* slot = sm_find_slot(s, var.v_obj);
  if (slot->key == NULL) {
    rt_incref(var.v_obj);
    slot->key = var.v_obj;
    ++s->remap_size;
  } else {
    rt_any_release(&slot->value);
  }
  slot->value = owned;
  return rt_sv_none();
}

/* ---- engines ---- */
static void* sm_find(sm_mutator* s, int32_t type_index, int* extra) {
  void* tables[2] = {s->callbacks, s->callbacks_kind};
  for (int t = 0; t < 2; ++t) {
    if (tables[t] == NULL) continue;
    int64_t n = rt_sv_table_size(tables[t]);
    for (int64_t k = 0; k < n; ++k) {
      int32_t ti = 0;
      void* fn = NULL;
      int flag = 0;
      rt_sv_table_entry(tables[t], k, &ti, &fn, &flag);
      if (rt_sv_type_match(type_index, ti)) {
        *extra = s->engine == SM_MUTATE ? flag : t == 1;
        return fn;
      }
    }
  }
  return NULL;
}

/* A map callback on `v`: its value, Unchanged, or an Error (context named). */
static TVMFFIAny sm_map_link(sm_mutator* s, void* fn, int with_kind, TVMFFIAny v) {
  TVMFFIAny args[2];
  args[0] = v;
  rt_any_set_int(&args[1], s->head.region);
  TVMFFIAny r = rt_sv_call(fn, args, with_kind ? 2 : 1);
  if (r.type_index == kTVMFFIError) rt_sv_attach_context(&r, &v);
  return r;
}

static TVMFFIAny sm_engine_run(sm_mutator* s, TVMFFIAny value, int mode) {
  rt_sv_head* m = &s->head;
  int extra = 0;
  if (s->engine == SM_MUTATE) {
    void* fn = sm_find(s, value.type_index, &extra);
    if (fn == NULL) return sm_default(m, value, mode);
    TVMFFIAny args[3];
    args[0] = value;
    rt_any_set_obj(&args[1], s);
    rt_any_set_int(&args[2], mode);
    TVMFFIAny r = rt_sv_call(fn, args, extra ? 3 : 2);
    if (r.type_index == kTVMFFIError) rt_sv_attach_context(&r, &value);
    return r;
  }
  if (s->engine == SM_MAP_POST) {
    TVMFFIAny out = sm_default(m, value, mode);
    if (out.type_index == kTVMFFIError) return out;
    TVMFFIAny view = out.type_index == kTVMFFIUnchanged ? value : out;
    void* fn = sm_find(s, view.type_index, &extra);
    if (fn == NULL) return out;
    TVMFFIAny r = sm_map_link(s, fn, extra, view);
    if (r.type_index == kTVMFFIUnchanged) return out;
    rt_any_release(&out);
    return r;
  }
  /* pre-order: the callback first, then descent into what it produced */
  void* fn = sm_find(s, value.type_index, &extra);
  if (fn == NULL) return sm_default(m, value, mode);
  TVMFFIAny mapped = sm_map_link(s, fn, extra, value);
  if (mapped.type_index == kTVMFFIError) return mapped;
  TVMFFIAny view = mapped.type_index == kTVMFFIUnchanged ? value : mapped;
  TVMFFIAny out;
  if (mode == SM_ALLOW) {
    if (rt_sv_same(&view, &value)) out = sm_default(m, value, SM_ALLOW);
    else out = sm_default(m, view, rt_sv_unique(&view) ? SM_ALLOW : SM_DISALLOW);
  } else {
    out = sm_default(m, view, SM_DISALLOW);
  }
  if (out.type_index == kTVMFFIError || out.type_index != kTVMFFIUnchanged) {
    rt_any_release(&mapped);
    return out;
  }
  return mapped;
}

static TVMFFIAny sm_engine(void* self, TVMFFIAny value, int mode) {
  sm_mutator* s = (sm_mutator*)self;
  if (s->depth >= RT_SV_MAX_DEPTH)
    return rt_sv_error("RecursionError",
                       "structural mutate: nesting deeper than %d levels (a cycle?)",
                       RT_SV_MAX_DEPTH);
  ++s->depth;
  TVMFFIAny r = sm_engine_run(s, value, mode);
  --s->depth;
  return r;
}

static TVMFFIAny sm_vt_mutate(void* self, TVMFFIAny value) {
  return sm_engine(self, value, SM_DISALLOW);
}
static TVMFFIAny sm_vt_inplace(void* self, TVMFFIAny value) {
  return sm_engine(self, value, SM_ALLOW);
}

static const rt_sv_mutate_vtable sm_vtable = {sm_vt_mutate, sm_vt_inplace, sm_remap_get,
                                              sm_remap_set};

static void sm_mutator_deleter(void* self, int flags) {
  sm_mutator* s = (sm_mutator*)self;
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    rt_decref(s->callbacks);
    rt_decref(s->callbacks_kind);
    s->callbacks = s->callbacks_kind = NULL;
    for (size_t i = 0; i < s->remap_cap; ++i) {
      if (s->remap[i].key == NULL) continue;
      rt_any_release(&s->remap[i].value);
      rt_decref(s->remap[i].key);
    }
    free(s->remap);
    s->remap = NULL;
    s->remap_cap = s->remap_size = 0;
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

static sm_mutator* sm_mutator_new(int engine, void* callbacks, void* callbacks_kind) {
  int32_t ti = rt_sv_mutator_type();
  if (ti < 0) {
    rt_raise("RuntimeError", "ffi.StructuralMutator is not registered");
    return NULL;
  }
  sm_mutator* s = (sm_mutator*)rt_object_alloc(sizeof(sm_mutator), ti, sm_mutator_deleter);
  if (s == NULL) return NULL;
  s->head.vtable = &sm_vtable;
  s->head.region = kTVMFFIDefRegionKindNone;
  s->engine = engine;
  if (callbacks) rt_incref(callbacks);
  if (callbacks_kind) rt_incref(callbacks_kind);
  s->callbacks = callbacks;
  s->callbacks_kind = callbacks_kind;
  return s;
}

/* __ffi_shallow_copy__ of our mutator: same engine, tables, region and remap. */
static int sm_mutator_copy(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (n != 1 || args[0].type_index != rt_sv_mutator_type() ||
      ((rt_sv_head*)args[0].v_obj)->vtable != &sm_vtable)
    return rt_raise("TypeError", "ffi.StructuralMutator.__ffi_shallow_copy__ expects a mutator");
  sm_mutator* src = (sm_mutator*)args[0].v_obj;
  sm_mutator* s = sm_mutator_new(src->engine, src->callbacks, src->callbacks_kind);
  if (s == NULL) return -1;
  s->head.region = src->head.region;
  for (size_t i = 0; i < src->remap_cap; ++i) {
    if (src->remap[i].key == NULL) continue;
    TVMFFIAny key;
    rt_any_set_obj(&key, src->remap[i].key);
    TVMFFIAny r = sm_remap_set(s, key, src->remap[i].value);
    if (r.type_index == kTVMFFIError) {
      rt_decref(s);
      return rt_sv_raise(&r);
    }
  }
  rt_any_set_obj(ret, s);
  return 0;
}

/* Runs from an owned root with in-place permission (it is unique only when
 * the caller gave its reference away). */
static int sm_run(sm_mutator* s, const TVMFFIAny* arg, TVMFFIAny* ret) {
  TVMFFIAny root;
  if (rt_sv_take_arg(arg, &root) != 0) {
    rt_decref(s);
    return -1;
  }
  TVMFFIAny r = sm_mutate(s, root, SM_ALLOW);
  rt_decref(s);
  if (r.type_index == kTVMFFIError) {
    rt_any_release(&root);
    return rt_sv_raise(&r);
  }
  if (r.type_index == kTVMFFIUnchanged) {
    *ret = root;
  } else {
    rt_any_release(&root);
    *ret = r;
  }
  return 0;
}

/* ------------------------------------------------------------------ */
/* globals                                                             */
/* ------------------------------------------------------------------ */
#define SM_TABLE "Array<Tuple<int, ffi.Function>>"
#define SM_TABLE3 "Array<Tuple<int, ffi.Function, bool>>"
#define SM_MAP_SIG \
  "ffi.StructuralMap(0: Any, 1: " SM_TABLE ", 2: " SM_TABLE ", 3: int) -> Any"
#define SM_MUTATE_SIG "ffi.StructuralMutate(0: Any, 1: " SM_TABLE3 ") -> Any"

static int sm_g_map(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs(SM_MAP_SIG, n, 4) != 0) return -1;
  void* cbs = rt_sv_check_table(args, 1, SM_MAP_SIG, SM_TABLE, 2);
  if (cbs == NULL) return -1;
  void* cbs_kind = rt_sv_check_table(args, 2, SM_MAP_SIG, SM_TABLE, 2);
  if (cbs_kind == NULL) return -1;
  int64_t order = 0;
  if (rt_b_arg_int(args, 3, SM_MAP_SIG, &order) != 0) return -1;
  sm_mutator* s = sm_mutator_new((int32_t)order == 0 ? SM_MAP_PRE : SM_MAP_POST, cbs, cbs_kind);
  return s ? sm_run(s, &args[0], ret) : -1;
}

static int sm_g_mutate(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs(SM_MUTATE_SIG, n, 2) != 0) return -1;
  void* cbs = rt_sv_check_table(args, 1, SM_MUTATE_SIG, SM_TABLE3, 3);
  if (cbs == NULL) return -1;
  sm_mutator* s = sm_mutator_new(SM_MUTATE, cbs, NULL);
  return s ? sm_run(s, &args[0], ret) : -1;
}

#define SM_SELF "ffi.StructuralMutator"
#define SM_M_MUTATE "ffi.StructuralMutatorMutate(0: " SM_SELF ", 1: AnyView) -> Any"
#define SM_M_DEFAULT "ffi.StructuralMutatorDefaultMutate(0: " SM_SELF ", 1: AnyView) -> Any"
#define SM_M_GET "ffi.StructuralMutatorVarRemapGet(0: " SM_SELF ", 1: AnyView) -> Any"
#define SM_M_SET \
  "ffi.StructuralMutatorVarRemapSet(0: " SM_SELF ", 1: AnyView, 2: AnyView) -> void"
#define SM_M_KIND "ffi.StructuralMutatorDefRegionKind(0: " SM_SELF ") -> int"
#define SM_M_WITH \
  "ffi.StructuralMutatorWithDefRegionKind(0: " SM_SELF ", 1: int, 2: ffi.Function) -> Any"

static int sm_self(const TVMFFIAny* args, int32_t n, int32_t want, const char* sig,
                   rt_sv_head** out) {
  if (rt_b_check_nargs(sig, n, want) != 0) return -1;
  return rt_b_arg_obj(args, 0, sig, rt_sv_mutator_type(), SM_SELF, (void**)out);
}

/* The result of a mutation as the global returns it (Unchanged: the input). */
static int sm_finish(TVMFFIAny r, const TVMFFIAny* input, TVMFFIAny* ret) {
  if (r.type_index == kTVMFFIError) return rt_sv_raise(&r);
  if (r.type_index == kTVMFFIUnchanged) return TVMFFIAnyViewToOwnedAny(input, ret);
  *ret = r;
  return 0;
}

static int sm_m_mutate(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  rt_sv_head* m = NULL;
  if (sm_self(args, n, 2, SM_M_MUTATE, &m) != 0) return -1;
  return sm_finish(sm_mutate(m, args[1], SM_DISALLOW), &args[1], ret);
}

static int sm_m_default(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  rt_sv_head* m = NULL;
  if (sm_self(args, n, 2, SM_M_DEFAULT, &m) != 0) return -1;
  return sm_finish(sm_default_mutate(m, args[1]), &args[1], ret);
}

static int sm_m_get(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  rt_sv_head* m = NULL;
  if (sm_self(args, n, 2, SM_M_GET, &m) != 0) return -1;
  TVMFFIAny r = sm_vt(m)->var_remap_get(m, args[1]);
  if (r.type_index == kTVMFFIError) return rt_sv_raise(&r);
  *ret = r;
  return 0;
}

static int sm_m_set(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  rt_sv_head* m = NULL;
  if (sm_self(args, n, 3, SM_M_SET, &m) != 0) return -1;
  TVMFFIAny r = sm_vt(m)->var_remap_set(m, args[1], args[2]);
  if (r.type_index == kTVMFFIError) return rt_sv_raise(&r);
  rt_any_release(&r);
  rt_any_set_none(ret);
  return 0;
}

static int sm_m_kind(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  rt_sv_head* m = NULL;
  if (sm_self(args, n, 1, SM_M_KIND, &m) != 0) return -1;
  rt_any_set_int(ret, m->region);
  return 0;
}

static int sm_m_with(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  rt_sv_head* m = NULL;
  int64_t kind = 0;
  void* fn = NULL;
  if (sm_self(args, n, 3, SM_M_WITH, &m) != 0 || rt_b_arg_int(args, 1, SM_M_WITH, &kind) != 0 ||
      rt_b_arg_obj(args, 2, SM_M_WITH, kTVMFFIFunction, "ffi.Function", &fn) != 0)
    return -1;
  return rt_sv_with_region(m, (int32_t)kind, fn, ret);
}

static void sm_set_hooks(int32_t type_index, TVMFFIAny (*mutate)(void*, TVMFFIAny),
                         TVMFFIAny (*inplace)(void*, TVMFFIAny)) {
  (void)rt_type_set_native_attr(type_index, "__s_mutate__", (void*)mutate);
  (void)rt_type_set_native_attr(type_index, "__s_maybe_inplace_mutate__", (void*)inplace);
}

RT_INIT(rt_structural_mutate_init) {
  rt_register_global("ffi.StructuralMap", sm_g_map);
  rt_register_global("ffi.StructuralMutate", sm_g_mutate);
  rt_register_global("ffi.StructuralMutatorMutate", sm_m_mutate);
  rt_register_global("ffi.StructuralMutatorDefaultMutate", sm_m_default);
  rt_register_global("ffi.StructuralMutatorVarRemapGet", sm_m_get);
  rt_register_global("ffi.StructuralMutatorVarRemapSet", sm_m_set);
  rt_register_global("ffi.StructuralMutatorDefRegionKind", sm_m_kind);
  rt_register_global("ffi.StructuralMutatorWithDefRegionKind", sm_m_with);
  sm_set_hooks(kTVMFFIBigInt, sm_hook_leaf, sm_hook_leaf);
  sm_set_hooks(kTVMFFIStr, sm_hook_leaf, sm_hook_leaf);
  sm_set_hooks(kTVMFFIBytes, sm_hook_leaf, sm_hook_leaf);
  sm_set_hooks(kTVMFFIArray, sm_hook_seq, sm_hook_seq_inplace);
  sm_set_hooks(kTVMFFIList, sm_hook_seq, sm_hook_seq_inplace);
  sm_set_hooks(kTVMFFIMap, sm_hook_map, sm_hook_map_inplace);
  sm_set_hooks(kTVMFFIDict, sm_hook_map, sm_hook_map_inplace);
  TVMFFIErrorMoveFromRaised(NULL);
}

/* After builtin_types.c registered the mutator type (see structural_visit.c). */
__attribute__((constructor(201))) static void rt_structural_mutate_copy_init(void) {
  int32_t ti = rt_sv_mutator_type();
  if (ti < 0) return;
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(NULL, sm_mutator_copy, NULL, &f) != 0) {
    TVMFFIErrorMoveFromRaised(NULL);
    return;
  }
  TVMFFIByteArray name = rt_ba("__ffi_shallow_copy__");
  TVMFFIAny v;
  rt_any_set_obj(&v, f);
  (void)TVMFFITypeRegisterAttr(ti, &name, &v);
  rt_decref(f);
  TVMFFIErrorMoveFromRaised(NULL);
}
