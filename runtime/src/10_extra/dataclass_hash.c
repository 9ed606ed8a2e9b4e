/* ffi.RecursiveHash: a deterministic hash consistent with ffi.RecursiveEq,
 * with the official constants, so equal inputs hash alike on both runtimes.
 *
 * Scalars combine their type index with their bits (floats: one NaN, one
 * zero); str and bytes hash their content whatever their storage; a Shape
 * its type key hash, size and dims. A container starts from its type key
 * hash combined with its size: sequences then fold each (item hash, index),
 * maps fold the sorted (key hash, value hash) entries. An object starts from
 * its type key hash and folds its fields (hash-off and compare-off fields
 * left out). An __ffi_hash__ column value (a Function of the object and a
 * callback) takes precedence; a user type with __ffi_eq__ or
 * __ffi_compare__ but no __ffi_hash__ is refused. An object met again while
 * being hashed contributes its type key hash; one already hashed reuses its
 * hash. */
#include <string.h>

#include "10_extra/dataclass.h"

typedef struct {
  TVMFFIObject* obj;
  dc_children ch;
  size_t idx;
  uint64_t hash;
  uint64_t seq_index;
  uint64_t* entries;
  size_t nentries;
  int in_key;
  uint64_t key_hash;
} hs_frame;

typedef struct {
  hs_frame* f;
  size_t n, cap;
} hs_stack;

typedef struct {
  dc_map seen; /* object -> len 1: on the stack; len 2: hashed, the hash in u */
} hs_ctx;

static uint64_t hs_type_hash(int32_t ti) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
  return info ? info->type_key_hash : 0;
}

static uint64_t hs_pod(const TVMFFIAny* v) {
  uint64_t ti = (uint64_t)v->type_index;
  switch (v->type_index) {
    case kTVMFFIBool: return dc_combine(ti, v->v_int64 != 0 ? 1 : 0);
    case kTVMFFIInt: return dc_combine(ti, (uint64_t)v->v_int64);
    case kTVMFFIFloat: {
      double d = v->v_float64;
      uint64_t bits;
      if (d != d) bits = 0x7ff8000000000000ULL; /* the quiet NaN */
      else if (d == 0.0) bits = 0;
      else memcpy(&bits, &d, sizeof(bits));
      return dc_combine(ti, bits);
    }
    case kTVMFFIDataType: {
      uint64_t h = dc_combine(ti, (uint64_t)v->v_dtype.code);
      h = dc_combine(h, (uint64_t)v->v_dtype.bits);
      return dc_combine(h, (uint64_t)v->v_dtype.lanes);
    }
    case kTVMFFIDevice: {
      uint64_t h = dc_combine(ti, (uint64_t)(int64_t)v->v_device.device_type);
      return dc_combine(h, (uint64_t)(int64_t)v->v_device.device_id);
    }
    default: return dc_combine(ti, v->v_uint64);
  }
}

static int hs_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret);

static int hs_memo(hs_ctx* c, const void* obj, uint64_t h) {
  dc_entry* e = dc_map_put(&c->seen, obj, NULL);
  if (e == NULL) return -1;
  e->len = 2;
  e->u = h;
  return 0;
}

/* 1: *out set; 0: `v` needs a frame; -1: error. */
static int hs_immediate(hs_ctx* c, const TVMFFIAny* v, uint64_t* out) {
  int32_t ti = v->type_index;
  if (ti == kTVMFFINone) {
    *out = dc_combine(0, 0);
    return 1;
  }
  if (ti == kTVMFFIStr || ti == kTVMFFISmallStr || ti == kTVMFFIBytes || ti == kTVMFFISmallBytes) {
    TVMFFIByteArray s = dc_bytes(v);
    int is_str = ti == kTVMFFIStr || ti == kTVMFFISmallStr;
    *out = dc_combine(is_str ? kTVMFFIStr : kTVMFFIBytes, rt_hash_bytes(s.data, s.size));
    return 1;
  }
  if (ti < kTVMFFIStaticObjectBegin) {
    *out = hs_pod(v);
    return 1;
  }
  TVMFFIObject* obj = v->v_obj;
  if (obj == NULL) {
    *out = dc_combine(0, 0);
    return 1;
  }
  dc_entry* e = dc_map_find(&c->seen, obj, NULL);
  if (e && e->len == 2) {
    *out = e->u;
    return 1;
  }
  if (e && e->len == 1) { /* a cycle */
    *out = hs_type_hash(obj->type_index);
    return 1;
  }
  if (ti == kTVMFFIShape) {
    const TVMFFIShapeCell* s = (const TVMFFIShapeCell*)rt_cell(obj);
    uint64_t h = dc_combine(hs_type_hash(kTVMFFIShape), (uint64_t)s->size);
    for (size_t i = 0; i < s->size; ++i) h = dc_combine(h, (uint64_t)s->data[i]);
    if (hs_memo(c, obj, h) != 0) return -1;
    *out = h;
    return 1;
  }
  const TVMFFIAny* hook = dc_column(DC_COL_HASH, obj->type_index);
  if (hook != NULL) {
    e = dc_map_put(&c->seen, obj, NULL);
    if (e == NULL) return -1;
    e->len = 1;
    TVMFFIAny args[2], r;
    args[0] = *v;
    if (dc_make_callback(c, hs_callback, &args[1]) != 0) return -1;
    int rc = dc_call(hook, DC_SIG_HASH, args, 2, &r);
    rt_any_release(&args[1]);
    if (rc != 0) return -1;
    if (r.type_index != kTVMFFIInt && r.type_index != kTVMFFIBool) {
      TVMFFIByteArray k = dc_type_key(r.type_index);
      rt_any_release(&r);
      return rt_raise("TypeError", "Cannot convert from type `%.*s` to `int`", (int)k.size,
                      k.data);
    }
    *out = (uint64_t)r.v_int64;
    if (hs_memo(c, obj, *out) != 0) return -1;
    return 1;
  }
  if (ti >= kTVMFFIStaticObjectEnd &&
      (dc_column(DC_COL_EQ, obj->type_index) || dc_column(DC_COL_CMP, obj->type_index))) {
    TVMFFIByteArray k = dc_type_key(ti);
    return rt_raise("ValueError",
                    "RecursiveHash: type '%.*s' defines __ffi_eq__ or __ffi_compare__ but not "
                    "__ffi_hash__. Add a __ffi_hash__ hook to maintain the invariant "
                    "RecursiveEq(a,b) => RecursiveHash(a)==RecursiveHash(b).",
                    (int)k.size, k.data);
  }
  return 0;
}

static void hs_frame_free(hs_frame* f) {
  dc_children_free(&f->ch);
  free(f->entries);
}

static int hs_push(hs_ctx* c, hs_stack* st, const TVMFFIAny* v) {
  if (st->n >= DC_MAX_DEPTH)
    return rt_raise("ValueError", "ObjectGraphDFS: maximum stack depth (%zu) exceeded",
                    DC_MAX_DEPTH);
  if (st->n == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 16;
    hs_frame* f = (hs_frame*)realloc(st->f, cap * sizeof(hs_frame));
    if (f == NULL) return rt_raise("MemoryError", "out of memory");
    st->f = f;
    st->cap = cap;
  }
  dc_entry* e = dc_map_put(&c->seen, v->v_obj, NULL);
  if (e == NULL) return -1;
  e->len = 1;
  hs_frame* f = &st->f[st->n];
  memset(f, 0, sizeof(*f));
  f->obj = v->v_obj;
  f->in_key = 1;
  if (dc_children_of(v, kTVMFFIFieldFlagBitMaskHashOff | kTVMFFIFieldFlagBitMaskCompareOff,
                     &f->ch) != 0) {
    dc_children_free(&f->ch);
    return -1;
  }
  uint64_t th = hs_type_hash(f->obj->type_index);
  f->hash = f->ch.kind == DC_OBJ ? th : dc_combine(th, (uint64_t)f->ch.size);
  if (f->ch.kind == DC_MAP) {
    f->entries = (uint64_t*)calloc(f->ch.size ? f->ch.size : 1, sizeof(uint64_t));
    if (f->entries == NULL) {
      dc_children_free(&f->ch);
      return rt_raise("MemoryError", "out of memory");
    }
  }
  ++st->n;
  return 0;
}

static void hs_feed(hs_frame* f, uint64_t h) {
  if (f->ch.kind == DC_SEQ) {
    f->hash = dc_combine(f->hash, dc_combine(h, f->seq_index++));
  } else if (f->ch.kind == DC_MAP) {
    if (f->in_key) {
      f->key_hash = h;
      f->in_key = 0;
    } else {
      if (f->nentries < f->ch.size) f->entries[f->nentries++] = dc_combine(f->key_hash, h);
      f->in_key = 1;
    }
  } else {
    f->hash = dc_combine(f->hash, h);
  }
}

static int hs_cmp_u64(const void* a, const void* b) {
  uint64_t x = *(const uint64_t*)a, y = *(const uint64_t*)b;
  return x < y ? -1 : x > y;
}

static int hs_run(hs_ctx* c, const TVMFFIAny* v, uint64_t* out) {
  int r = hs_immediate(c, v, out);
  if (r != 0) return r < 0 ? -1 : 0;
  hs_stack st = {NULL, 0, 0};
  int rc = hs_push(c, &st, v);
  while (rc == 0) {
    hs_frame* f = &st.f[st.n - 1];
    int pushed = 0;
    while (f->idx < f->ch.n) {
      const TVMFFIAny* child = &f->ch.items[f->idx++];
      uint64_t h = 0;
      r = hs_immediate(c, child, &h);
      if (r == 1) {
        hs_feed(f, h);
        continue;
      }
      rc = r < 0 ? -1 : hs_push(c, &st, child);
      pushed = 1;
      break;
    }
    if (rc != 0) break;
    if (pushed) continue;
    if (f->ch.kind == DC_MAP) {
      qsort(f->entries, f->nentries, sizeof(uint64_t), hs_cmp_u64);
      for (size_t i = 0; i < f->nentries; ++i) f->hash = dc_combine(f->hash, f->entries[i]);
    }
    uint64_t h = f->hash;
    rc = hs_memo(c, f->obj, h);
    hs_frame_free(f);
    --st.n;
    if (rc != 0) break;
    if (st.n == 0) {
      *out = h;
      break;
    }
    hs_feed(&st.f[st.n - 1], h);
  }
  for (size_t i = 0; i < st.n; ++i) hs_frame_free(&st.f[i]);
  free(st.f);
  return rc;
}

/* The callback a __ffi_hash__ hook gets: the hash of one nested value. */
static int hs_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  if (n != 1)
    return rt_raise("TypeError",
                    "Mismatched number of arguments when calling: `fn_hash(0: Any) -> int`. "
                    "Expected 1 but got %d arguments", (int)n);
  TVMFFIAny v;
  if (dc_own(&args[0], &v) != 0) return -1;
  uint64_t h = 0;
  int rc = hs_run((hs_ctx*)self, &v, &h);
  rt_any_release(&v);
  if (rc != 0) return -1;
  rt_any_set_int(ret, (int64_t)h);
  return 0;
}

int rt_dc_hash(const TVMFFIAny* value, int64_t* out) {
  hs_ctx c;
  memset(&c, 0, sizeof(c));
  TVMFFIAny v;
  if (dc_own(value, &v) != 0) return -1;
  uint64_t h = 0;
  int rc = hs_run(&c, &v, &h);
  rt_any_release(&v);
  dc_map_free(&c.seen);
  *out = (int64_t)h;
  return rc;
}

static int g_hash(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs("ffi.RecursiveHash(0: Any) -> int", n, 1) != 0) return -1;
  int64_t v = 0;
  if (rt_dc_hash(&args[0], &v) != 0) return -1;
  rt_any_set_int(ret, v);
  return 0;
}

RT_INIT(rt_dataclass_hash_init) { dc_register_global("ffi.RecursiveHash", g_hash, 1, "int"); }
