/* Structural hash (ffi.StructuralHash) with the official runtime's values:
 *  - POD: combine(type index, the 64 value bits); every NaN hashes as the
 *    quiet NaN; an inline string as the heap string of the same content;
 *  - String/Bytes: combine(type index, the stable byte hash), BigInt the
 *    same over its words;
 *  - containers, shapes, tensors and objects start from the type key hash
 *    of their type (TypeInfo.type_key_hash);
 *  - Array/List: size, then each element; Shape: size, then each dim;
 *  - Map/Dict: size, then (key hash, value hash) pairs sorted by the key's
 *    order-independent hash; keys without one (objects not hashed yet) are
 *    left out, and equal key hashes leave out their values;
 *  - Tensor: ndim, dims, dtype, then the content unless skip_tensor_content;
 *  - objects: memoised per walk; fields (or the __s_hash__ hook) combined
 *    into the type key hash; a FreeVar inside a def region adds its order of
 *    appearance, outside one it hashes by address; a DAGNode adds its order
 *    of appearance among DAG nodes. */
#include <math.h>
#include <string.h>

#include "structural_internal.h"

typedef struct {
  int32_t region;
  int skip_tensor;
  int depth;
  uint32_t free_var_counter;
  uint32_t graph_node_counter;
  rt_st_map memo; /* object -> hash */
  TVMFFIObjectHandle callback; /* for custom __s_hash__ hooks, made lazily */
  rt_st_cell* cell;
} shash_ctx;

static int sh_any(shash_ctx* c, const TVMFFIAny* v, uint64_t* out);

static uint64_t sh_type_key_hash(const void* obj) {
  const TVMFFITypeInfo* t = TVMFFIGetTypeInfo(((const TVMFFIObject*)obj)->type_index);
  return t ? t->type_key_hash : 0;
}

static uint64_t sh_small_str(const TVMFFIAny* v) {
  return rt_st_combine(kTVMFFIStr, v->v_uint64 % 2147483647ull);
}

static uint64_t sh_bytes_obj(const TVMFFIAny* v) {
  const TVMFFIByteArray* b = (const TVMFFIByteArray*)rt_cell(v->v_obj);
  return rt_st_combine((uint64_t)v->type_index, rt_hash_bytes(b->data, b->size));
}

static uint64_t sh_bigint(const TVMFFIAny* v) {
  TVMFFIByteArray w = TVMFFIBigIntGetContentByteArray(v);
  return rt_st_combine((uint64_t)v->type_index, rt_hash_bytes(w.data, w.size));
}

static int sh_sequence(shash_ctx* c, void* seq, uint64_t* out) {
  int64_t n;
  (void)rt_seq_items(seq, &n);
  uint64_t h = rt_st_combine(sh_type_key_hash(seq), (uint64_t)n);
  for (int64_t i = 0; i < n; ++i) {
    int64_t now;
    const TVMFFIAny* items = rt_seq_items(seq, &now);
    if (i >= now) break; /* a hook shrank a list under us */
    TVMFFIAny x = items[i];
    uint64_t e;
    rt_any_retain(&x);
    int r = sh_any(c, &x, &e);
    rt_any_release(&x);
    if (r != 0) return -1;
    h = rt_st_combine(h, e);
  }
  *out = h;
  return 0;
}

/* A map key's hash independent of the walk order so far; 0 when it has none. */
static int sh_key_hash(const shash_ctx* c, const TVMFFIAny* k, uint64_t* out) {
  int32_t t = k->type_index;
  if (t < kTVMFFIStaticObjectBegin) {
    *out = t == kTVMFFISmallStr ? sh_small_str(k) : rt_st_combine((uint64_t)t, k->v_uint64);
    return 1;
  }
  if (t == kTVMFFIStr || t == kTVMFFIBytes) {
    *out = sh_bytes_obj(k);
    return 1;
  }
  if (t == kTVMFFIBigInt) {
    *out = sh_bigint(k);
    return 1;
  }
  const rt_st_slot* s = rt_st_map_find(&c->memo, k->v_obj);
  if (s == NULL) return 0;
  *out = s->num;
  return 1;
}

typedef struct {
  uint64_t key_hash;
  TVMFFIAny value; /* owned */
} sh_item;

static int sh_item_cmp(const void* a, const void* b) {
  uint64_t x = ((const sh_item*)a)->key_hash, y = ((const sh_item*)b)->key_hash;
  return x < y ? -1 : x > y;
}

static int sh_map(shash_ctx* c, void* map, uint64_t* out) {
  int64_t n = rt_map_size(map);
  uint64_t h = rt_st_combine(sh_type_key_hash(map), (uint64_t)n);
  sh_item* items = (sh_item*)malloc((size_t)(n > 0 ? n : 1) * sizeof(sh_item));
  if (items == NULL) return rt_raise("MemoryError", "out of memory hashing a map");
  size_t m = 0;
  for (uint64_t it = rt_map_iter_begin(map); it != rt_map_iter_end(map) && m < (size_t)n;
       it = rt_map_iter_next(map, it)) {
    const TVMFFIAny *k, *v;
    rt_map_iter_kv(map, it, &k, &v);
    if (!sh_key_hash(c, k, &items[m].key_hash)) continue;
    items[m].value = *v;
    rt_any_retain(&items[m].value);
    ++m;
  }
  qsort(items, m, sizeof(sh_item), sh_item_cmp);
  int rc = 0;
  for (size_t i = 0; i < m && rc == 0;) {
    size_t k = i + 1;
    while (k < m && items[k].key_hash == items[i].key_hash) ++k;
    h = rt_st_combine(h, items[i].key_hash);
    if (k == i + 1) { /* a tie leaves the values out: their order is arbitrary */
      uint64_t vh;
      rc = sh_any(c, &items[i].value, &vh);
      if (rc == 0) h = rt_st_combine(h, vh);
    }
    i = k;
  }
  for (size_t i = 0; i < m; ++i) rt_any_release(&items[i].value);
  free(items);
  *out = h;
  return rc;
}

static uint64_t sh_shape(void* shape) {
  const TVMFFIShapeCell* s = (const TVMFFIShapeCell*)rt_cell(shape);
  uint64_t h = rt_st_combine(sh_type_key_hash(shape), (uint64_t)s->size);
  for (size_t i = 0; i < s->size; ++i) h = rt_st_combine(h, (uint64_t)s->data[i]);
  return h;
}

static int sh_tensor(shash_ctx* c, void* tensor, uint64_t* out) {
  const DLTensor* t = rt_st_dltensor(tensor);
  uint64_t h = rt_st_combine(sh_type_key_hash(tensor), (uint64_t)(int64_t)t->ndim);
  for (int32_t i = 0; i < t->ndim; ++i) h = rt_st_combine(h, (uint64_t)t->shape[i]);
  /* the dtype as the low 32 bits of an Any value: code, bits, lanes */
  uint64_t dt = (uint64_t)t->dtype.code | ((uint64_t)t->dtype.bits << 8) |
                ((uint64_t)t->dtype.lanes << 16);
  h = rt_st_combine(h, dt);
  if (!c->skip_tensor) {
    if (rt_st_tensor_on_cpu(t, "tensor", "hash") != 0 ||
        rt_st_tensor_contiguous(t, "tensor", "hash") != 0)
      return -1;
    size_t n = rt_st_tensor_nbytes(t);
    h = rt_st_combine(h, n ? rt_hash_bytes((const char*)t->data, n) : 0);
  }
  *out = h;
  return 0;
}

/* ---- objects ---- */
static int sh_callback(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret);

static int sh_fields(shash_ctx* c, void* obj, const TVMFFITypeInfo* info, uint64_t* out) {
  uint64_t h = info->type_key_hash;
  const TVMFFIAny* hook = rt_st_hook("__s_hash__", info->type_index);
  if (hook != NULL) {
    if (hook->type_index != kTVMFFIFunction)
      return rt_raise("TypeError", "the __s_hash__ attribute of a type must be a Function");
    if (c->callback == NULL && rt_st_callback_new(c, sh_callback, &c->callback, &c->cell) != 0)
      return -1;
    TVMFFIAny args[3], ret;
    rt_any_set_obj(&args[0], obj); /* views: no reference taken */
    rt_any_set_int(&args[1], (int64_t)h);
    rt_any_set_obj(&args[2], c->callback);
    rt_any_set_none(&ret);
    if (TVMFFIFunctionCall(hook->v_obj, args, 3, &ret) != 0) return -1;
    if (ret.type_index != kTVMFFIInt) {
      rt_any_release(&ret);
      return rt_raise("TypeError", "__s_hash__ must return an int");
    }
    *out = (uint64_t)ret.v_int64;
    return 0;
  }
  rt_st_fields it;
  rt_st_fields_begin(&it, info);
  for (const TVMFFIFieldInfo* f; (f = rt_st_fields_next(&it)) != NULL;) {
    if (f->flags & kTVMFFIFieldFlagBitMaskSEqHashIgnore) continue;
    TVMFFIAny v;
    uint64_t fh;
    if (rt_st_field_get(obj, f, &v) != 0) return -1;
    int32_t saved = c->region;
    c->region = rt_st_field_region(saved, f->flags);
    int r = sh_any(c, &v, &fh);
    c->region = saved;
    rt_any_release(&v);
    if (r != 0) return -1;
    h = rt_st_combine(h, fh);
  }
  *out = h;
  return 0;
}

static int sh_object(shash_ctx* c, void* obj, uint64_t* out) {
  const TVMFFITypeInfo* info;
  TVMFFISEqHashKind kind;
  if (rt_st_kind(((TVMFFIObject*)obj)->type_index, &info, &kind) != 0) return -1;
  const rt_st_slot* seen = rt_st_map_find(&c->memo, obj);
  if (seen != NULL) {
    *out = seen->num;
    return 0;
  }
  uint64_t h;
  if (kind != kTVMFFISEqHashKindFreeVar) {
    if (sh_fields(c, obj, info, &h) != 0) return -1;
  } else {
    /* the fields are walked even when the address decides: nested free
     * variables in def-flagged fields advance the counter */
    int32_t saved = c->region;
    if (saved == kTVMFFIDefRegionKindSimple) c->region = kTVMFFIDefRegionKindNone;
    int r = sh_fields(c, obj, info, &h);
    c->region = saved;
    if (r != 0) return -1;
    if (c->region != kTVMFFIDefRegionKindNone) {
      h = rt_st_combine(h, c->free_var_counter++);
    } else {
      h = (uint64_t)(uintptr_t)obj;
    }
  }
  if (kind == kTVMFFISEqHashKindDAGNode) h = rt_st_combine(h, c->graph_node_counter++);
  if (rt_st_map_put(&c->memo, obj, NULL, h) != 0) return -1;
  *out = h;
  return 0;
}

static int sh_any_inner(shash_ctx* c, const TVMFFIAny* v, uint64_t* out) {
  int32_t t = v->type_index;
  if (t < kTVMFFIStaticObjectBegin) {
    if (t == kTVMFFIFloat && isnan(v->v_float64)) {
      *out = rt_st_combine(kTVMFFIFloat, 0x7ff8000000000000ull); /* the quiet NaN */
    } else if (t == kTVMFFISmallStr) {
      *out = sh_small_str(v);
    } else {
      *out = rt_st_combine((uint64_t)t, v->v_uint64);
    }
    return 0;
  }
  switch (t) {
    case kTVMFFIBigInt:
      *out = sh_bigint(v);
      return 0;
    case kTVMFFIStr:
    case kTVMFFIBytes:
      *out = sh_bytes_obj(v);
      return 0;
    case kTVMFFIArray:
    case kTVMFFIList:
      return sh_sequence(c, v->v_obj, out);
    case kTVMFFIMap:
    case kTVMFFIDict:
      return sh_map(c, v->v_obj, out);
    case kTVMFFIShape:
      *out = sh_shape(v->v_obj);
      return 0;
    case kTVMFFITensor:
      return sh_tensor(c, v->v_obj, out);
    default:
      return sh_object(c, v->v_obj, out);
  }
}

static int sh_any(shash_ctx* c, const TVMFFIAny* v, uint64_t* out) {
  if (rt_st_too_deep_now(++c->depth)) {
    --c->depth;
    return rt_st_too_deep("StructuralHash");
  }
  int r = sh_any_inner(c, v, out);
  --c->depth;
  return r;
}

/* The Function handed to __s_hash__ hooks:
 * (value, init: int, def_region_kind: int) -> int, combine(init, hash(value)). */
static int sh_callback(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  static const char sig[] = "(0: Any, 1: int, 2: int) -> int";
  shash_ctx* c = (shash_ctx*)self;
  int64_t init, requested;
  if (rt_b_check_nargs(sig, nargs, 3) != 0 || rt_b_arg_int(args, 1, sig, &init) != 0 ||
      rt_b_arg_int(args, 2, sig, &requested) != 0)
    return -1;
  TVMFFIAny v;
  if (TVMFFIAnyViewToOwnedAny(&args[0], &v) != 0) return -1;
  int32_t saved = c->region;
  c->region = rt_st_callback_region(saved, requested);
  uint64_t h;
  int r = sh_any(c, &v, &h);
  c->region = saved;
  rt_any_release(&v);
  if (r != 0) return -1;
  rt_any_set_int(ret, (int64_t)rt_st_combine((uint64_t)init, h));
  return 0;
}

int rt_structural_hash(const TVMFFIAny* value, int map_free_vars, int skip_tensor_content,
                       uint64_t* out) {
  shash_ctx c;
  memset(&c, 0, sizeof(c));
  c.region = map_free_vars ? kTVMFFIDefRegionKindPattern : kTVMFFIDefRegionKindNone;
  c.skip_tensor = skip_tensor_content;
  rt_st_map_init(&c.memo);
  int r = sh_any(&c, value, out);
  rt_st_map_free(&c.memo);
  rt_st_callback_close(c.cell, c.callback);
  return r;
}

static int g_structural_hash(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.StructuralHash(0: Any, 1: bool, 2: bool) -> int";
  int mfv, skip;
  if (rt_b_check_nargs(sig, nargs, 3) != 0 || rt_b_arg_bool(args, 1, sig, &mfv) != 0 ||
      rt_b_arg_bool(args, 2, sig, &skip) != 0)
    return -1;
  TVMFFIAny v;
  if (TVMFFIAnyViewToOwnedAny(&args[0], &v) != 0) return -1;
  uint64_t hv = 0;
  int rc = rt_structural_hash(&v, mfv, skip, &hv);
  rt_any_release(&v);
  if (rc == 0) rt_any_set_int(ret, (int64_t)hv);
  return rc;
}

RT_INIT(rt_structural_hash_init) { rt_register_global("ffi.StructuralHash", g_structural_hash); }
