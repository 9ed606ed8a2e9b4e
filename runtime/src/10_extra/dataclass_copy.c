/* ffi.DeepCopy: a copy of a value and of every object reachable from it,
 * as the official runtime makes it.
 *
 * Scalars, strings, bytes, Shapes, BigInts and enum singletons are shared,
 * not copied. Arrays and Maps are rebuilt from the copies of their items;
 * Lists and Dicts are made empty first and filled, so they can hold
 * themselves; reflected objects are copied through their
 * __ffi_shallow_copy__ column value and then get the copies of their field
 * values through the field setters (a type without that column is refused,
 * "not copy-constructible"). An object reached twice is copied once (shared
 * references stay shared). An Array or Map reached again while being built
 * is first referenced as the original, and those references are replaced by
 * the copy once everything is built. */
#include <string.h>

#include "10_extra/dataclass.h"

typedef struct {
  TVMFFIObject* obj;
  int32_t ti;
  dc_children ch;
  size_t idx;
  TVMFFIAny copy;      /* List, Dict, object: the copy being filled */
  TVMFFIAny* resolved; /* Array, Map: copies of the children */
  size_t nres;
  int is_key;
  TVMFFIAny key; /* Dict: the copied key waiting for its value */
} cy_frame;

typedef struct {
  cy_frame* f;
  size_t n, cap;
} cy_stack;

typedef struct {
  dc_map copies;      /* original -> copy (any) */
  dc_map in_progress; /* Arrays and Maps being built */
  int deferred;
} cy_ctx;

static int cy_same(const TVMFFIAny* a, const TVMFFIAny* b) {
  return a->type_index == b->type_index && a->zero_padding == b->zero_padding &&
         a->v_int64 == b->v_int64;
}

static void cy_retained(const TVMFFIAny* v, TVMFFIAny* out) {
  *out = *v;
  rt_any_retain(out);
}

/* 1: *out (owned) set; 0: a frame is needed. */
static int cy_immediate(cy_ctx* c, const TVMFFIAny* v, TVMFFIAny* out) {
  int32_t ti = v->type_index;
  if (ti < kTVMFFIStaticObjectBegin || v->v_obj == NULL) {
    cy_retained(v, out);
    return 1;
  }
  dc_entry* e = dc_map_find(&c->copies, v->v_obj, NULL);
  if (e) {
    cy_retained(&e->any, out);
    return 1;
  }
  if (dc_map_find(&c->in_progress, v->v_obj, NULL)) {
    c->deferred = 1;
    cy_retained(v, out);
    return 1;
  }
  if (ti == kTVMFFIStr || ti == kTVMFFIBytes || ti == kTVMFFIShape || ti == kTVMFFIBigInt ||
      dc_is_enum(ti)) {
    cy_retained(v, out);
    return 1;
  }
  return 0;
}

static int cy_remember(cy_ctx* c, const void* orig, const TVMFFIAny* copy) {
  dc_entry* e = dc_map_put(&c->copies, orig, NULL);
  if (e == NULL) return -1;
  rt_any_release(&e->any);
  cy_retained(copy, &e->any);
  return 0;
}

static void cy_frame_free(cy_frame* f) {
  dc_children_free(&f->ch);
  rt_any_release(&f->copy);
  rt_any_release(&f->key);
  for (size_t i = 0; i < f->nres; ++i) rt_any_release(&f->resolved[i]);
  free(f->resolved);
}

static int cy_push(cy_ctx* c, cy_stack* st, const TVMFFIAny* v) {
  if (st->n >= DC_MAX_DEPTH)
    return rt_raise("ValueError", "ObjectGraphDFS: maximum stack depth (%zu) exceeded",
                    DC_MAX_DEPTH);
  if (st->n == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 16;
    cy_frame* f = (cy_frame*)realloc(st->f, cap * sizeof(cy_frame));
    if (f == NULL) return rt_raise("MemoryError", "out of memory");
    st->f = f;
    st->cap = cap;
  }
  cy_frame* f = &st->f[st->n];
  memset(f, 0, sizeof(*f));
  rt_any_set_none(&f->copy);
  rt_any_set_none(&f->key);
  f->obj = v->v_obj;
  f->ti = v->v_obj->type_index;
  f->is_key = 1;
  int rc = dc_children_of(v, 0, &f->ch);
  if (rc == 0 && (f->ti == kTVMFFIArray || f->ti == kTVMFFIMap)) {
    f->resolved = (TVMFFIAny*)calloc(f->ch.n ? f->ch.n : 1, sizeof(TVMFFIAny));
    if (f->resolved == NULL) rc = rt_raise("MemoryError", "out of memory");
    else if (dc_map_put(&c->in_progress, f->obj, NULL) == NULL) rc = -1;
  } else if (rc == 0 && f->ti == kTVMFFIList) {
    void* l = rt_list_new((int64_t)f->ch.size);
    if (l == NULL) rc = -1;
    else rt_any_set_obj(&f->copy, l);
  } else if (rc == 0 && f->ti == kTVMFFIDict) {
    void* d = rt_dict_new();
    if (d == NULL) rc = -1;
    else rt_any_set_obj(&f->copy, d);
  } else if (rc == 0) {
    const TVMFFIAny* fn = dc_column(DC_COL_COPY, f->ti);
    if (fn == NULL) {
      TVMFFIByteArray k = dc_type_key(f->ti);
      rc = rt_raise("InternalError",
                    "Check failed: (copy_fn.has_value()) is false: Cannot deep copy object of "
                    "type \"%.*s\" because it is not copy-constructible",
                    (int)k.size, k.data);
    } else {
      TVMFFIAny arg = *v;
      rc = dc_call(fn, DC_SIG_COPY, &arg, 1, &f->copy);
    }
  }
  if (rc == 0 && f->copy.type_index != kTVMFFINone) rc = cy_remember(c, f->obj, &f->copy);
  if (rc != 0) {
    cy_frame_free(f);
    return -1;
  }
  ++st->n;
  return 0;
}

/* Takes ownership of `r`. */
static int cy_feed(cy_frame* f, TVMFFIAny* r) {
  int rc = 0;
  if (f->ti == kTVMFFIArray || f->ti == kTVMFFIMap) {
    f->resolved[f->nres++] = *r;
    rt_any_set_none(r);
    return 0;
  }
  if (f->ti == kTVMFFIList) {
    rc = rt_list_append(f->copy.v_obj, r);
  } else if (f->ti == kTVMFFIDict) {
    if (f->is_key) {
      f->key = *r;
      rt_any_set_none(r);
      f->is_key = 0;
      return 0;
    }
    rc = rt_dict_set(f->copy.v_obj, &f->key, r);
    rt_any_release(&f->key);
    f->is_key = 1;
  } else {
    size_t i = f->idx - 1; /* the field just resolved */
    if (!cy_same(&f->ch.items[i], r)) rc = dc_set_field(f->copy.v_obj, f->ch.fields[i], r);
  }
  rt_any_release(r);
  return rc;
}

static int cy_finalize(cy_ctx* c, cy_frame* f, TVMFFIAny* out) {
  if (f->ti == kTVMFFIArray) {
    int rc = rt_array_from_anys(f->resolved, (int64_t)f->nres, out);
    dc_map_erase(&c->in_progress, f->obj, NULL);
    return rc == 0 ? cy_remember(c, f->obj, out) : -1;
  }
  if (f->ti == kTVMFFIMap) {
    void* m = rt_map_new();
    dc_map_erase(&c->in_progress, f->obj, NULL);
    if (m == NULL) return -1;
    for (size_t i = 0; i + 1 < f->nres; i += 2) {
      if (rt_map_set(&m, &f->resolved[i], &f->resolved[i + 1]) != 0) {
        rt_decref(m);
        return -1;
      }
    }
    rt_any_set_obj(out, m);
    return cy_remember(c, f->obj, out);
  }
  *out = f->copy;
  rt_any_set_none(&f->copy);
  return 0;
}

/* The copy of an original met as a placeholder, or NULL. */
static const TVMFFIAny* cy_copy_of(cy_ctx* c, const TVMFFIAny* v) {
  if (v->type_index < kTVMFFIStaticObjectBegin || v->v_obj == NULL) return NULL;
  dc_entry* e = dc_map_find(&c->copies, v->v_obj, NULL);
  return e ? &e->any : NULL;
}

static int cy_fix_dict(cy_ctx* c, void* dict) {
  int64_t n = rt_map_size(dict);
  TVMFFIAny* fix = (TVMFFIAny*)calloc((size_t)(n > 0 ? n : 1) * 3, sizeof(TVMFFIAny));
  if (fix == NULL) return rt_raise("MemoryError", "out of memory");
  size_t nf = 0;
  for (uint64_t it = rt_map_iter_begin(dict); it != rt_map_iter_end(dict);
       it = rt_map_iter_next(dict, it)) {
    const TVMFFIAny *k, *v;
    rt_map_iter_kv(dict, it, &k, &v);
    const TVMFFIAny *nk = cy_copy_of(c, k), *nv = cy_copy_of(c, v);
    if ((nk == NULL && nv == NULL) || nf + 3 > (size_t)n * 3) continue;
    cy_retained(k, &fix[nf]);
    cy_retained(nk ? nk : k, &fix[nf + 1]);
    cy_retained(nv ? nv : v, &fix[nf + 2]);
    nf += 3;
  }
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < nf; i += 3) {
    int erased = 0;
    rc = rt_dict_erase(dict, &fix[i], &erased);
    if (rc == 0) rc = rt_dict_set(dict, &fix[i + 1], &fix[i + 2]);
  }
  for (size_t i = 0; i < nf; ++i) rt_any_release(&fix[i]);
  free(fix);
  return rc;
}

static int cy_fix_object(cy_ctx* c, TVMFFIObject* obj) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(obj->type_index);
  for (int32_t d = 1; info && d <= info->type_depth; ++d) {
    const TVMFFITypeInfo* t = d < info->type_depth ? info->type_ancestors[d] : info;
    for (int32_t i = 0; i < t->num_fields; ++i) {
      const TVMFFIFieldInfo* f = &t->fields[i];
      TVMFFIAny v;
      rt_any_set_none(&v);
      if (f->getter == NULL || f->getter((char*)obj + f->offset, &v) != 0) return -1;
      const TVMFFIAny* nv = cy_copy_of(c, &v);
      int rc = (nv && !cy_same(nv, &v)) ? dc_set_field(obj, f, nv) : 0;
      rt_any_release(&v);
      if (rc != 0) return -1;
    }
  }
  return 0;
}

/* Replaces the placeholders (originals of Arrays/Maps met while being
 * built) in the mutable copies. */
static int cy_fixup(cy_ctx* c) {
  for (size_t i = 0; i < c->copies.cap; ++i) {
    dc_entry* e = &c->copies.e[i];
    if (e->live != 1 || e->any.type_index < kTVMFFIStaticObjectBegin) continue;
    TVMFFIObject* obj = e->any.v_obj;
    int rc = 0;
    if (obj->type_index == kTVMFFIList) {
      int64_t n = 0;
      TVMFFIAny* items = (TVMFFIAny*)rt_seq_items(obj, &n);
      for (int64_t j = 0; j < n; ++j) {
        const TVMFFIAny* nv = cy_copy_of(c, &items[j]);
        if (nv == NULL) continue;
        TVMFFIAny old = items[j];
        cy_retained(nv, &items[j]);
        rt_any_release(&old);
      }
    } else if (obj->type_index == kTVMFFIDict) {
      rc = cy_fix_dict(c, obj);
    } else if (obj->type_index >= kTVMFFIStaticObjectEnd) {
      rc = cy_fix_object(c, obj);
    }
    if (rc != 0) return -1;
  }
  return 0;
}

static int cy_run(cy_ctx* c, const TVMFFIAny* v, TVMFFIAny* out) {
  if (cy_immediate(c, v, out)) return 0;
  cy_stack st = {NULL, 0, 0};
  int rc = cy_push(c, &st, v);
  while (rc == 0) {
    cy_frame* f = &st.f[st.n - 1];
    int pushed = 0;
    while (rc == 0 && f->idx < f->ch.n) {
      const TVMFFIAny* child = &f->ch.items[f->idx++];
      TVMFFIAny r;
      if (cy_immediate(c, child, &r)) {
        rc = cy_feed(f, &r);
        continue;
      }
      rc = cy_push(c, &st, child);
      pushed = 1;
      break;
    }
    if (rc != 0) break;
    if (pushed) continue;
    TVMFFIAny r;
    rt_any_set_none(&r);
    rc = cy_finalize(c, f, &r);
    cy_frame_free(f);
    --st.n;
    if (rc != 0) {
      rt_any_release(&r);
      break;
    }
    if (st.n == 0) {
      *out = r;
      break;
    }
    rc = cy_feed(&st.f[st.n - 1], &r);
  }
  for (size_t i = 0; i < st.n; ++i) cy_frame_free(&st.f[i]);
  free(st.f);
  if (rc == 0 && c->deferred && cy_fixup(c) != 0) {
    rt_any_release(out);
    rc = -1;
  }
  return rc;
}

int rt_dc_deep_copy(const TVMFFIAny* value, TVMFFIAny* out) {
  cy_ctx c;
  memset(&c, 0, sizeof(c));
  TVMFFIAny v;
  if (dc_own(value, &v) != 0) return -1;
  rt_any_set_none(out);
  int rc = cy_run(&c, &v, out);
  rt_any_release(&v);
  dc_map_free(&c.copies);
  dc_map_free(&c.in_progress);
  return rc;
}

static int g_deep_copy(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs("ffi.DeepCopy(0: Any) -> Any", n, 1) != 0) return -1;
  return rt_dc_deep_copy(&args[0], ret);
}

RT_INIT(rt_dataclass_copy_init) { dc_register_global("ffi.DeepCopy", g_deep_copy, 1, "Any"); }
