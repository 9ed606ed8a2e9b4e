/* ffi.RecursiveEq / Lt / Le / Gt / Ge: three-way recursive comparison as
 * the official runtime does it.
 *
 * None sorts first; str and bytes compare their content (signed chars, then
 * length) whatever their storage; values of different types are unequal,
 * and refuse ordering (TypeError) except Int against BigInt; NaN equals NaN
 * but refuses ordering; scalars without an order (pointers) refuse it too.
 * Sequences compare item by item then by length; Maps and Dicts of equal
 * size compare the values of equal keys and refuse ordering otherwise (and
 * whenever a difference is found inside one). Objects of one type compare
 * their fields in order (compare-off fields left out); an __ffi_eq__ (for
 * equality) or __ffi_compare__ column value, given the two objects and a
 * callback, takes precedence. A pair met again while being compared counts
 * as equal for equality and is refused (ValueError) for ordering. */
#include <stdio.h>
#include <string.h>

#include "10_extra/dataclass.h"

typedef struct {
  int kind;
  TVMFFIAny* lhs; /* owned children */
  TVMFFIAny* rhs;
  size_t n, idx;
  size_t lhs_size, rhs_size;
  TVMFFIObject* lobj;
  TVMFFIObject* robj;
} cp_frame;

typedef struct {
  cp_frame* f;
  size_t n, cap;
} cp_stack;

typedef struct {
  int eq_only;
  dc_map on_stack; /* (lhs, rhs) pairs */
} cp_ctx;

static int cp_chars(TVMFFIByteArray a, TVMFFIByteArray b) {
  for (size_t i = 0; i < a.size && i < b.size; ++i) {
    signed char x = (signed char)a.data[i], y = (signed char)b.data[i];
    if (x != y) return x < y ? -1 : 1;
  }
  return a.size < b.size ? -1 : a.size > b.size;
}

/* Int/BigInt words, least significant first (two's complement). */
static int cp_bigint(const TVMFFIAny* a, const TVMFFIAny* b) {
  TVMFFIByteArray x = TVMFFIBigIntGetContentByteArray(a), y = TVMFFIBigIntGetContentByteArray(b);
  size_t na = x.size / 8, nb = y.size / 8;
  int64_t ta, tb;
  memcpy(&ta, x.data + (na - 1) * 8, 8);
  memcpy(&tb, y.data + (nb - 1) * 8, 8);
  if ((ta < 0) != (tb < 0)) return ta < 0 ? -1 : 1;
  uint64_t sa = ta < 0 ? ~(uint64_t)0 : 0, sb = tb < 0 ? ~(uint64_t)0 : 0;
  for (size_t i = na > nb ? na : nb; i != 0; --i) {
    uint64_t u = sa, w = sb;
    if (i <= na) memcpy(&u, x.data + (i - 1) * 8, 8);
    if (i <= nb) memcpy(&w, y.data + (i - 1) * 8, 8);
    if (u != w) return u > w ? 1 : -1;
  }
  return 0;
}

static int cp_no_order(const char* what) { return rt_raise("TypeError", "%s", what); }

/* 1: *out set; 0: a frame is needed; -1: error. */
static int cp_pod(cp_ctx* c, const TVMFFIAny* a, const TVMFFIAny* b, int32_t* out) {
  switch (a->type_index) {
    case kTVMFFIBool: *out = (a->v_int64 != 0) - (b->v_int64 != 0); return 1;
    case kTVMFFIInt: *out = a->v_int64 < b->v_int64 ? -1 : a->v_int64 > b->v_int64; return 1;
    case kTVMFFIFloat: {
      double x = a->v_float64, y = b->v_float64;
      if (x != x || y != y) {
        if (!c->eq_only) return cp_no_order("Cannot order NaN values");
        *out = (x != x && y != y) ? 0 : 1;
        return 1;
      }
      *out = x < y ? -1 : x > y;
      return 1;
    }
    case kTVMFFIDataType: {
      DLDataType x = a->v_dtype, y = b->v_dtype;
      *out = x.code != y.code ? (x.code < y.code ? -1 : 1)
             : x.bits != y.bits ? (x.bits < y.bits ? -1 : 1)
             : x.lanes != y.lanes ? (x.lanes < y.lanes ? -1 : 1) : 0;
      return 1;
    }
    case kTVMFFIDevice: {
      DLDevice x = a->v_device, y = b->v_device;
      *out = x.device_type != y.device_type ? ((int)x.device_type < (int)y.device_type ? -1 : 1)
             : x.device_id != y.device_id ? (x.device_id < y.device_id ? -1 : 1) : 0;
      return 1;
    }
    default:
      if (a->zero_padding == b->zero_padding && a->v_int64 == b->v_int64) {
        *out = 0;
        return 1;
      }
      if (c->eq_only) {
        *out = 1;
        return 1;
      }
      TVMFFIByteArray k = dc_type_key(a->type_index);
      return rt_raise("TypeError", "Cannot order values of type %.*s", (int)k.size, k.data);
  }
}

static int cp_type_mismatch(const char* what, int32_t l, int32_t r) {
  TVMFFIByteArray a = dc_type_key(l), b = dc_type_key(r);
  return rt_raise("TypeError", "Cannot compare %s of different types: %.*s vs %.*s", what,
                  (int)a.size, a.data, (int)b.size, b.data);
}

static int cp_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret);

/* A user type's __ffi_eq__ / __ffi_compare__: 1 answered, 0 none, -1. */
static int cp_hook(cp_ctx* c, const TVMFFIAny* a, const TVMFFIAny* b, int32_t* out) {
  TVMFFIObject *lo = a->v_obj, *ro = b->v_obj;
  if (lo->type_index != ro->type_index) {
    if (c->eq_only) {
      *out = 1;
      return 1;
    }
    return cp_type_mismatch("objects", lo->type_index, ro->type_index);
  }
  const TVMFFIAny* eq = c->eq_only ? dc_column(DC_COL_EQ, lo->type_index) : NULL;
  const TVMFFIAny* cmp = dc_column(DC_COL_CMP, lo->type_index);
  const TVMFFIAny* hook = eq ? eq : cmp;
  if (hook == NULL) return 0;
  dc_entry* e = dc_map_put(&c->on_stack, lo, ro);
  if (e == NULL) return -1;
  TVMFFIAny args[3], r;
  args[0] = *a;
  args[1] = *b;
  /* the callback answers bool for __ffi_eq__, int for __ffi_compare__ */
  if (dc_make_callback(eq ? (void*)((uintptr_t)c | 1) : (void*)c, cp_callback, &args[2]) != 0)
    return -1;
  int rc = dc_call(hook, eq ? DC_SIG_EQ : DC_SIG_CMP, args, 3, &r);
  rt_any_release(&args[2]);
  dc_map_erase(&c->on_stack, lo, ro);
  if (rc != 0) return -1;
  if (r.type_index != kTVMFFIInt && r.type_index != kTVMFFIBool) {
    TVMFFIByteArray k = dc_type_key(r.type_index);
    rt_any_release(&r);
    return rt_raise("TypeError", "Cannot convert from type `%.*s` to `%s`", (int)k.size, k.data,
                    eq ? "bool" : "int");
  }
  *out = eq ? (r.v_int64 ? 0 : 1) : (int32_t)r.v_int64;
  return 1;
}

static int cp_immediate(cp_ctx* c, const TVMFFIAny* a, const TVMFFIAny* b, int32_t* out) {
  int32_t lt = a->type_index, rt = b->type_index;
  if (lt == kTVMFFINone || rt == kTVMFFINone) {
    *out = lt == rt ? 0 : lt == kTVMFFINone ? -1 : 1;
    return 1;
  }
  int ls = lt == kTVMFFIStr || lt == kTVMFFISmallStr, rs = rt == kTVMFFIStr || rt == kTVMFFISmallStr;
  int lb = lt == kTVMFFIBytes || lt == kTVMFFISmallBytes;
  int rb = rt == kTVMFFIBytes || rt == kTVMFFISmallBytes;
  if ((ls && rs) || (lb && rb)) {
    *out = cp_chars(dc_bytes(a), dc_bytes(b));
    return 1;
  }
  if (lt != rt) {
    if (c->eq_only) {
      *out = 1;
      return 1;
    }
    if ((lt == kTVMFFIInt && rt == kTVMFFIBigInt) || (lt == kTVMFFIBigInt && rt == kTVMFFIInt)) {
      *out = cp_bigint(a, b);
      return 1;
    }
    return cp_type_mismatch("values", lt, rt);
  }
  if (lt < kTVMFFIStaticObjectBegin) return cp_pod(c, a, b, out);
  if (lt == kTVMFFIBigInt) {
    int v = cp_bigint(a, b);
    *out = c->eq_only ? (v != 0) : v;
    return 1;
  }
  TVMFFIObject *lo = a->v_obj, *ro = b->v_obj;
  if (lo == ro || lo == NULL || ro == NULL) {
    *out = lo == ro ? 0 : lo == NULL ? -1 : 1;
    return 1;
  }
  if (lt == kTVMFFIShape) {
    const TVMFFIShapeCell *x = (const TVMFFIShapeCell*)rt_cell(lo), *y = (const TVMFFIShapeCell*)rt_cell(ro);
    *out = 0;
    for (size_t i = 0; i < x->size && i < y->size && *out == 0; ++i)
      *out = x->data[i] < y->data[i] ? -1 : x->data[i] > y->data[i];
    if (*out == 0) *out = x->size < y->size ? -1 : x->size > y->size;
    return 1;
  }
  if (dc_map_find(&c->on_stack, lo, ro)) {
    if (!c->eq_only) return rt_raise("ValueError", "RecursiveCompare: cyclic reference detected in ordering");
    *out = 0;
    return 1;
  }
  if (lt >= kTVMFFIStaticObjectEnd) return cp_hook(c, a, b, out);
  return 0;
}

/* ---- frames ---- */
static void cp_frame_free(cp_frame* f) {
  for (size_t i = 0; i < f->n; ++i) {
    rt_any_release(&f->lhs[i]);
    rt_any_release(&f->rhs[i]);
  }
  free(f->lhs);
  free(f->rhs);
}

static int cp_map_order_error(void) { return rt_raise("TypeError", "Cannot order Map/Dict values"); }

/* 0: frame pushed; 1: *out answered without one; -1: error. */
static int cp_push(cp_ctx* c, cp_stack* st, const TVMFFIAny* a, const TVMFFIAny* b, int32_t* out) {
  if (st->n >= DC_MAX_DEPTH)
    return rt_raise("ValueError", "RecursiveCompare: maximum stack depth (%zu) exceeded",
                    DC_MAX_DEPTH);
  if (st->n == st->cap) {
    size_t cap = st->cap ? st->cap * 2 : 16;
    cp_frame* f = (cp_frame*)realloc(st->f, cap * sizeof(cp_frame));
    if (f == NULL) return rt_raise("MemoryError", "out of memory");
    st->f = f;
    st->cap = cap;
  }
  TVMFFIObject *lo = a->v_obj, *ro = b->v_obj;
  int32_t ti = a->type_index;
  if (ti >= kTVMFFIStaticObjectEnd || (ti != kTVMFFIArray && ti != kTVMFFIList &&
                                       ti != kTVMFFIMap && ti != kTVMFFIDict)) {
    if (lo->type_index != ro->type_index) {
      if (c->eq_only) {
        *out = 1;
        return 1;
      }
      return cp_type_mismatch("objects", lo->type_index, ro->type_index);
    }
  }
  dc_children lc, rc_;
  memset(&rc_, 0, sizeof(rc_));
  if (dc_children_of(a, kTVMFFIFieldFlagBitMaskCompareOff, &lc) != 0) {
    dc_children_free(&lc);
    return -1;
  }
  if (dc_children_of(b, kTVMFFIFieldFlagBitMaskCompareOff, &rc_) != 0) {
    dc_children_free(&lc);
    dc_children_free(&rc_);
    return -1;
  }
  cp_frame f;
  memset(&f, 0, sizeof(f));
  f.kind = lc.kind;
  f.lobj = lo;
  f.robj = ro;
  f.lhs_size = lc.size;
  f.rhs_size = rc_.size;
  int result = 0;
  if (lc.kind == DC_MAP) {
    if (lc.size != rc_.size) {
      result = c->eq_only ? 1 : cp_map_order_error();
    } else {
      /* pair each lhs value with the rhs value of an equal key */
      f.lhs = (TVMFFIAny*)calloc(lc.size ? lc.size : 1, sizeof(TVMFFIAny));
      f.rhs = (TVMFFIAny*)calloc(lc.size ? lc.size : 1, sizeof(TVMFFIAny));
      if (!f.lhs || !f.rhs) result = rt_raise("MemoryError", "out of memory");
      for (size_t i = 0; result == 0 && i + 1 < lc.n; i += 2) {
        const TVMFFIAny* found = NULL;
        if (rt_map_find(ro, &lc.items[i], &found) != 0) {
          result = -1;
        } else if (found == NULL) {
          result = c->eq_only ? 1 : cp_map_order_error();
        } else {
          f.lhs[f.n] = lc.items[i + 1];
          rt_any_retain(&f.lhs[f.n]);
          f.rhs[f.n] = *found;
          rt_any_retain(&f.rhs[f.n]);
          ++f.n;
        }
      }
    }
  } else {
    size_t n = lc.n < rc_.n ? lc.n : rc_.n;
    f.lhs = lc.items; /* take the children over */
    f.rhs = rc_.items;
    for (size_t i = n; i < lc.n; ++i) rt_any_release(&lc.items[i]);
    for (size_t i = n; i < rc_.n; ++i) rt_any_release(&rc_.items[i]);
    lc.items = rc_.items = NULL;
    lc.n = rc_.n = 0;
    f.n = n;
  }
  dc_children_free(&lc);
  dc_children_free(&rc_);
  if (result != 0) {
    cp_frame_free(&f);
    if (result == 1) *out = 1;
    return result;
  }
  if (dc_map_put(&c->on_stack, lo, ro) == NULL) {
    cp_frame_free(&f);
    return -1;
  }
  st->f[st->n++] = f;
  return 0;
}

static void cp_pop(cp_ctx* c, cp_stack* st) {
  cp_frame* f = &st->f[--st->n];
  dc_map_erase(&c->on_stack, f->lobj, f->robj);
  cp_frame_free(f);
}

/* A difference was found: ordering refuses it inside a Map/Dict. */
static int cp_terminate(cp_ctx* c, cp_stack* st) {
  int in_map = 0;
  for (size_t i = 0; i < st->n; ++i) in_map |= st->f[i].kind == DC_MAP;
  while (st->n) cp_pop(c, st);
  return (!c->eq_only && in_map) ? cp_map_order_error() : 0;
}

static int cp_run(cp_ctx* c, const TVMFFIAny* a, const TVMFFIAny* b, int32_t* out) {
  int r = cp_immediate(c, a, b, out);
  if (r != 0) return r < 0 ? -1 : 0;
  cp_stack st = {NULL, 0, 0};
  r = cp_push(c, &st, a, b, out);
  int rc = r < 0 ? -1 : 0;
  while (r == 0) {
    cp_frame* f = &st.f[st.n - 1];
    int pushed = 0;
    int32_t v = 0;
    while (f->idx < f->n) {
      size_t i = f->idx++;
      r = cp_immediate(c, &f->lhs[i], &f->rhs[i], &v);
      if (r == 0) {
        r = cp_push(c, &st, &f->lhs[i], &f->rhs[i], &v);
        if (r == 0) {
          pushed = 1;
          break;
        }
      }
      if (r < 0) break;
      if (v != 0) break;
      r = 0;
    }
    if (r < 0) {
      rc = -1;
      break;
    }
    if (pushed) continue;
    if (v == 0) {
      f = &st.f[st.n - 1];
      if (f->kind == DC_SEQ) v = f->lhs_size < f->rhs_size ? -1 : f->lhs_size > f->rhs_size;
      cp_pop(c, &st);
      if (st.n == 0) {
        *out = v;
        break;
      }
      if (v == 0) continue;
    }
    rc = cp_terminate(c, &st);
    *out = v;
    break;
  }
  while (st.n) cp_pop(c, &st);
  free(st.f);
  return rc;
}

/* The callback a hook gets; ctx bit 0 set: for __ffi_eq__ (answers bool). */
static int cp_callback(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  int as_bool = (int)((uintptr_t)self & 1);
  cp_ctx* c = (cp_ctx*)((uintptr_t)self & ~(uintptr_t)1);
  if (n != 2)
    return rt_raise("TypeError",
                    "Mismatched number of arguments when calling: `%s(0: Any, 1: Any) -> %s`. "
                    "Expected 2 but got %d arguments", as_bool ? "fn_eq" : "fn_cmp",
                    as_bool ? "bool" : "int", (int)n);
  TVMFFIAny a, b;
  if (dc_own(&args[0], &a) != 0) return -1;
  if (dc_own(&args[1], &b) != 0) {
    rt_any_release(&a);
    return -1;
  }
  int32_t v = 0;
  int rc = cp_run(c, &a, &b, &v);
  rt_any_release(&a);
  rt_any_release(&b);
  if (rc != 0) return -1;
  if (as_bool) rt_any_set_bool(ret, v == 0);
  else rt_any_set_int(ret, v);
  return 0;
}

int rt_dc_compare(const TVMFFIAny* lhs, const TVMFFIAny* rhs, int eq_only, int32_t* out) {
  cp_ctx c;
  memset(&c, 0, sizeof(c));
  c.eq_only = eq_only;
  TVMFFIAny a, b;
  if (dc_own(lhs, &a) != 0) return -1;
  if (dc_own(rhs, &b) != 0) {
    rt_any_release(&a);
    return -1;
  }
  *out = 0;
  int rc = cp_run(&c, &a, &b, out);
  rt_any_release(&a);
  rt_any_release(&b);
  dc_map_free(&c.on_stack);
  return rc;
}

/* ---- the globals ---- */
enum { OP_EQ, OP_LT, OP_LE, OP_GT, OP_GE };
static const char* const cp_names[] = {"ffi.RecursiveEq", "ffi.RecursiveLt", "ffi.RecursiveLe",
                                       "ffi.RecursiveGt", "ffi.RecursiveGe"};

static int cp_global(int op, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  char sig[80];
  snprintf(sig, sizeof(sig), "%s(0: Any, 1: Any) -> bool", cp_names[op]);
  if (rt_b_check_nargs(sig, n, 2) != 0) return -1;
  int32_t v = 0;
  if (rt_dc_compare(&args[0], &args[1], op == OP_EQ, &v) != 0) return -1;
  int r = op == OP_EQ ? v == 0 : op == OP_LT ? v < 0 : op == OP_LE ? v <= 0 : op == OP_GT ? v > 0 : v >= 0;
  rt_any_set_bool(ret, r);
  return 0;
}

#define CP_GLOBAL(fn, op)                                                      \
  static int fn(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) { \
    (void)h;                                                                   \
    return cp_global(op, args, n, ret);                                        \
  }
CP_GLOBAL(g_eq, OP_EQ)
CP_GLOBAL(g_lt, OP_LT)
CP_GLOBAL(g_le, OP_LE)
CP_GLOBAL(g_gt, OP_GT)
CP_GLOBAL(g_ge, OP_GE)

RT_INIT(rt_dataclass_compare_init) {
  TVMFFISafeCallType fns[] = {g_eq, g_lt, g_le, g_gt, g_ge};
  for (int i = 0; i < 5; ++i) dc_register_global(cp_names[i], fns[i], 2, "bool");
}
