/* Function objects, calls, and the global function registry.
 *
 * The registry is read far more often than written, so lookups take no
 * lock: an open-addressing table published through an atomic pointer.
 * Writers serialize on a mutex. Nothing a reader may still be looking at is
 * freed: replaced tables and replaced/removed functions are retired to a
 * list that keeps them alive (overrides are rare, so this stays small). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- function objects ---- */
typedef struct {
  TVMFFIObject header;
  TVMFFIFunctionCell cell;
  void* self;
  TVMFFISafeCallType fn;
  void (*self_deleter)(void* self);
} rt_func_obj;

/* safe_call receives the Function object; forward to the C callback with
 * its own handle (compiles to a tail jump). */
/* Both hops of a call are 64-byte aligned so timing does not depend on
 * where the linker happens to place them. */
__attribute__((aligned(64))) static int rt_func_trampoline(void* handle, const TVMFFIAny* args,
                                                          int32_t n, TVMFFIAny* ret) {
  rt_func_obj* f = (rt_func_obj*)handle;
  return f->fn(f->self, args, n, ret);
}

static void rt_func_deleter(void* obj, int flags) {
  rt_func_obj* f = (rt_func_obj*)obj;
  if ((flags & kTVMFFIObjectDeleterFlagBitMaskStrong) && f->self_deleter) f->self_deleter(f->self);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(obj);
}

TVM_FFI_DLL int TVMFFIFunctionCreate(void* self, TVMFFISafeCallType safe_call,
                                     void (*deleter)(void* self), TVMFFIObjectHandle* out) {
  if (!safe_call || !out) return rt_raise("ValueError", "TVMFFIFunctionCreate: NULL argument");
  /* one cache line for everything a call reads */
  rt_func_obj* f = (rt_func_obj*)rt_object_alloc_aligned(sizeof(rt_func_obj), 64, kTVMFFIFunction,
                                                         rt_func_deleter);
  if (!f) return -1;
  f->cell.safe_call = rt_func_trampoline;
  f->cell.cpp_call = NULL;
  f->self = self;
  f->fn = safe_call;
  f->self_deleter = deleter;
  *out = f;
  return 0;
}

TVM_FFI_DLL __attribute__((aligned(64))) int TVMFFIFunctionCall(TVMFFIObjectHandle func,
                                                                TVMFFIAny* args, int32_t num_args,
                                                                TVMFFIAny* result) {
  rt_func_obj* f = (rt_func_obj*)func;
  /* Our own C functions skip the trampoline hop (one indirect jump less). */
  if (RT_LIKELY(f->cell.safe_call == rt_func_trampoline))
    return f->fn(f->self, args, num_args, result);
  return f->cell.safe_call(func, args, num_args, result);
}

/* ---- registry ---- */
typedef struct {
  uint64_t hash; /* 0: empty slot. Published last (release). */
  const char* name;
  size_t len;
  TVMFFIObject* func; /* NULL: removed */
  char* doc;          /* from method info, may be NULL */
  char* metadata;
} rt_gentry;

typedef struct {
  size_t cap; /* power of two */
  rt_gentry e[];
} rt_gtable;

static pthread_mutex_t rt_glock = PTHREAD_MUTEX_INITIALIZER;
static rt_gtable* rt_gtab;
static size_t rt_gused; /* occupied slots (live or removed) */

typedef struct rt_retired {
  void* ptr;
  int is_obj;
  struct rt_retired* next;
} rt_retired;
static rt_retired* rt_retired_list;

static void rt_retire(void* ptr, int is_obj) {
  rt_retired* r = (rt_retired*)malloc(sizeof(rt_retired));
  if (!r) return; /* leaking the reference keeps it alive just the same */
  r->ptr = ptr;
  r->is_obj = is_obj;
  r->next = rt_retired_list;
  rt_retired_list = r;
}

static uint64_t rt_hash_name(const char* s, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t)n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  uint64_t w = 0;
  if (i < n) memcpy(&w, s + i, n - i);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 29;
  return h ? h : 1;
}

static rt_gentry* rt_gfind(rt_gtable* t, uint64_t h, const char* name, size_t len) {
  size_t mask = t->cap - 1;
  for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
    rt_gentry* e = &t->e[i];
    uint64_t eh = __atomic_load_n(&e->hash, __ATOMIC_ACQUIRE);
    if (eh == 0) return NULL;
    if (eh == h && e->len == len && memcmp(e->name, name, len) == 0) return e;
  }
}

TVM_FFI_DLL int TVMFFIFunctionGetGlobal(const TVMFFIByteArray* name, TVMFFIObjectHandle* out) {
  if (RT_UNLIKELY(!name || !out)) return rt_raise("ValueError", "TVMFFIFunctionGetGlobal: NULL argument");
  *out = NULL;
  rt_gtable* t = __atomic_load_n(&rt_gtab, __ATOMIC_ACQUIRE);
  if (!t) return 0;
  rt_gentry* e = rt_gfind(t, rt_hash_name(name->data, name->size), name->data, name->size);
  if (!e) return 0;
  TVMFFIObject* f = __atomic_load_n(&e->func, __ATOMIC_ACQUIRE);
  if (f) {
    TVMFFIObjectIncRef(f);
    *out = f;
  }
  return 0;
}

/* Inserts without checks; table has room. Caller holds rt_glock. */
static rt_gentry* rt_gput(rt_gtable* t, uint64_t h, const char* name, size_t len) {
  size_t mask = t->cap - 1;
  size_t i = (size_t)h & mask;
  while (t->e[i].hash != 0) i = (i + 1) & mask;
  rt_gentry* e = &t->e[i];
  e->name = name;
  e->len = len;
  return e;
}

static int rt_ggrow(void) {
  size_t cap = rt_gtab ? rt_gtab->cap * 2 : 256;
  rt_gtable* t = (rt_gtable*)calloc(1, sizeof(rt_gtable) + cap * sizeof(rt_gentry));
  if (!t) return rt_raise("MemoryError", "out of memory growing the global function table");
  t->cap = cap;
  if (rt_gtab) {
    for (size_t i = 0; i < rt_gtab->cap; ++i) {
      rt_gentry* o = &rt_gtab->e[i];
      if (!o->hash) continue;
      rt_gentry* e = rt_gput(t, o->hash, o->name, o->len);
      e->func = o->func;
      e->doc = o->doc;
      e->metadata = o->metadata;
      e->hash = o->hash;
    }
    rt_retire(rt_gtab, 0);
  }
  __atomic_store_n(&rt_gtab, t, __ATOMIC_RELEASE);
  return 0;
}

static char* rt_dup_ba(const TVMFFIByteArray* b) {
  if (!b || !b->size) return NULL;
  char* p = (char*)malloc(b->size + 1);
  if (p) {
    memcpy(p, b->data, b->size);
    p[b->size] = '\0';
  }
  return p;
}

static int rt_set_global(const char* name, size_t len, TVMFFIObject* f, int allow_override,
                         const TVMFFIByteArray* doc, const TVMFFIByteArray* metadata) {
  if (!f || f->type_index != kTVMFFIFunction)
    return rt_raise("TypeError", "global `%.*s` must be a Function object", (int)len, name);
  uint64_t h = rt_hash_name(name, len);
  pthread_mutex_lock(&rt_glock);
  rt_gentry* e = rt_gtab ? rt_gfind(rt_gtab, h, name, len) : NULL;
  if (e && e->func && !allow_override) {
    pthread_mutex_unlock(&rt_glock);
    return rt_raise("RuntimeError", "Global Function `%.*s` is already registered", (int)len,
                    name);
  }
  if (!e) {
    if ((!rt_gtab || (rt_gused + 1) * 2 > rt_gtab->cap) && rt_ggrow() != 0) {
      pthread_mutex_unlock(&rt_glock);
      return -1;
    }
    char* copy = (char*)malloc(len + 1);
    if (!copy) {
      pthread_mutex_unlock(&rt_glock);
      return rt_raise("MemoryError", "out of memory registering a global");
    }
    memcpy(copy, name, len);
    copy[len] = '\0';
    e = rt_gput(rt_gtab, h, copy, len);
    rt_gused++;
    TVMFFIObjectIncRef(f);
    e->func = f;
    e->doc = rt_dup_ba(doc);
    e->metadata = rt_dup_ba(metadata);
    __atomic_store_n(&e->hash, h, __ATOMIC_RELEASE);
  } else {
    TVMFFIObject* old = e->func;
    TVMFFIObjectIncRef(f);
    __atomic_store_n(&e->func, f, __ATOMIC_RELEASE);
    if (old) rt_retire(old, 1);
    /* doc/metadata strings: readers only use them under the lock */
    free(e->doc);
    free(e->metadata);
    e->doc = rt_dup_ba(doc);
    e->metadata = rt_dup_ba(metadata);
  }
  pthread_mutex_unlock(&rt_glock);
  return 0;
}

TVM_FFI_DLL int TVMFFIFunctionSetGlobal(const TVMFFIByteArray* name, TVMFFIObjectHandle f,
                                        int allow_override) {
  if (!name || (name->size && !name->data))
    return rt_raise("ValueError", "TVMFFIFunctionSetGlobal: NULL name");
  return rt_set_global(name->data, name->size, (TVMFFIObject*)f, allow_override, NULL, NULL);
}

TVM_FFI_DLL int TVMFFIFunctionSetGlobalFromMethodInfo(const TVMFFIMethodInfo* info,
                                                      int allow_override) {
  if (!info) return rt_raise("ValueError", "TVMFFIFunctionSetGlobalFromMethodInfo: NULL info");
  if (info->method.type_index != kTVMFFIFunction)
    return rt_raise("TypeError", "method info of `%.*s` does not hold a Function",
                    (int)info->name.size, info->name.data);
  return rt_set_global(info->name.data, info->name.size, info->method.v_obj, allow_override,
                       &info->doc, &info->metadata);
}

int rt_register_global_with_handle(const char* name, TVMFFISafeCallType f, void* handle) {
  TVMFFIObjectHandle fn;
  if (TVMFFIFunctionCreate(handle, f, NULL, &fn) != 0) return -1;
  int rc = rt_set_global(name, strlen(name), (TVMFFIObject*)fn, 1, NULL, NULL);
  TVMFFIObjectDecRef(fn);
  return rc;
}

int rt_register_global(const char* name, TVMFFISafeCallType f) {
  return rt_register_global_with_handle(name, f, NULL);
}

void* rt_get_global(const char* name) {
  TVMFFIByteArray b = {name, strlen(name)};
  TVMFFIObjectHandle out = NULL;
  if (TVMFFIFunctionGetGlobal(&b, &out) != 0) return NULL;
  return out;
}

int rt_remove_global(const char* name, size_t len) {
  int found = 0;
  pthread_mutex_lock(&rt_glock);
  rt_gentry* e = rt_gtab ? rt_gfind(rt_gtab, rt_hash_name(name, len), name, len) : NULL;
  if (e && e->func) {
    rt_retire(e->func, 1);
    __atomic_store_n(&e->func, NULL, __ATOMIC_RELEASE);
    found = 1;
  }
  pthread_mutex_unlock(&rt_glock);
  return found;
}

int rt_global_metadata(const char* name, size_t len, char** out) {
  *out = NULL;
  int found = 0;
  pthread_mutex_lock(&rt_glock);
  rt_gentry* e = rt_gtab ? rt_gfind(rt_gtab, rt_hash_name(name, len), name, len) : NULL;
  if (e && e->func) {
    found = 1;
    const char* m = e->metadata ? e->metadata : "";
    *out = strdup(m);
    if (!*out) found = -1;
  }
  pthread_mutex_unlock(&rt_glock);
  if (found < 0) return rt_raise("MemoryError", "out of memory");
  return found;
}

static int rt_cmp_str(const void* a, const void* b) {
  return strcmp(*(char* const*)a, *(char* const*)b);
}

int rt_global_names(char*** out_names, size_t* out_count) {
  pthread_mutex_lock(&rt_glock);
  size_t n = 0, cap = rt_gtab ? rt_gtab->cap : 0;
  char** names = (char**)malloc(sizeof(char*) * (rt_gused ? rt_gused : 1));
  int ok = names != NULL;
  for (size_t i = 0; ok && i < cap; ++i) {
    rt_gentry* e = &rt_gtab->e[i];
    if (!e->hash || !e->func) continue;
    names[n] = (char*)malloc(e->len + 1);
    if (!names[n]) {
      ok = 0;
      break;
    }
    memcpy(names[n], e->name, e->len + 1);
    n++;
  }
  pthread_mutex_unlock(&rt_glock);
  if (!ok) {
    for (size_t i = 0; i < n; ++i) free(names[i]);
    free(names);
    return rt_raise("MemoryError", "out of memory listing globals");
  }
  qsort(names, n, sizeof(char*), rt_cmp_str);
  *out_names = names;
  *out_count = n;
  return 0;
}

/* ---- ffi.* globals of the registry ---- */
typedef struct {
  char** names;
  size_t n;
} rt_name_list;

static void rt_name_list_free(void* p) {
  rt_name_list* l = (rt_name_list*)p;
  for (size_t i = 0; i < l->n; ++i) free(l->names[i]);
  free(l->names);
  free(l);
}

/* The functor: f(-1) -> number of names; f(i) -> name i. */
static int rt_name_list_call(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  rt_name_list* l = (rt_name_list*)self;
  if (n != 1 || args[0].type_index != kTVMFFIInt)
    return rt_raise("TypeError", "name list functor expects one int argument");
  int64_t i = args[0].v_int64;
  if (i == -1) {
    rt_any_set_int(ret, (int64_t)l->n);
    return 0;
  }
  if (i < 0 || (uint64_t)i >= l->n)
    return rt_raise("IndexError", "index %lld out of range [0, %zu)", (long long)i, l->n);
  return rt_string_to_any(l->names[i], strlen(l->names[i]), ret);
}

static int rt_make_name_functor(char** names, size_t n, TVMFFIAny* ret) {
  rt_name_list* l = (rt_name_list*)malloc(sizeof(rt_name_list));
  if (!l) {
    for (size_t i = 0; i < n; ++i) free(names[i]);
    free(names);
    return rt_raise("MemoryError", "out of memory");
  }
  l->names = names;
  l->n = n;
  TVMFFIObjectHandle f;
  if (TVMFFIFunctionCreate(l, rt_name_list_call, rt_name_list_free, &f) != 0) {
    rt_name_list_free(l);
    return -1;
  }
  rt_any_set_obj(ret, f);
  return 0;
}

static int rt_ffi_list_global_names_functor(void* h, const TVMFFIAny* args, int32_t n,
                                            TVMFFIAny* ret) {
  (void)h;
  (void)args;
  (void)n;
  char** names;
  size_t count;
  if (rt_global_names(&names, &count) != 0) return -1;
  return rt_make_name_functor(names, count, ret);
}

static int rt_ffi_remove_global(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  TVMFFIByteArray name;
  if (n != 1 || !rt_any_get_bytes(&args[0], 0, &name))
    return rt_raise("TypeError", "ffi.FunctionRemoveGlobal expects one str argument");
  rt_any_set_bool(ret, rt_remove_global(name.data, name.size));
  return 0;
}

/* ffi.GetGlobalFuncMetadata(name: str) -> str: the metadata JSON given with
 * TVMFFIFunctionSetGlobalFromMethodInfo ("" when none); RuntimeError when no
 * global of that name is registered. */
static int rt_ffi_get_global_metadata(void* h, const TVMFFIAny* args, int32_t n,
                                      TVMFFIAny* ret) {
  (void)h;
  TVMFFIByteArray name;
  if (n != 1 || !rt_any_get_bytes(&args[0], 0, &name))
    return rt_raise("TypeError", "ffi.GetGlobalFuncMetadata expects one str argument");
  pthread_mutex_lock(&rt_glock);
  rt_gentry* e = rt_gtab ? rt_gfind(rt_gtab, rt_hash_name(name.data, name.size), name.data,
                                    name.size)
                         : NULL;
  if (!e || !e->func) {
    pthread_mutex_unlock(&rt_glock);
    return rt_raise("RuntimeError", "Global Function is not found: %.*s", (int)name.size,
                    name.data);
  }
  char* md = e->metadata;
  size_t len = md ? strlen(md) : 0;
  char* copy = (char*)malloc(len + 1);
  if (copy && len) memcpy(copy, md, len);
  pthread_mutex_unlock(&rt_glock);
  if (!copy) return rt_raise("MemoryError", "out of memory");
  int rc = rt_string_to_any(copy, len, ret);
  free(copy);
  return rc;
}

RT_INIT(rt_function_globals_init) {
  rt_register_global("ffi.FunctionListGlobalNamesFunctor", rt_ffi_list_global_names_functor);
  rt_register_global("ffi.FunctionRemoveGlobal", rt_ffi_remove_global);
  rt_register_global("ffi.GetGlobalFuncMetadata", rt_ffi_get_global_metadata);
}
