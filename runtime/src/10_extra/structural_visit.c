/* Structural visiting: the visitor object (ffi.StructuralVisitor), its
 * default descent (a type's __s_visit__ hook, else its reflected fields
 * under their definition regions), the hooks of the built-in containers,
 * the walk and visit engines driven by callback tables, and the globals
 * ffi.StructuralWalk / ffi.StructuralVisit / ffi.StructuralVisitor*.
 * Also the helpers the mutator shares (see structural_visit.h). */
#include <stdio.h>
#include <string.h>

#include "structural_visit.h"

/* ------------------------------------------------------------------ */
/* shared helpers                                                      */
/* ------------------------------------------------------------------ */
static int32_t sv_lookup_type(int32_t* cache, const char* key) {
  int32_t v = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (v > 0) return v;
  TVMFFIByteArray b = rt_ba(key);
  int32_t idx = -1;
  if (TVMFFITypeKeyToIndex(&b, &idx) != 0) {
    TVMFFIErrorMoveFromRaised(NULL);
    return -1;
  }
  __atomic_store_n(cache, idx, __ATOMIC_RELEASE);
  return idx;
}

static int32_t sv_visitor_ti, sv_mutator_ti, sv_context_ti;
int32_t rt_sv_visitor_type(void) { return sv_lookup_type(&sv_visitor_ti, "ffi.StructuralVisitor"); }
int32_t rt_sv_mutator_type(void) { return sv_lookup_type(&sv_mutator_ti, "ffi.StructuralMutator"); }

int rt_sv_type_match(int32_t actual, int32_t target) {
  if (actual == target || target == kTVMFFIAny) return 1;
  if (target == kTVMFFIStr) return actual == kTVMFFISmallStr;
  if (target == kTVMFFIBytes) return actual == kTVMFFISmallBytes;
  if (target == kTVMFFIObject) return actual >= kTVMFFIStaticObjectBegin;
  if (actual < kTVMFFIStaticObjectBegin || target < kTVMFFIStaticObjectBegin) return 0;
  if (actual < target) return 0;
  return rt_type_is_instance(actual, target);
}

TVMFFIAny rt_sv_take_raised(void) {
  TVMFFIObjectHandle h = NULL;
  TVMFFIErrorMoveFromRaised(&h);
  if (h == NULL) return rt_sv_error("InternalError", "a call failed without raising an error");
  TVMFFIAny a;
  rt_any_set_obj(&a, h);
  return a;
}

TVMFFIAny rt_sv_error(const char* kind, const char* fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  rt_raise(kind, "%s", msg);
  TVMFFIObjectHandle h = NULL;
  TVMFFIErrorMoveFromRaised(&h);
  TVMFFIAny a;
  if (h == NULL) {
    rt_any_set_none(&a);
    return a;
  }
  rt_any_set_obj(&a, h);
  return a;
}

int rt_sv_raise(TVMFFIAny* err) {
  TVMFFIErrorSetRaised(err->v_obj);
  rt_any_release(err);
  return -1;
}

/* The VisitErrorContext layout (as builtin_types.c registers it). */
typedef struct {
  TVMFFIObject header;
  void* reverse_visit_pattern; /* ffi.List of nodes, innermost first */
  void* prev_error_context;
} sv_context;

void rt_sv_attach_context(const TVMFFIAny* err, const TVMFFIAny* node) {
  if (err->type_index != kTVMFFIError || node->type_index < kTVMFFIStaticObjectBegin) return;
  int32_t cti = sv_lookup_type(&sv_context_ti, "ffi.VisitErrorContext");
  if (cti < 0) return;
  TVMFFIErrorCell* cell = (TVMFFIErrorCell*)rt_cell(err->v_obj);
  TVMFFIObject* extra = (TVMFFIObject*)cell->extra_context;
  if (extra != NULL && extra->type_index == cti) {
    sv_context* c = (sv_context*)extra;
    if (c->reverse_visit_pattern) (void)rt_list_append(c->reverse_visit_pattern, node);
    TVMFFIErrorMoveFromRaised(NULL);
    return;
  }
  /* a fresh context through the type's own constructor (it makes the list) */
  TVMFFIByteArray col_name = rt_ba("__ffi_new__");
  const TVMFFITypeAttrColumn* col = TVMFFIGetTypeAttrColumn(&col_name);
  if (col == NULL || cti >= col->size || col->data[cti].type_index != kTVMFFIFunction) return;
  TVMFFIAny made;
  rt_any_set_none(&made);
  if (TVMFFIFunctionCall(col->data[cti].v_obj, NULL, 0, &made) != 0 ||
      made.type_index != cti) {
    TVMFFIErrorMoveFromRaised(NULL);
    rt_any_release(&made);
    return;
  }
  sv_context* c = (sv_context*)made.v_obj;
  if (c->reverse_visit_pattern == NULL || rt_list_append(c->reverse_visit_pattern, node) != 0) {
    TVMFFIErrorMoveFromRaised(NULL);
    rt_any_release(&made);
    return;
  }
  c->prev_error_context = extra; /* the old context moves into the new one */
  cell->extra_context = c;
}

TVMFFIAny rt_sv_call(void* fn, const TVMFFIAny* args, int32_t nargs) {
  TVMFFIAny out;
  rt_any_set_none(&out);
  if (TVMFFIFunctionCall(fn, (TVMFFIAny*)args, nargs, &out) != 0) return rt_sv_take_raised();
  return out;
}

int rt_sv_take_arg(const TVMFFIAny* a, TVMFFIAny* out) {
  if (a->type_index == kTVMFFIObjectRValueRef) {
    TVMFFIObject** slot = (TVMFFIObject**)a->v_ptr;
    if (slot == NULL || *slot == NULL) {
      rt_any_set_none(out);
      return 0;
    }
    rt_any_set_obj(out, *slot);
    *slot = NULL;
    return 0;
  }
  return TVMFFIAnyViewToOwnedAny(a, out);
}

/* ---- callback tables: Array<Tuple<int, ffi.Function[, bool]>> ---- */
static int sv_entry_item_ok(const TVMFFIAny* v, int pos) {
  if (pos == 0 || pos == 2) return v->type_index == kTVMFFIInt || v->type_index == kTVMFFIBool;
  return v->type_index == kTVMFFIFunction;
}

void* rt_sv_check_table(const TVMFFIAny* args, int32_t i, const char* sig, const char* expected,
                        int width) {
  const TVMFFIAny* a = &args[i];
  if (a->type_index != kTVMFFIArray) {
    rt_b_type_error(sig, i, expected, a);
    return NULL;
  }
  int64_t n = 0;
  const TVMFFIAny* items = rt_seq_items(a->v_obj, &n);
  for (int64_t k = 0; k < n; ++k) {
    const TVMFFIAny* e = &items[k];
    size_t len = 0;
    const char* key = rt_b_type_name(e, &len);
    if (e->type_index != kTVMFFIArray) {
      rt_raise("TypeError",
               "Mismatched type on argument #%d when calling: `%s`. Expected `%s` but got "
               "`Array[index %lld: %.*s]`",
               (int)i, sig, expected, (long long)k, (int)len, key);
      return NULL;
    }
    int64_t m = 0;
    const TVMFFIAny* parts = rt_seq_items(e->v_obj, &m);
    if (m != width) {
      rt_raise("TypeError",
               "Mismatched type on argument #%d when calling: `%s`. Expected `%s` but got "
               "`Array[index %lld: Array[size=%lld]]`",
               (int)i, sig, expected, (long long)k, (long long)m);
      return NULL;
    }
    for (int p = 0; p < width; ++p) {
      if (sv_entry_item_ok(&parts[p], p)) continue;
      key = rt_b_type_name(&parts[p], &len);
      rt_raise("TypeError",
               "Mismatched type on argument #%d when calling: `%s`. Expected `%s` but got "
               "`Array[index %lld: Array[index %d: %.*s]]`",
               (int)i, sig, expected, (long long)k, p, (int)len, key);
      return NULL;
    }
  }
  return a->v_obj;
}

int64_t rt_sv_table_size(void* table) {
  int64_t n = 0;
  (void)rt_seq_items(table, &n);
  return n;
}

void rt_sv_table_entry(void* table, int64_t k, int32_t* type_index, void** fn, int* flag) {
  int64_t n = 0;
  const TVMFFIAny* items = rt_seq_items(table, &n);
  int64_t m = 0;
  const TVMFFIAny* parts = rt_seq_items(items[k].v_obj, &m);
  *type_index = (int32_t)parts[0].v_int64;
  *fn = parts[1].v_obj;
  if (flag) *flag = m > 2 ? parts[2].v_int64 != 0 : 0;
}

int rt_sv_with_region(rt_sv_head* head, int32_t kind, void* fn, TVMFFIAny* ret) {
  int32_t old = head->region;
  if (old != kTVMFFIDefRegionKindPattern) head->region = kind;
  int rc = TVMFFIFunctionCall(fn, NULL, 0, ret);
  head->region = old;
  return rc;
}

/* ------------------------------------------------------------------ */
/* the visitor                                                         */
/* ------------------------------------------------------------------ */
enum { SV_WALK_PRE, SV_WALK_POST, SV_VISIT };

typedef struct {
  rt_sv_head head;
  int32_t engine;
  int32_t depth;
  void* callbacks;      /* Array of (type index, Function[, ...]) */
  void* callbacks_kind; /* walk: callbacks also given the region kind */
} sv_visitor;

static TVMFFIAny sv_visit_child(void* visitor, TVMFFIAny value) {
  const rt_sv_visit_vtable* vt = (const rt_sv_visit_vtable*)((rt_sv_head*)visitor)->vtable;
  return vt->visit(visitor, value);
}

static int sv_stops(const TVMFFIAny* r) { return r->type_index != kTVMFFINone; }

/* A visit result: None, a VisitInterrupt, or an Error (a callback's value
 * that is none of these fails as the official CallExpected does). */
static TVMFFIAny sv_as_visit_result(TVMFFIAny r) {
  if (r.type_index == kTVMFFINone || r.type_index == kTVMFFIVisitInterrupt ||
      r.type_index == kTVMFFIError)
    return r;
  size_t len = 0;
  const char* key = rt_type_key(r.type_index, &len);
  TVMFFIAny err = rt_sv_error("TypeError",
                              "CallExpected: result type mismatch, expected "
                              "Optional<ffi.VisitInterrupt>, but got %.*s",
                              (int)len, key);
  rt_any_release(&r);
  return err;
}

static const TVMFFITypeAttrColumn* sv_column(const TVMFFITypeAttrColumn** cache, const char* name) {
  const TVMFFITypeAttrColumn* c = __atomic_load_n(cache, __ATOMIC_ACQUIRE);
  if (c) return c;
  TVMFFIByteArray b = rt_ba(name);
  c = TVMFFIGetTypeAttrColumn(&b);
  if (c) __atomic_store_n(cache, c, __ATOMIC_RELEASE);
  return c;
}

static const TVMFFIAny* sv_attr(const TVMFFITypeAttrColumn* col, int32_t type_index) {
  static const TVMFFIAny none = {kTVMFFINone, {0}, {0}};
  if (col == NULL || type_index < 0 || type_index >= col->size) return &none;
  return &col->data[type_index];
}

/* Reflected fields of an object, parents' first, each under its region. */
static TVMFFIAny sv_visit_fields(rt_sv_head* v, TVMFFIAny value) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(value.type_index);
  if (info == NULL) return rt_sv_none();
  int32_t saved = v->region;
  int clamp = saved == kTVMFFIDefRegionKindSimple && info->metadata != NULL &&
              info->metadata->structural_eq_hash_kind == kTVMFFISEqHashKindFreeVar;
  if (clamp) v->region = kTVMFFIDefRegionKindNone;
  TVMFFIAny result = rt_sv_none();
  for (int32_t level = 1; level <= info->type_depth && !sv_stops(&result); ++level) {
    const TVMFFITypeInfo* t = level < info->type_depth ? info->type_ancestors[level] : info;
    for (int32_t f = 0; f < t->num_fields && !sv_stops(&result); ++f) {
      const TVMFFIFieldInfo* fi = &t->fields[f];
      if (fi->flags & kTVMFFIFieldFlagBitMaskSEqHashIgnore) continue;
      TVMFFIAny fv;
      rt_any_set_none(&fv);
      if (fi->getter((char*)value.v_obj + fi->offset, &fv) != 0) {
        result = rt_sv_take_raised();
        break;
      }
      int32_t before = v->region;
      if (before != kTVMFFIDefRegionKindPattern) {
        if (fi->flags & kTVMFFIFieldFlagBitMaskSEqHashDefSimple)
          v->region = kTVMFFIDefRegionKindSimple;
        else if (fi->flags & kTVMFFIFieldFlagBitMaskSEqHashDefPattern)
          v->region = kTVMFFIDefRegionKindPattern;
      }
      result = sv_visit_child(v, fv);
      v->region = before;
      rt_any_release(&fv);
    }
  }
  if (clamp) v->region = saved;
  return result;
}

static const TVMFFITypeAttrColumn* sv_visit_col;

/* The official DefaultVisitExpected: the __s_visit__ hook of the value's
 * type, else (no hook) nothing for a plain value and the reflected fields
 * for an object. Works on any visitor (ours or one made by C++ code). */
static TVMFFIAny sv_default_visit(rt_sv_head* v, TVMFFIAny value) {
  const TVMFFIAny* attr = sv_attr(sv_column(&sv_visit_col, "__s_visit__"), value.type_index);
  if (attr->type_index == kTVMFFIOpaquePtr) {
    TVMFFIAny (*hook)(void*, TVMFFIAny) = (TVMFFIAny(*)(void*, TVMFFIAny))attr->v_ptr;
    return hook(v, value);
  }
  if (attr->type_index == kTVMFFIFunction) {
    TVMFFIAny args[2];
    rt_any_set_obj(&args[0], v);
    args[1] = value;
    return sv_as_visit_result(rt_sv_call(attr->v_obj, args, 2));
  }
  if (attr->type_index != kTVMFFINone)
    return rt_sv_error("TypeError", "__s_visit__ must be an opaque function pointer or ffi.Function");
  if (value.type_index < kTVMFFIStaticObjectBegin) return rt_sv_none();
  return sv_visit_fields(v, value);
}

/* ---- __s_visit__ of the built-in containers (opaque hooks) ---- */
static TVMFFIAny sv_hook_seq(void* visitor, TVMFFIAny value) {
  int64_t n = 0;
  const TVMFFIAny* items = rt_seq_items(value.v_obj, &n);
  for (int64_t i = 0; i < n; ++i) {
    TVMFFIAny r = sv_visit_child(visitor, items[i]);
    if (sv_stops(&r)) return r;
    items = rt_seq_items(value.v_obj, &n); /* a callback may have grown a List */
  }
  return rt_sv_none();
}

static TVMFFIAny sv_hook_map(void* visitor, TVMFFIAny value) {
  void* m = value.v_obj;
  for (uint64_t it = rt_map_iter_begin(m); it != rt_map_iter_end(m); it = rt_map_iter_next(m, it)) {
    const TVMFFIAny* k = NULL;
    const TVMFFIAny* v = NULL;
    rt_map_iter_kv(m, it, &k, &v);
    TVMFFIAny r = sv_visit_child(visitor, *v);
    if (sv_stops(&r)) return r;
  }
  return rt_sv_none();
}

/* ---- engines ---- */
/* The first callback for a value: in `callbacks`, then in `callbacks_kind`. */
static void* sv_find(sv_visitor* s, int32_t type_index, int* with_kind) {
  void* tables[2] = {s->callbacks, s->callbacks_kind};
  for (int t = 0; t < 2; ++t) {
    if (tables[t] == NULL) continue;
    int64_t n = rt_sv_table_size(tables[t]);
    for (int64_t k = 0; k < n; ++k) {
      int32_t ti = 0;
      void* fn = NULL;
      rt_sv_table_entry(tables[t], k, &ti, &fn, NULL);
      if (rt_sv_type_match(type_index, ti)) {
        *with_kind = t == 1;
        return fn;
      }
    }
  }
  return NULL;
}

/* A walk callback for `value`: None (go on), Skip as the int 1 (prune),
 * a VisitInterrupt or an Error (stop). */
static TVMFFIAny sv_walk_callback(sv_visitor* s, TVMFFIAny value) {
  int with_kind = 0;
  void* fn = sv_find(s, value.type_index, &with_kind);
  if (fn == NULL) return rt_sv_none();
  TVMFFIAny args[2];
  args[0] = value;
  rt_any_set_int(&args[1], s->head.region);
  TVMFFIAny r = rt_sv_call(fn, args, with_kind ? 2 : 1);
  switch (r.type_index) {
    case kTVMFFINone:
    case kTVMFFIVisitInterrupt:
    case kTVMFFIError:
      return r;
    case kTVMFFIInt:
    case kTVMFFIBool: {
      int skip = (int32_t)r.v_int64 == 1;
      rt_any_set_int(&r, skip);
      return skip ? r : rt_sv_none();
    }
    default: {
      size_t len = 0;
      const char* key = rt_type_key(r.type_index, &len);
      TVMFFIAny err = rt_sv_error(
          "TypeError", "CallExpected: result type mismatch, expected WalkResult, but got %.*s",
          (int)len, key);
      rt_any_release(&r);
      return err;
    }
  }
}

static TVMFFIAny sv_engine_visit(void* self, TVMFFIAny value) {
  sv_visitor* s = (sv_visitor*)self;
  if (value.type_index == kTVMFFINone) return rt_sv_none();
  if (s->depth >= RT_SV_MAX_DEPTH)
    return rt_sv_error("RecursionError",
                       "structural visit: nesting deeper than %d levels (a cycle?)",
                       RT_SV_MAX_DEPTH);
  ++s->depth;
  TVMFFIAny r = rt_sv_none();
  if (s->engine == SV_VISIT) {
    int with_kind = 0;
    void* fn = sv_find(s, value.type_index, &with_kind);
    if (fn != NULL) {
      TVMFFIAny args[2];
      args[0] = value;
      rt_any_set_obj(&args[1], s);
      r = sv_as_visit_result(rt_sv_call(fn, args, 2));
    } else {
      r = sv_default_visit(&s->head, value);
    }
  } else {
    int skip = 0;
    if (s->engine == SV_WALK_PRE) {
      r = sv_walk_callback(s, value);
      if (r.type_index == kTVMFFIInt) {
        skip = 1;
        r = rt_sv_none();
      }
    }
    if (!skip && !sv_stops(&r)) r = sv_default_visit(&s->head, value);
    if (!skip && !sv_stops(&r) && s->engine == SV_WALK_POST) {
      r = sv_walk_callback(s, value);
      if (r.type_index == kTVMFFIInt) r = rt_sv_none();
    }
  }
  --s->depth;
  if (r.type_index == kTVMFFIError) rt_sv_attach_context(&r, &value);
  return r;
}

static const rt_sv_visit_vtable sv_vtable = {sv_engine_visit};

static void sv_visitor_deleter(void* self, int flags) {
  sv_visitor* s = (sv_visitor*)self;
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    rt_decref(s->callbacks);
    rt_decref(s->callbacks_kind);
    s->callbacks = s->callbacks_kind = NULL;
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

static sv_visitor* sv_visitor_new(int engine, void* callbacks, void* callbacks_kind) {
  int32_t ti = rt_sv_visitor_type();
  if (ti < 0) {
    rt_raise("RuntimeError", "ffi.StructuralVisitor is not registered");
    return NULL;
  }
  sv_visitor* s = (sv_visitor*)rt_object_alloc(sizeof(sv_visitor), ti, sv_visitor_deleter);
  if (s == NULL) return NULL;
  s->head.vtable = &sv_vtable;
  s->head.region = kTVMFFIDefRegionKindNone;
  s->engine = engine;
  if (callbacks) rt_incref(callbacks);
  if (callbacks_kind) rt_incref(callbacks_kind);
  s->callbacks = callbacks;
  s->callbacks_kind = callbacks_kind;
  return s;
}

/* __ffi_shallow_copy__ of our visitor: same engine, tables and region. */
static int sv_visitor_copy(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (n != 1 || args[0].type_index != rt_sv_visitor_type() ||
      ((rt_sv_head*)args[0].v_obj)->vtable != &sv_vtable)
    return rt_raise("TypeError", "ffi.StructuralVisitor.__ffi_shallow_copy__ expects a visitor");
  const sv_visitor* src = (const sv_visitor*)args[0].v_obj;
  sv_visitor* s = sv_visitor_new(src->engine, src->callbacks, src->callbacks_kind);
  if (s == NULL) return -1;
  s->head.region = src->head.region;
  rt_any_set_obj(ret, s);
  return 0;
}

/* Runs a visit from the root and turns its result into the global's. */
static int sv_run(sv_visitor* s, const TVMFFIAny* root, TVMFFIAny* ret) {
  TVMFFIAny r = sv_engine_visit(s, *root);
  rt_decref(s);
  if (r.type_index == kTVMFFIError) return rt_sv_raise(&r);
  *ret = r;
  return 0;
}

/* ------------------------------------------------------------------ */
/* globals                                                             */
/* ------------------------------------------------------------------ */
#define SV_TABLE "Array<Tuple<int, ffi.Function>>"
#define SV_WALK_SIG                                                                      \
  "ffi.StructuralWalk(0: AnyView, 1: " SV_TABLE ", 2: " SV_TABLE ", 3: int) -> "         \
  "Optional<ffi.VisitInterrupt>"
#define SV_VISIT_SIG \
  "ffi.StructuralVisit(0: AnyView, 1: " SV_TABLE ") -> Optional<ffi.VisitInterrupt>"

static int sv_g_walk(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs(SV_WALK_SIG, n, 4) != 0) return -1;
  void* cbs = rt_sv_check_table(args, 1, SV_WALK_SIG, SV_TABLE, 2);
  if (cbs == NULL) return -1;
  void* cbs_kind = rt_sv_check_table(args, 2, SV_WALK_SIG, SV_TABLE, 2);
  if (cbs_kind == NULL) return -1;
  int64_t order = 0;
  if (rt_b_arg_int(args, 3, SV_WALK_SIG, &order) != 0) return -1;
  sv_visitor* s =
      sv_visitor_new((int32_t)order == 0 ? SV_WALK_PRE : SV_WALK_POST, cbs, cbs_kind);
  return s ? sv_run(s, &args[0], ret) : -1;
}

static int sv_g_visit(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  if (rt_b_check_nargs(SV_VISIT_SIG, n, 2) != 0) return -1;
  void* cbs = rt_sv_check_table(args, 1, SV_VISIT_SIG, SV_TABLE, 2);
  if (cbs == NULL) return -1;
  sv_visitor* s = sv_visitor_new(SV_VISIT, cbs, NULL);
  return s ? sv_run(s, &args[0], ret) : -1;
}

#define SV_SELF "ffi.StructuralVisitor"
#define SV_M_VISIT "ffi.StructuralVisitorVisit(0: " SV_SELF ", 1: AnyView) -> Optional<ffi.VisitInterrupt>"
#define SV_M_DEFAULT \
  "ffi.StructuralVisitorDefaultVisit(0: " SV_SELF ", 1: AnyView) -> Optional<ffi.VisitInterrupt>"
#define SV_M_KIND "ffi.StructuralVisitorDefRegionKind(0: " SV_SELF ") -> int"
#define SV_M_WITH \
  "ffi.StructuralVisitorWithDefRegionKind(0: " SV_SELF ", 1: int, 2: ffi.Function) -> Any"

static int sv_self(const TVMFFIAny* args, const char* sig, rt_sv_head** out) {
  return rt_b_arg_obj(args, 0, sig, rt_sv_visitor_type(), SV_SELF, (void**)out);
}

static int sv_finish(TVMFFIAny r, TVMFFIAny* ret) {
  if (r.type_index == kTVMFFIError) return rt_sv_raise(&r);
  *ret = r;
  return 0;
}

static int sv_m_visit(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  rt_sv_head* v = NULL;
  if (rt_b_check_nargs(SV_M_VISIT, n, 2) != 0 || sv_self(args, SV_M_VISIT, &v) != 0) return -1;
  return sv_finish(sv_visit_child(v, args[1]), ret);
}

static int sv_m_default(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  rt_sv_head* v = NULL;
  if (rt_b_check_nargs(SV_M_DEFAULT, n, 2) != 0 || sv_self(args, SV_M_DEFAULT, &v) != 0)
    return -1;
  return sv_finish(sv_default_visit(v, args[1]), ret);
}

static int sv_m_kind(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  rt_sv_head* v = NULL;
  if (rt_b_check_nargs(SV_M_KIND, n, 1) != 0 || sv_self(args, SV_M_KIND, &v) != 0) return -1;
  rt_any_set_int(ret, v->region);
  return 0;
}

static int sv_m_with(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  rt_sv_head* v = NULL;
  int64_t kind = 0;
  void* fn = NULL;
  if (rt_b_check_nargs(SV_M_WITH, n, 3) != 0 || sv_self(args, SV_M_WITH, &v) != 0 ||
      rt_b_arg_int(args, 1, SV_M_WITH, &kind) != 0 ||
      rt_b_arg_obj(args, 2, SV_M_WITH, kTVMFFIFunction, "ffi.Function", &fn) != 0)
    return -1;
  return rt_sv_with_region(v, (int32_t)kind, fn, ret);
}

static void sv_set_hook(int32_t type_index, const char* column, TVMFFIAny (*hook)(void*, TVMFFIAny)) {
  (void)rt_type_set_native_attr(type_index, column, (void*)hook);
}

RT_INIT(rt_structural_visit_init) {
  rt_register_global("ffi.StructuralWalk", sv_g_walk);
  rt_register_global("ffi.StructuralVisit", sv_g_visit);
  rt_register_global("ffi.StructuralVisitorVisit", sv_m_visit);
  rt_register_global("ffi.StructuralVisitorDefaultVisit", sv_m_default);
  rt_register_global("ffi.StructuralVisitorDefRegionKind", sv_m_kind);
  rt_register_global("ffi.StructuralVisitorWithDefRegionKind", sv_m_with);
  sv_set_hook(kTVMFFIArray, "__s_visit__", sv_hook_seq);
  sv_set_hook(kTVMFFIList, "__s_visit__", sv_hook_seq);
  sv_set_hook(kTVMFFIMap, "__s_visit__", sv_hook_map);
  sv_set_hook(kTVMFFIDict, "__s_visit__", sv_hook_map);
  TVMFFIErrorMoveFromRaised(NULL);
}

/* The visitor type is registered by 9_registry/builtin_types.c at start-up;
 * its __ffi_shallow_copy__ is set once that ran (constructor order between
 * files is not fixed), from the first lookup. */
__attribute__((constructor(201))) static void rt_structural_visit_copy_init(void) {
  int32_t ti = rt_sv_visitor_type();
  if (ti < 0) return;
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionCreate(NULL, sv_visitor_copy, NULL, &f) != 0) {
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
