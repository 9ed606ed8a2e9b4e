/* ffi.VisitErrorContext.FindAccessPaths(root, context, allow_prefix_match):
 * where, below `root`, the objects a failed structural visit recorded sit.
 *
 * The context's reverse_visit_pattern lists the objects the visit was in
 * when it failed, innermost first (None entries and consecutive repeats are
 * ignored). The search walks root's reflected fields, Array/List items
 * (None skipped) and Map/Dict entries (None key or value skipped) in order;
 * an object that is the next expected entry of the pattern advances the
 * match, and a complete match records the access path that led there (the
 * walk does not go below it). With allow_prefix_match, an object that
 * advanced the match but has no complete match below it records its own
 * path. Objects of types without reflection metadata are not entered.
 * Paths that share a prefix share its AccessPath objects, as in the
 * official runtime. */
#include <string.h>

#include "10_extra/access_path.h"

typedef struct {
  int32_t kind;
  TVMFFIAny key; /* owned; for K_ATTR a view of the field name is made at materialization */
  const TVMFFIFieldInfo* field;
} pstep;

typedef struct {
  void** records; /* the pattern, outermost last (borrowed from the context's List) */
  size_t n_records, matched;
  int allow_prefix;
  pstep* steps;
  size_t n_steps, cap_steps;
  TVMFFIAny* paths; /* materialized paths for steps[0..n_paths) */
  size_t n_paths;
  TVMFFIAny* results;
  size_t n_results, cap_results;
} finder;

static int visit_object(finder* f, void* obj);

static int grow(void** items, size_t* cap, size_t need, size_t elem) {
  if (need <= *cap) return 0;
  size_t nc = *cap ? *cap * 2 : 16;
  while (nc < need) nc *= 2;
  void* n = realloc(*items, nc * elem);
  if (n == NULL) return rt_raise("MemoryError", "out of memory finding access paths");
  *items = n;
  *cap = nc;
  return 0;
}

static int push_step(finder* f, int32_t kind, const TVMFFIAny* key, const TVMFFIFieldInfo* field) {
  size_t cap_paths = f->cap_steps;
  if (grow((void**)&f->steps, &f->cap_steps, f->n_steps + 1, sizeof(pstep)) != 0) return -1;
  if (f->cap_steps != cap_paths) {
    TVMFFIAny* np = (TVMFFIAny*)realloc(f->paths, f->cap_steps * sizeof(TVMFFIAny));
    if (np == NULL) return rt_raise("MemoryError", "out of memory finding access paths");
    f->paths = np;
  }
  pstep* s = &f->steps[f->n_steps++];
  s->kind = kind;
  s->field = field;
  rt_any_set_none(&s->key);
  if (key != NULL) {
    s->key = *key;
    rt_any_retain(&s->key);
  }
  return 0;
}

static void pop_step(finder* f) {
  rt_any_release(&f->steps[--f->n_steps].key);
  while (f->n_paths > f->n_steps) rt_any_release(&f->paths[--f->n_paths]);
}

/* The path of the current steps, appended to the results. */
static int record_path(finder* f) {
  TVMFFIAny path;
  if (f->n_steps == 0) {
    if (rt_access_path_root(&path) != 0) return -1;
  } else {
    while (f->n_paths < f->n_steps) {
      size_t i = f->n_paths;
      TVMFFIAny parent;
      if (i == 0) {
        if (rt_access_path_root(&parent) != 0) return -1;
      } else {
        parent = f->paths[i - 1];
        rt_any_retain(&parent);
      }
      const pstep* s = &f->steps[i];
      TVMFFIAny key = s->key;
      int rc;
      if (s->kind == K_ATTR) {
        rc = rt_string_to_any(s->field->name.data, s->field->name.size, &key);
        if (rc == 0) rc = rt_access_path_extend(parent.v_obj, K_ATTR, &key, &f->paths[i]);
        if (rc == 0) rt_any_release(&key);
      } else {
        rc = rt_access_path_extend(parent.v_obj, s->kind, &key, &f->paths[i]);
      }
      rt_any_release(&parent);
      if (rc != 0) return -1;
      ++f->n_paths;
    }
    path = f->paths[f->n_steps - 1];
    rt_any_retain(&path);
  }
  if (grow((void**)&f->results, &f->cap_results, f->n_results + 1, sizeof(TVMFFIAny)) != 0) {
    rt_any_release(&path);
    return -1;
  }
  f->results[f->n_results++] = path;
  return 0;
}

static int visit_any(finder* f, const TVMFFIAny* v) {
  if (v->type_index < kTVMFFIStaticObjectBegin || v->v_obj == NULL) return 0;
  if (rt_xb_stack_low())
    return rt_raise("ValueError", "FindAccessPaths: the value nests too deeply (or forms a cycle)");
  void* obj = v->v_obj;
  int rc = 0;
  switch (v->type_index) {
    case kTVMFFIArray:
    case kTVMFFIList: {
      int64_t n;
      rt_seq_items(obj, &n);
      for (int64_t i = 0; rc == 0 && i < n; ++i) {
        int64_t now;
        const TVMFFIAny* items = rt_seq_items(obj, &now);
        if (i >= now) break;
        TVMFFIAny item = items[i];
        if (item.type_index == kTVMFFINone) continue;
        rt_any_retain(&item);
        TVMFFIAny key;
        rt_any_set_int(&key, i);
        rc = push_step(f, K_ARRAY_ITEM, &key, NULL);
        if (rc == 0) {
          rc = visit_any(f, &item);
          pop_step(f);
        }
        rt_any_release(&item);
      }
      return rc;
    }
    case kTVMFFIMap:
    case kTVMFFIDict: {
      for (uint64_t it = rt_map_iter_begin(obj); rc == 0 && it != rt_map_iter_end(obj);
           it = rt_map_iter_next(obj, it)) {
        const TVMFFIAny *k, *val;
        rt_map_iter_kv(obj, it, &k, &val);
        if (k->type_index == kTVMFFINone || val->type_index == kTVMFFINone) continue;
        TVMFFIAny value = *val;
        rt_any_retain(&value);
        rc = push_step(f, K_MAP_ITEM, k, NULL);
        if (rc == 0) {
          rc = visit_any(f, &value);
          pop_step(f);
        }
        rt_any_release(&value);
      }
      return rc;
    }
    default:
      return visit_object(f, obj);
  }
}

typedef struct {
  finder* f;
  void* obj;
} field_walk;

static int visit_field(const TVMFFIFieldInfo* field, void* ctx) {
  field_walk* w = (field_walk*)ctx;
  TVMFFIAny v;
  rt_any_set_none(&v);
  if (field->getter == NULL) return 0;
  if (field->getter((char*)w->obj + field->offset, &v) != 0) return -1;
  int rc = push_step(w->f, K_ATTR, NULL, field);
  if (rc == 0) {
    rc = visit_any(w->f, &v);
    pop_step(w->f);
  }
  rt_any_release(&v);
  return rc;
}

static int visit_object(finder* f, void* obj) {
  if (obj == NULL) return 0;
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(((TVMFFIObject*)obj)->type_index);
  if (info == NULL || info->metadata == NULL) return 0;
  int step = f->matched < f->n_records && obj == f->records[f->n_records - 1 - f->matched];
  if (step) {
    if (++f->matched == f->n_records) {
      --f->matched;
      return record_path(f);
    }
  }
  size_t before = f->n_results;
  field_walk w = {f, obj};
  int rc = rt_xb_each_field(info, visit_field, &w);
  if (rc == 0 && f->allow_prefix && f->matched > 0 && f->matched < f->n_records &&
      f->n_steps > 0 && f->n_results == before)
    rc = record_path(f);
  if (step) --f->matched;
  return rc;
}

/* context: VisitErrorContextObj (reverse_visit_pattern: a List of objects). */
static int find_paths(void* root, void* context, int allow_prefix, TVMFFIAny* out) {
  finder f;
  memset(&f, 0, sizeof(f));
  f.allow_prefix = allow_prefix;
  void* pattern = *(void**)rt_cell(context);
  int64_t n = 0;
  const TVMFFIAny* items = pattern ? rt_seq_items(pattern, &n) : NULL;
  int rc = 0;
  if (pattern) rt_incref(pattern); /* the records are borrowed from it */
  if (n > 0) {
    f.records = (void**)malloc((size_t)n * sizeof(void*));
    if (f.records == NULL) rc = rt_raise("MemoryError", "out of memory finding access paths");
  }
  for (int64_t i = 0; rc == 0 && i < n; ++i) {
    if (items[i].type_index < kTVMFFIStaticObjectBegin || items[i].v_obj == NULL) continue;
    if (f.n_records > 0 && f.records[f.n_records - 1] == items[i].v_obj) continue;
    f.records[f.n_records++] = items[i].v_obj;
  }
  if (rc == 0) rc = visit_object(&f, root);
  while (f.n_steps > 0) pop_step(&f);
  if (rc == 0) rc = rt_array_from_anys(f.results, (int64_t)f.n_results, out);
  for (size_t i = 0; i < f.n_results; ++i) rt_any_release(&f.results[i]);
  free(f.results);
  free(f.steps);
  free(f.paths);
  free(f.records);
  rt_decref(pattern);
  return rc;
}

static int g_find_access_paths(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] =
      "ffi.VisitErrorContext.FindAccessPaths(0: ffi.Object, 1: ffi.VisitErrorContext, 2: bool) -> "
      "Array<ffi.reflection.AccessPath>";
  int allow = 0;
  void* ctx = NULL;
  TVMFFIByteArray key = {"ffi.VisitErrorContext", 21};
  int32_t ctx_type = -1;
  if (rt_b_check_nargs(sig, nargs, 3) != 0) return -1;
  if (args[0].type_index != kTVMFFINone && args[0].type_index < kTVMFFIStaticObjectBegin)
    return rt_b_type_error(sig, 0, "ffi.Object", &args[0]);
  if (TVMFFITypeKeyToIndex(&key, &ctx_type) != 0) return -1;
  if (rt_b_arg_obj(args, 1, sig, ctx_type, "ffi.VisitErrorContext", &ctx) != 0 ||
      rt_b_arg_bool(args, 2, sig, &allow) != 0)
    return -1;
  return find_paths(args[0].type_index == kTVMFFINone ? NULL : args[0].v_obj, ctx, allow, ret);
}

RT_INIT(rt_visit_error_paths_init) {
  (void)rt_register_global("ffi.VisitErrorContext.FindAccessPaths", g_find_access_paths);
}
