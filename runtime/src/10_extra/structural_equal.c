/* Structural equality (ffi.StructuralEqual, ffi.GetFirstStructuralMismatch)
 * with the official runtime's rules:
 *  - values of different type indices differ, except a heap and an inline
 *    string (or bytes) with the same content;
 *  - POD values compare bit for bit (so 0.0 != -0.0), except that every NaN
 *    equals every NaN;
 *  - strings and bytes by content, BigInt by words, Shape by dims;
 *  - Array/List element-wise; Map/Dict by looking each lhs key (mapped
 *    through the free-variable binding so far) up in rhs;
 *  - tensors by shape and dtype, then content unless skip_tensor_content
 *    (content only of contiguous CPU tensors);
 *  - other objects by their type's structural kind: UniqueInstance by
 *    identity; ConstTreeNode identical or field-equal; DAGNode and FreeVar
 *    keep a binding lhs <-> rhs; a FreeVar binds only when identical or
 *    inside a def region (map_free_vars opens one at the root).
 * Mismatch tracing records the steps from the mismatch outwards. */
#include <math.h>
#include <string.h>

#include "structural_internal.h"

typedef struct {
  int32_t region;
  int skip_tensor;
  int depth;
  rt_st_map lhs_map; /* lhs object -> rhs object */
  rt_st_map rhs_map; /* rhs object -> lhs object */
  rt_st_steps* lpath; /* non-NULL when tracing */
  rt_st_steps* rpath;
  TVMFFIObjectHandle callback; /* for custom __s_equal__ hooks, made lazily */
  rt_st_cell* cell;
} seq_ctx;

static int seq_any(seq_ctx* c, const TVMFFIAny* a, const TVMFFIAny* b);

static void seq_trace(seq_ctx* c, int32_t lkind, const TVMFFIAny* lkey, int32_t rkind,
                      const TVMFFIAny* rkey) {
  if (c->lpath == NULL) return;
  rt_st_steps_push(c->lpath, lkind, lkey);
  rt_st_steps_push(c->rpath, rkind, rkey);
}

static void seq_trace_index(seq_ctx* c, int32_t lkind, int64_t li, int32_t rkind, int64_t ri) {
  if (c->lpath == NULL) return;
  rt_st_steps_push_int(c->lpath, lkind, li);
  rt_st_steps_push_int(c->rpath, rkind, ri);
}

static int bytes_equal(const char* a, size_t na, const char* b, size_t nb) {
  return na == nb && (na == 0 || memcmp(a, b, na) == 0);
}

/* Different type indices: only the heap/inline forms of one string kind meet. */
static int seq_mixed(const TVMFFIAny* a, const TVMFFIAny* b) {
  int32_t ta = a->type_index, tb = b->type_index;
  int strs = (ta == kTVMFFIStr && tb == kTVMFFISmallStr) || (ta == kTVMFFISmallStr && tb == kTVMFFIStr);
  int bytes = (ta == kTVMFFIBytes && tb == kTVMFFISmallBytes) ||
              (ta == kTVMFFISmallBytes && tb == kTVMFFIBytes);
  if (!strs && !bytes) return 0;
  TVMFFIByteArray x, y;
  if (!rt_any_get_bytes(a, -1, &x) || !rt_any_get_bytes(b, -1, &y)) return 0;
  return bytes_equal(x.data, x.size, y.data, y.size);
}

static int seq_sequence(seq_ctx* c, void* lhs, void* rhs) {
  int64_t nl, nr;
  (void)rt_seq_items(lhs, &nl);
  (void)rt_seq_items(rhs, &nr);
  if (nl != nr && c->lpath == NULL) return 0;
  int64_t n = nl < nr ? nl : nr;
  for (int64_t i = 0; i < n; ++i) {
    int64_t sl, sr;
    const TVMFFIAny* li = rt_seq_items(lhs, &sl);
    const TVMFFIAny* ri = rt_seq_items(rhs, &sr);
    if (i >= sl || i >= sr) break; /* a hook shrank a list under us */
    TVMFFIAny x = li[i], y = ri[i];
    rt_any_retain(&x);
    rt_any_retain(&y);
    int r = seq_any(c, &x, &y);
    rt_any_release(&x);
    rt_any_release(&y);
    if (r < 0) return -1;
    if (!r) {
      seq_trace_index(c, RT_ST_ARRAY_ITEM, i, RT_ST_ARRAY_ITEM, i);
      return 0;
    }
  }
  if (nl == nr) return 1;
  if (nl > nr) {
    seq_trace_index(c, RT_ST_ARRAY_ITEM, nr, RT_ST_ARRAY_ITEM_MISSING, nr);
  } else {
    seq_trace_index(c, RT_ST_ARRAY_ITEM_MISSING, nl, RT_ST_ARRAY_ITEM, nl);
  }
  return 0;
}

/* A key as the other side names it: objects through the binding so far. */
static void seq_map_key(const rt_st_map* m, const TVMFFIAny* key, TVMFFIAny* out) {
  *out = *key;
  if (key->type_index >= kTVMFFIStaticObjectBegin) {
    const rt_st_slot* s = rt_st_map_find(m, key->v_obj);
    if (s != NULL) {
      out->type_index = ((TVMFFIObject*)s->obj)->type_index;
      out->v_obj = (TVMFFIObject*)s->obj;
    }
  }
  rt_any_retain(out);
}

/* 1 found (*value a retained copy), 0 absent, -1 error. */
static int seq_lookup(void* map, const TVMFFIAny* key, TVMFFIAny* value) {
  const TVMFFIAny* v = NULL;
  if (rt_map_find(map, key, &v) != 0) return -1;
  if (v == NULL) return 0;
  *value = *v;
  rt_any_retain(value);
  return 1;
}

static int seq_map(seq_ctx* c, void* lhs, void* rhs) {
  int64_t nl = rt_map_size(lhs), nr = rt_map_size(rhs);
  if (nl != nr && c->lpath == NULL) return 0;
  for (uint64_t it = rt_map_iter_begin(lhs); it != rt_map_iter_end(lhs);
       it = rt_map_iter_next(lhs, it)) {
    const TVMFFIAny *kp, *vp;
    rt_map_iter_kv(lhs, it, &kp, &vp);
    TVMFFIAny k = *kp, v = *vp, rk, rv;
    rt_any_retain(&k);
    rt_any_retain(&v);
    seq_map_key(&c->lhs_map, &k, &rk);
    int r = seq_lookup(rhs, &rk, &rv);
    if (r == 0) {
      seq_trace(c, RT_ST_MAP_ITEM, &k, RT_ST_MAP_ITEM_MISSING, &rk);
    } else if (r > 0) {
      r = seq_any(c, &v, &rv);
      if (r == 0) seq_trace(c, RT_ST_MAP_ITEM, &k, RT_ST_MAP_ITEM, &rk);
      rt_any_release(&rv);
    }
    rt_any_release(&k);
    rt_any_release(&v);
    rt_any_release(&rk);
    if (r <= 0) return r;
  }
  if (nl == nr) return 1;
  /* rhs has more: name a key lhs lacks */
  for (uint64_t it = rt_map_iter_begin(rhs); it != rt_map_iter_end(rhs);
       it = rt_map_iter_next(rhs, it)) {
    const TVMFFIAny *kp, *vp;
    rt_map_iter_kv(rhs, it, &kp, &vp);
    TVMFFIAny k = *kp, lk, lv;
    rt_any_retain(&k);
    seq_map_key(&c->rhs_map, &k, &lk);
    int r = seq_lookup(lhs, &lk, &lv);
    if (r > 0) rt_any_release(&lv);
    if (r == 0) seq_trace(c, RT_ST_MAP_ITEM_MISSING, &lk, RT_ST_MAP_ITEM, &k);
    rt_any_release(&k);
    rt_any_release(&lk);
    if (r <= 0) return r;
  }
  return 0;
}

static int seq_shape(void* lhs, void* rhs) {
  const TVMFFIShapeCell* x = (const TVMFFIShapeCell*)rt_cell(lhs);
  const TVMFFIShapeCell* y = (const TVMFFIShapeCell*)rt_cell(rhs);
  if (x->size != y->size) return 0;
  for (size_t i = 0; i < x->size; ++i)
    if (x->data[i] != y->data[i]) return 0;
  return 1;
}

static int seq_tensor(seq_ctx* c, void* lhs, void* rhs) {
  if (lhs == rhs) return 1;
  const DLTensor* x = rt_st_dltensor(lhs);
  const DLTensor* y = rt_st_dltensor(rhs);
  if (x->ndim != y->ndim) return 0;
  for (int32_t i = 0; i < x->ndim; ++i)
    if (x->shape[i] != y->shape[i]) return 0;
  if (x->dtype.code != y->dtype.code || x->dtype.bits != y->dtype.bits ||
      x->dtype.lanes != y->dtype.lanes)
    return 0;
  if (c->skip_tensor) return 1;
  if (rt_st_tensor_on_cpu(x, "lhs", "compare") != 0 || rt_st_tensor_on_cpu(y, "rhs", "compare") != 0 ||
      rt_st_tensor_contiguous(x, "lhs", "compare") != 0 ||
      rt_st_tensor_contiguous(y, "rhs", "compare") != 0)
    return -1;
  size_t n = rt_st_tensor_nbytes(x);
  return n == 0 || memcmp(x->data, y->data, n) == 0;
}

/* ---- objects by reflected fields or a custom hook ---- */
static int seq_callback(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret);

static int seq_hook(seq_ctx* c, const TVMFFIAny* hook, void* lhs, void* rhs) {
  if (hook->type_index != kTVMFFIFunction)
    return rt_raise("TypeError", "the __s_equal__ attribute of a type must be a Function");
  if (c->callback == NULL && rt_st_callback_new(c, seq_callback, &c->callback, &c->cell) != 0)
    return -1;
  TVMFFIAny args[3], ret;
  rt_any_set_obj(&args[0], lhs); /* views: no reference taken */
  rt_any_set_obj(&args[1], rhs);
  rt_any_set_obj(&args[2], c->callback);
  rt_any_set_none(&ret);
  if (TVMFFIFunctionCall(hook->v_obj, args, 3, &ret) != 0) return -1;
  if (ret.type_index != kTVMFFIBool && ret.type_index != kTVMFFIInt) {
    rt_any_release(&ret);
    return rt_raise("TypeError", "__s_equal__ must return a bool");
  }
  return ret.v_int64 != 0;
}

static int seq_fields(seq_ctx* c, void* lhs, void* rhs, const TVMFFITypeInfo* info) {
  const TVMFFIAny* hook = rt_st_hook("__s_equal__", info->type_index);
  if (hook != NULL) return seq_hook(c, hook, lhs, rhs);
  rt_st_fields it;
  rt_st_fields_begin(&it, info);
  for (const TVMFFIFieldInfo* f; (f = rt_st_fields_next(&it)) != NULL;) {
    if (f->flags & kTVMFFIFieldFlagBitMaskSEqHashIgnore) continue;
    TVMFFIAny x, y;
    if (rt_st_field_get(lhs, f, &x) != 0) return -1;
    if (rt_st_field_get(rhs, f, &y) != 0) {
      rt_any_release(&x);
      return -1;
    }
    int32_t saved = c->region;
    c->region = rt_st_field_region(saved, f->flags);
    int r = seq_any(c, &x, &y);
    c->region = saved;
    rt_any_release(&x);
    rt_any_release(&y);
    if (r < 0) return -1;
    if (!r) {
      if (c->lpath != NULL) {
        TVMFFIAny name;
        if (rt_string_to_any(f->name.data, f->name.size, &name) != 0) return -1;
        seq_trace(c, RT_ST_ATTR, &name, RT_ST_ATTR, &name);
        rt_any_release(&name);
      }
      return 0;
    }
  }
  return 1;
}

static int seq_bind(seq_ctx* c, void* lhs, void* rhs) {
  if (rt_st_map_put(&c->lhs_map, lhs, rhs, 0) != 0) return -1;
  return rt_st_map_put(&c->rhs_map, rhs, lhs, 0);
}

static int seq_object(seq_ctx* c, void* lhs, void* rhs) {
  const TVMFFITypeInfo* info;
  TVMFFISEqHashKind kind;
  if (rt_st_kind(((TVMFFIObject*)lhs)->type_index, &info, &kind) != 0) return -1;
  if (kind == kTVMFFISEqHashKindUniqueInstance) return lhs == rhs;
  if (kind == kTVMFFISEqHashKindConstTreeNode && lhs == rhs) return 1;
  if (kind == kTVMFFISEqHashKindDAGNode || kind == kTVMFFISEqHashKindFreeVar) {
    const rt_st_slot* s = rt_st_map_find(&c->lhs_map, lhs);
    if (s != NULL) return s->obj == rhs;
    if (rt_st_map_find(&c->rhs_map, rhs) != NULL) return 0;
  }
  if (kind != kTVMFFISEqHashKindFreeVar) {
    int r = seq_fields(c, lhs, rhs, info);
    if (r > 0 && kind == kTVMFFISEqHashKindDAGNode && seq_bind(c, lhs, rhs) != 0) return -1;
    return r;
  }
  /* a free variable's own fields are compared outside a simple def region */
  int32_t saved = c->region;
  if (saved == kTVMFFIDefRegionKindSimple) c->region = kTVMFFIDefRegionKindNone;
  int r = seq_fields(c, lhs, rhs, info);
  c->region = saved;
  if (r <= 0) return r;
  if (lhs == rhs || c->region != kTVMFFIDefRegionKindNone) {
    if (seq_bind(c, lhs, rhs) != 0) return -1;
    return 1;
  }
  return 0;
}

static int seq_any_inner(seq_ctx* c, const TVMFFIAny* a, const TVMFFIAny* b) {
  int32_t t = a->type_index;
  if (t != b->type_index) return seq_mixed(a, b);
  if (t < kTVMFFIStaticObjectBegin) {
    if (t == kTVMFFIFloat && isnan(a->v_float64)) return isnan(b->v_float64) ? 1 : 0;
    return a->zero_padding == b->zero_padding && a->v_int64 == b->v_int64;
  }
  switch (t) {
    case kTVMFFIBigInt: {
      TVMFFIByteArray x = TVMFFIBigIntGetContentByteArray(a);
      TVMFFIByteArray y = TVMFFIBigIntGetContentByteArray(b);
      return bytes_equal(x.data, x.size, y.data, y.size);
    }
    case kTVMFFIStr:
    case kTVMFFIBytes: {
      const TVMFFIByteArray* x = (const TVMFFIByteArray*)rt_cell(a->v_obj);
      const TVMFFIByteArray* y = (const TVMFFIByteArray*)rt_cell(b->v_obj);
      return bytes_equal(x->data, x->size, y->data, y->size);
    }
    case kTVMFFIArray:
    case kTVMFFIList:
      return seq_sequence(c, a->v_obj, b->v_obj);
    case kTVMFFIMap:
    case kTVMFFIDict:
      return seq_map(c, a->v_obj, b->v_obj);
    case kTVMFFIShape:
      return seq_shape(a->v_obj, b->v_obj);
    case kTVMFFITensor:
      return seq_tensor(c, a->v_obj, b->v_obj);
    default:
      return seq_object(c, a->v_obj, b->v_obj);
  }
}

static int seq_any(seq_ctx* c, const TVMFFIAny* a, const TVMFFIAny* b) {
  if (rt_st_too_deep_now(++c->depth)) {
    --c->depth;
    return rt_st_too_deep("StructuralEqual");
  }
  int r = seq_any_inner(c, a, b);
  --c->depth;
  return r;
}

/* The Function handed to __s_equal__ hooks:
 * (lhs, rhs, def_region_kind: int, field_name) -> bool. */
static int seq_callback(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  static const char sig[] = "(0: Any, 1: Any, 2: int, 3: Any) -> bool";
  seq_ctx* c = (seq_ctx*)self;
  int64_t requested;
  if (rt_b_check_nargs(sig, nargs, 4) != 0 || rt_b_arg_int(args, 2, sig, &requested) != 0)
    return -1;
  TVMFFIAny x, y;
  if (TVMFFIAnyViewToOwnedAny(&args[0], &x) != 0) return -1;
  if (TVMFFIAnyViewToOwnedAny(&args[1], &y) != 0) {
    rt_any_release(&x);
    return -1;
  }
  int32_t saved = c->region;
  c->region = rt_st_callback_region(saved, requested);
  int r = seq_any(c, &x, &y);
  c->region = saved;
  rt_any_release(&x);
  rt_any_release(&y);
  if (r < 0) return -1;
  if (r == 0 && c->lpath != NULL) {
    TVMFFIByteArray name;
    if (!rt_any_get_bytes(&args[3], 0, &name))
      return rt_b_type_error(sig, 3, "ffi.String", &args[3]);
    TVMFFIAny s;
    if (rt_string_to_any(name.data, name.size, &s) != 0) return -1;
    seq_trace(c, RT_ST_ATTR, &s, RT_ST_ATTR, &s);
    rt_any_release(&s);
  }
  rt_any_set_bool(ret, r);
  return 0;
}

static void seq_init(seq_ctx* c, int map_free_vars, int skip_tensor_content) {
  memset(c, 0, sizeof(*c));
  c->region = map_free_vars ? kTVMFFIDefRegionKindPattern : kTVMFFIDefRegionKindNone;
  c->skip_tensor = skip_tensor_content;
  rt_st_map_init(&c->lhs_map);
  rt_st_map_init(&c->rhs_map);
}

static void seq_free(seq_ctx* c) {
  rt_st_map_free(&c->lhs_map);
  rt_st_map_free(&c->rhs_map);
  rt_st_callback_close(c->cell, c->callback);
}

int rt_structural_equal(const TVMFFIAny* lhs, const TVMFFIAny* rhs, int map_free_vars,
                        int skip_tensor_content, int* out) {
  seq_ctx c;
  seq_init(&c, map_free_vars, skip_tensor_content);
  int r = seq_any(&c, lhs, rhs);
  seq_free(&c);
  if (r < 0) return -1;
  *out = r;
  return 0;
}

int rt_structural_first_mismatch(const TVMFFIAny* lhs, const TVMFFIAny* rhs, int map_free_vars,
                                 int skip_tensor_content, TVMFFIAny* out) {
  rt_any_set_none(out);
  seq_ctx c;
  rt_st_steps lpath = {NULL, 0, 0, 0}, rpath = {NULL, 0, 0, 0};
  seq_init(&c, map_free_vars, skip_tensor_content);
  c.lpath = &lpath;
  c.rpath = &rpath;
  int r = seq_any(&c, lhs, rhs);
  seq_free(&c);
  int rc = r < 0 ? -1 : 0;
  if (r == 0) {
    TVMFFIAny lp, rp;
    rt_array* pair = NULL;
    if (rt_st_path_from_reversed(&lpath, &lp) != 0) {
      rc = -1;
    } else if (rt_st_path_from_reversed(&rpath, &rp) != 0) {
      rt_any_release(&lp);
      rc = -1;
    } else if ((pair = rt_array_new(2)) == NULL) {
      rt_any_release(&lp);
      rt_any_release(&rp);
      rc = -1;
    } else {
      rt_array_push_move(pair, &lp);
      rt_array_push_move(pair, &rp);
      rt_any_set_obj(out, pair);
    }
  }
  rt_st_steps_free(&lpath);
  rt_st_steps_free(&rpath);
  return rc;
}

/* ---- globals ---- */
static int seq_args(const char* sig, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* lhs,
                    TVMFFIAny* rhs, int* mfv, int* skip) {
  if (rt_b_check_nargs(sig, nargs, 4) != 0) return -1;
  if (rt_b_arg_bool(args, 2, sig, mfv) != 0 || rt_b_arg_bool(args, 3, sig, skip) != 0) return -1;
  if (TVMFFIAnyViewToOwnedAny(&args[0], lhs) != 0) return -1;
  if (TVMFFIAnyViewToOwnedAny(&args[1], rhs) != 0) {
    rt_any_release(lhs);
    return -1;
  }
  return 0;
}

static int g_structural_equal(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.StructuralEqual(0: Any, 1: Any, 2: bool, 3: bool) -> bool";
  TVMFFIAny lhs, rhs;
  int mfv, skip, eq = 0;
  if (seq_args(sig, args, nargs, &lhs, &rhs, &mfv, &skip) != 0) return -1;
  int rc = rt_structural_equal(&lhs, &rhs, mfv, skip, &eq);
  rt_any_release(&lhs);
  rt_any_release(&rhs);
  if (rc == 0) rt_any_set_bool(ret, eq);
  return rc;
}

static int g_first_mismatch(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] =
      "ffi.GetFirstStructuralMismatch(0: Any, 1: Any, 2: bool, 3: bool) -> "
      "Optional<Tuple<ffi.reflection.AccessPath, ffi.reflection.AccessPath>>";
  TVMFFIAny lhs, rhs;
  int mfv, skip;
  if (seq_args(sig, args, nargs, &lhs, &rhs, &mfv, &skip) != 0) return -1;
  int rc = rt_structural_first_mismatch(&lhs, &rhs, mfv, skip, ret);
  rt_any_release(&lhs);
  rt_any_release(&rhs);
  return rc;
}

RT_INIT(rt_structural_equal_init) {
  rt_register_global("ffi.StructuralEqual", g_structural_equal);
  rt_register_global("ffi.GetFirstStructuralMismatch", g_first_mismatch);
}
