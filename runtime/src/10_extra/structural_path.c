/* Access paths for the first structural mismatch: ffi.reflection.AccessStep
 * and ffi.reflection.AccessPath objects laid out as the official classes
 * (so C++ code built against the official headers reads them):
 *   AccessStep: header, int32 kind (AccessKind), Any key        (48 bytes)
 *   AccessPath: header, parent path or NULL, step or NULL, int32 depth (48)
 * The root path has no parent and no step, depth 0; each step extends the
 * path before it. */
#include <string.h>

#include "structural_internal.h"

typedef struct {
  TVMFFIObject header;
  int32_t kind;
  TVMFFIAny key;
} st_step_obj;

typedef struct {
  TVMFFIObject header;
  TVMFFIObject* parent;
  TVMFFIObject* step;
  int32_t depth;
} st_path_obj;

_Static_assert(sizeof(st_step_obj) == 48, "AccessStep layout");
_Static_assert(sizeof(st_path_obj) == 48, "AccessPath layout");

void rt_st_steps_push(rt_st_steps* s, int32_t kind, const TVMFFIAny* key) {
  if (s->failed) return;
  if (s->size == s->cap) {
    size_t cap = s->cap ? s->cap * 2 : 8;
    rt_st_step* items = (rt_st_step*)realloc(s->items, cap * sizeof(rt_st_step));
    if (items == NULL) {
      s->failed = 1;
      return;
    }
    s->items = items;
    s->cap = cap;
  }
  rt_st_step* st = &s->items[s->size++];
  st->kind = kind;
  st->key = *key;
  rt_any_retain(&st->key);
}

void rt_st_steps_push_int(rt_st_steps* s, int32_t kind, int64_t index) {
  TVMFFIAny k;
  rt_any_set_int(&k, index);
  rt_st_steps_push(s, kind, &k);
}

void rt_st_steps_free(rt_st_steps* s) {
  for (size_t i = 0; i < s->size; ++i) rt_any_release(&s->items[i].key);
  free(s->items);
  s->items = NULL;
  s->size = s->cap = 0;
  s->failed = 0;
}

static void st_step_deleter(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) rt_any_release(&((st_step_obj*)self)->key);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

static void st_path_deleter(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    /* a long path releases its parents one by one, not recursively */
    st_path_obj* p = (st_path_obj*)self;
    TVMFFIObject* parent = p->parent;
    p->parent = NULL;
    rt_decref(p->step);
    p->step = NULL;
    while (parent != NULL) {
      st_path_obj* q = (st_path_obj*)parent;
      if (q->header.deleter != st_path_deleter ||
          __atomic_load_n(&q->header.combined_ref_count, __ATOMIC_ACQUIRE) != RT_BOTH_ONE) {
        rt_decref(parent);
        break;
      }
      /* the last reference: take its parent before it goes */
      TVMFFIObject* next = q->parent;
      q->parent = NULL;
      rt_decref(parent);
      parent = next;
    }
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

static int32_t st_type_index(const char* key, int32_t* cache) {
  int32_t ti = __atomic_load_n(cache, __ATOMIC_RELAXED);
  if (ti > 0) return ti;
  TVMFFIByteArray k = {key, strlen(key)};
  if (TVMFFITypeKeyToIndex(&k, &ti) != 0) return -1;
  __atomic_store_n(cache, ti, __ATOMIC_RELAXED);
  return ti;
}

static st_path_obj* st_path_new(TVMFFIObject* parent, TVMFFIObject* step, int32_t depth) {
  static int32_t cache = -1;
  int32_t ti = st_type_index("ffi.reflection.AccessPath", &cache);
  if (ti < 0) return NULL;
  st_path_obj* p = (st_path_obj*)rt_object_alloc(sizeof(st_path_obj), ti, st_path_deleter);
  if (p == NULL) return NULL;
  p->parent = parent; /* references move in */
  p->step = step;
  p->depth = depth;
  return p;
}

static st_step_obj* st_step_new(const rt_st_step* s) {
  static int32_t cache = -1;
  int32_t ti = st_type_index("ffi.reflection.AccessStep", &cache);
  if (ti < 0) return NULL;
  st_step_obj* o = (st_step_obj*)rt_object_alloc(sizeof(st_step_obj), ti, st_step_deleter);
  if (o == NULL) return NULL;
  o->kind = s->kind;
  o->key = s->key;
  rt_any_retain(&o->key);
  return o;
}

int rt_st_path_from_reversed(const rt_st_steps* s, TVMFFIAny* out) {
  rt_any_set_none(out);
  if (s->failed) return rt_raise("MemoryError", "out of memory recording an access path");
  st_path_obj* path = st_path_new(NULL, NULL, 0);
  if (path == NULL) return -1;
  for (size_t i = s->size; i > 0; --i) {
    st_step_obj* step = st_step_new(&s->items[i - 1]);
    if (step == NULL) {
      rt_decref(path);
      return -1;
    }
    st_path_obj* next = st_path_new(&path->header, &step->header, path->depth + 1);
    if (next == NULL) {
      rt_decref(step);
      rt_decref(path);
      return -1;
    }
    path = next;
  }
  rt_any_set_obj(out, path);
  return 0;
}
