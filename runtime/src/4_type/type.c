/* The type table: static and dynamically allocated type indices, type
 * info with ancestors, reflection fields/methods/metadata, attribute
 * columns.
 *
 * TVMFFIGetTypeInfo is on hot paths of C++ code (type checks), so it takes
 * no lock: infos live in fixed chunks that never move, published with
 * release stores. Every mutation holds rt_tlock. Arrays a reader may hold
 * (fields, methods, attribute data) are never freed when replaced. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define RT_CHUNK_BITS 8
#define RT_CHUNK (1 << RT_CHUNK_BITS)
#define RT_MAX_CHUNKS 4096 /* type indices below 1M */

typedef struct {
  TVMFFITypeInfo info; /* first: &rt_type == &info */
  int32_t parent;
  int32_t next_child; /* next free index in the reserved child range */
  int32_t slots_end;  /* end (exclusive) of the reserved child range */
  int32_t can_overflow;
  int32_t field_cap, method_cap;
  TVMFFITypeMetadata metadata;
} rt_type;

static pthread_mutex_t rt_tlock = PTHREAD_MUTEX_INITIALIZER;
static rt_type** rt_chunks[RT_MAX_CHUNKS];
static int32_t rt_next_dyn = kTVMFFIDynObjectBegin;
static int32_t rt_index_end;

/* key -> index, open addressing; guarded by rt_tlock */
typedef struct {
  const char* key;
  size_t len;
  int32_t index;
} rt_kslot;
static rt_kslot* rt_keys;
static size_t rt_keys_cap, rt_keys_used;

static uint64_t rt_fnv1a(const char* s, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; ++i) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  return h;
}

/* TypeInfo.type_key_hash as the official runtime fills it: the C++
 * standard library's string hash of the key (libstdc++, 64-bit: the
 * Murmur-style byte hash with seed 0xc70f6907). Structural hashes combine
 * it, so it must match for them to match. */
static uint64_t rt_shift_mix(uint64_t v) { return v ^ (v >> 47); }
static uint64_t rt_std_string_hash(const char* s, size_t n) {
  const uint64_t mul = ((uint64_t)0xc6a4a793u << 32) + 0x5bd1e995u;
  uint64_t h = 0xc70f6907u ^ ((uint64_t)n * mul);
  size_t whole = n & ~(size_t)7;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t w = 0;
    for (int b = 7; b >= 0; --b) w = (w << 8) | (unsigned char)s[i + (size_t)b];
    h ^= rt_shift_mix(w * mul) * mul;
    h *= mul;
  }
  if (n & 7) {
    uint64_t w = 0;
    for (size_t b = n; b > whole; --b) w = (w << 8) | (unsigned char)s[b - 1];
    h ^= w;
    h *= mul;
  }
  return rt_shift_mix(rt_shift_mix(h) * mul);
}

static rt_type* rt_type_get(int32_t index) {
  if (index < 0 || index >= RT_CHUNK * RT_MAX_CHUNKS) return NULL;
  rt_type** chunk = __atomic_load_n(&rt_chunks[index >> RT_CHUNK_BITS], __ATOMIC_ACQUIRE);
  if (!chunk) return NULL;
  return __atomic_load_n(&chunk[index & (RT_CHUNK - 1)], __ATOMIC_ACQUIRE);
}

static int32_t rt_key_lookup(const char* key, size_t len) {
  if (!rt_keys_cap) return -2;
  size_t mask = rt_keys_cap - 1;
  for (size_t i = (size_t)rt_fnv1a(key, len) & mask; rt_keys[i].key; i = (i + 1) & mask)
    if (rt_keys[i].len == len && memcmp(rt_keys[i].key, key, len) == 0) return rt_keys[i].index;
  return -2;
}

static int rt_key_insert(const char* key, size_t len, int32_t index) {
  if ((rt_keys_used + 1) * 2 > rt_keys_cap) {
    size_t cap = rt_keys_cap ? rt_keys_cap * 2 : 256;
    rt_kslot* t = (rt_kslot*)calloc(cap, sizeof(rt_kslot));
    if (!t) return -1;
    for (size_t i = 0; i < rt_keys_cap; ++i) {
      if (!rt_keys[i].key) continue;
      size_t j = (size_t)rt_fnv1a(rt_keys[i].key, rt_keys[i].len) & (cap - 1);
      while (t[j].key) j = (j + 1) & (cap - 1);
      t[j] = rt_keys[i];
    }
    free(rt_keys);
    rt_keys = t;
    rt_keys_cap = cap;
  }
  size_t j = (size_t)rt_fnv1a(key, len) & (rt_keys_cap - 1);
  while (rt_keys[j].key) j = (j + 1) & (rt_keys_cap - 1);
  rt_keys[j].key = key;
  rt_keys[j].len = len;
  rt_keys[j].index = index;
  rt_keys_used++;
  return 0;
}

/* Creates the info at `index` (caller holds rt_tlock and checked it is
 * free). */
static rt_type* rt_type_create(const char* key, size_t len, int32_t index, int32_t parent,
                               int32_t slots, int32_t can_overflow) {
  rt_type** chunk = rt_chunks[index >> RT_CHUNK_BITS];
  if (!chunk) {
    chunk = (rt_type**)calloc(RT_CHUNK, sizeof(rt_type*));
    if (!chunk) return NULL;
    __atomic_store_n(&rt_chunks[index >> RT_CHUNK_BITS], chunk, __ATOMIC_RELEASE);
  }
  rt_type* p = parent >= 0 ? rt_type_get(parent) : NULL;
  int32_t depth = p ? p->info.type_depth + 1 : 0;
  rt_type* t = (rt_type*)calloc(1, sizeof(rt_type));
  char* k = (char*)malloc(len + 1);
  const TVMFFITypeInfo** anc =
      (const TVMFFITypeInfo**)calloc((size_t)depth + 1, sizeof(TVMFFITypeInfo*));
  if (!t || !k || !anc) {
    free(t);
    free(k);
    free(anc);
    return NULL;
  }
  memcpy(k, key, len);
  k[len] = '\0';
  for (int32_t d = 0; p && d < depth - 1; ++d) anc[d] = p->info.type_ancestors[d];
  if (p) anc[depth - 1] = &p->info;
  t->info.type_index = index;
  t->info.type_depth = depth;
  t->info.type_key.data = k;
  t->info.type_key.size = len;
  t->info.type_ancestors = anc;
  t->info.type_key_hash = rt_std_string_hash(k, len);
  t->parent = parent;
  t->next_child = index + 1;
  t->slots_end = index + 1 + (slots > 0 ? slots : 0);
  t->can_overflow = can_overflow;
  if (rt_key_insert(k, len, index) != 0) {
    free(t);
    free(k);
    free(anc);
    return NULL;
  }
  if (index + 1 > rt_index_end) rt_index_end = index + 1;
  __atomic_store_n(&chunk[index & (RT_CHUNK - 1)], t, __ATOMIC_RELEASE);
  return t;
}

static const char* const rt_static_keys[] = {
    "None", "int", "bool", "float", "void*", "DataType", "Device", "DLTensor*", "const char*",
    "TVMFFIByteArray*", "ObjectRValueRef", "ffi.SmallStr", "ffi.SmallBytes", "ffi.Unchanged"};
static const char* const rt_static_object_keys[] = {
    "ffi.Object", "ffi.String", "ffi.Bytes", "ffi.Error", "ffi.Function", "ffi.Shape",
    "ffi.Tensor", "ffi.Array", "ffi.Map", "ffi.Module", "ffi.OpaquePyObject", "ffi.List",
    "ffi.Dict", "ffi.VisitInterrupt", "ffi.BigInt"};

static void rt_types_init_locked(void) {
  static int done;
  if (done) return;
  done = 1;
  for (int32_t i = 0; i < (int32_t)(sizeof(rt_static_keys) / sizeof(rt_static_keys[0])); ++i)
    rt_type_create(rt_static_keys[i], strlen(rt_static_keys[i]), i, -1, 0, 0);
  for (int32_t i = 0;
       i < (int32_t)(sizeof(rt_static_object_keys) / sizeof(rt_static_object_keys[0])); ++i) {
    int32_t idx = kTVMFFIObject + i;
    rt_type_create(rt_static_object_keys[i], strlen(rt_static_object_keys[i]), idx,
                   i == 0 ? -1 : kTVMFFIObject, 0, 1);
  }
  /* children of ffi.Object take indices from the dynamic range */
  rt_type* obj = rt_type_get(kTVMFFIObject);
  if (obj) obj->slots_end = obj->next_child = kTVMFFIObject;
}

/* Runs at load, before RT_INIT functions, so lock-free readers see statics. */
__attribute__((constructor(101))) static void rt_types_ctor(void) {
  pthread_mutex_lock(&rt_tlock);
  rt_types_init_locked();
  pthread_mutex_unlock(&rt_tlock);
}

TVM_FFI_DLL int32_t TVMFFITypeGetOrAllocIndex(const TVMFFIByteArray* type_key,
                                              int32_t static_type_index, int32_t type_depth,
                                              int32_t num_child_slots,
                                              int32_t child_slots_can_overflow,
                                              int32_t parent_type_index) {
  (void)type_depth; /* derived from the parent, which is authoritative */
  if (!type_key || (type_key->size && !type_key->data)) {
    rt_raise("ValueError", "TVMFFITypeGetOrAllocIndex: NULL type key");
    return -1;
  }
  const char* key = type_key->data;
  size_t len = type_key->size;
  pthread_mutex_lock(&rt_tlock);
  rt_types_init_locked();
  int32_t idx = rt_key_lookup(key, len);
  if (idx != -2 || parent_type_index == -2) {
    pthread_mutex_unlock(&rt_tlock);
    return idx;
  }
  rt_type* p = NULL;
  if (parent_type_index != -1) {
    p = rt_type_get(parent_type_index);
    if (!p) {
      pthread_mutex_unlock(&rt_tlock);
      rt_raise("ValueError", "type `%.*s`: parent type index %d is not registered", (int)len, key,
               (int)parent_type_index);
      return -1;
    }
  }
  int32_t slots = num_child_slots > 0 ? num_child_slots : 0;
  if (static_type_index >= 0) {
    if (rt_type_get(static_type_index)) {
      pthread_mutex_unlock(&rt_tlock);
      rt_raise("ValueError", "type `%.*s`: static type index %d is already taken", (int)len, key,
               (int)static_type_index);
      return -1;
    }
    idx = static_type_index;
    if (idx >= rt_next_dyn) rt_next_dyn = idx + 1 + slots;
  } else if (!p) {
    pthread_mutex_unlock(&rt_tlock);
    rt_raise("ValueError", "type `%.*s`: a dynamic type needs a parent", (int)len, key);
    return -1;
  } else if (p->next_child + 1 + slots <= p->slots_end) {
    idx = p->next_child;
    p->next_child += 1 + slots;
  } else if (p->can_overflow) {
    idx = rt_next_dyn;
    rt_next_dyn += 1 + slots;
  } else {
    pthread_mutex_unlock(&rt_tlock);
    rt_raise("RuntimeError", "type `%.*s`: parent `%s` has no child slot left", (int)len, key,
             p->info.type_key.data);
    return -1;
  }
  if (idx >= RT_CHUNK * RT_MAX_CHUNKS ||
      !rt_type_create(key, len, idx, p ? p->info.type_index : -1, slots,
                      child_slots_can_overflow)) {
    pthread_mutex_unlock(&rt_tlock);
    rt_raise("MemoryError", "cannot register type `%.*s`", (int)len, key);
    return -1;
  }
  pthread_mutex_unlock(&rt_tlock);
  return idx;
}

TVM_FFI_DLL int TVMFFITypeKeyToIndex(const TVMFFIByteArray* type_key, int32_t* out_tindex) {
  if (!type_key || !out_tindex) return rt_raise("ValueError", "TVMFFITypeKeyToIndex: NULL argument");
  pthread_mutex_lock(&rt_tlock);
  rt_types_init_locked();
  int32_t idx = rt_key_lookup(type_key->data, type_key->size);
  pthread_mutex_unlock(&rt_tlock);
  if (idx == -2)
    return rt_raise("KeyError", "Cannot find type `%.*s`", (int)type_key->size, type_key->data);
  *out_tindex = idx;
  return 0;
}

TVM_FFI_DLL const TVMFFITypeInfo* TVMFFIGetTypeInfo(int32_t type_index) {
  rt_type* t = rt_type_get(type_index);
  return t ? &t->info : NULL;
}

/* ---- reflection ---- */
static int rt_dup_into(TVMFFIByteArray* dst, const TVMFFIByteArray* src) {
  if (!src->size) {
    dst->data = "";
    dst->size = 0;
    return 0;
  }
  char* p = (char*)malloc(src->size + 1);
  if (!p) return -1;
  memcpy(p, src->data, src->size);
  p[src->size] = '\0';
  dst->data = p;
  dst->size = src->size;
  return 0;
}

static void rt_free_dup(TVMFFIByteArray* b) {
  if (b->size) free((void*)b->data);
  b->data = "";
  b->size = 0;
}

/* Arrays replaced by a grown copy: a reader may still hold one, so they are
 * kept (listed here, so they stay reachable) rather than freed. */
typedef struct rt_retired {
  struct rt_retired* next;
  void* arr;
} rt_retired;
static rt_retired* rt_retired_arrays;

/* Room for element `count` of an array of capacity *cap: arr itself while
 * it has room, else a grown copy (NULL when out of memory). Nothing is
 * recorded: rt_array_commit does that once the new element is in place. */
static void* rt_array_room(const void* arr, int32_t count, int32_t cap, int32_t* new_cap,
                           size_t elem) {
  *new_cap = cap;
  if (count < cap) return (void*)arr;
  int32_t ncap = cap > count ? cap : count;
  ncap = ncap ? ncap * 2 : 4;
  void* n = calloc((size_t)ncap, elem);
  if (!n) return NULL;
  if (count) memcpy(n, arr, (size_t)count * elem);
  *new_cap = ncap;
  return n;
}

/* Publishes `arr` (from rt_array_room) with one more element; the array it
 * replaces, if any, is retired. Returns 0, or -1 when the retired list
 * cannot grow (nothing changed then). */
static int rt_array_commit(const void** slot, int32_t* count, void* arr, int32_t* cap,
                           int32_t new_cap) {
  const void* old = *slot;
  if (arr != old && old) {
    rt_retired* r = (rt_retired*)malloc(sizeof(rt_retired));
    if (!r) return -1;
    r->arr = (void*)old;
    r->next = rt_retired_arrays;
    rt_retired_arrays = r;
  }
  *cap = new_cap;
  __atomic_store_n(slot, arr, __ATOMIC_RELEASE);
  __atomic_store_n(count, *count + 1, __ATOMIC_RELEASE);
  return 0;
}

TVM_FFI_DLL int TVMFFITypeRegisterField(int32_t type_index, const TVMFFIFieldInfo* info) {
  if (!info) return rt_raise("ValueError", "TVMFFITypeRegisterField: NULL info");
  TVMFFIFieldInfo f = *info;
  f.name.size = f.doc.size = f.metadata.size = 0;
  if (rt_dup_into(&f.name, &info->name) || rt_dup_into(&f.doc, &info->doc) ||
      rt_dup_into(&f.metadata, &info->metadata)) {
    rt_free_dup(&f.name);
    rt_free_dup(&f.doc);
    rt_free_dup(&f.metadata);
    return rt_raise("MemoryError", "out of memory registering a field");
  }
  if (TVMFFIAnyViewToOwnedAny(&info->default_value_or_factory, &f.default_value_or_factory))
    rt_any_set_none(&f.default_value_or_factory);
  pthread_mutex_lock(&rt_tlock);
  rt_type* t = rt_type_get(type_index);
  int rc = 0;
  if (!t) {
    rc = rt_raise("ValueError", "TVMFFITypeRegisterField: type index %d is not registered",
                  (int)type_index);
  } else {
    int32_t cap;
    TVMFFIFieldInfo* arr = (TVMFFIFieldInfo*)rt_array_room(t->info.fields, t->info.num_fields,
                                                           t->field_cap, &cap, sizeof(f));
    if (arr) arr[t->info.num_fields] = f;
    if (!arr || rt_array_commit((const void**)&t->info.fields, &t->info.num_fields, arr,
                                &t->field_cap, cap) != 0) {
      if (arr && arr != t->info.fields) free(arr);
      rc = rt_raise("MemoryError", "out of memory registering a field");
    } else if ((f.flags & kTVMFFIFieldFlagBitSetterIsFunctionObj) && f.setter) {
      TVMFFIObjectIncRef(f.setter);
    }
  }
  pthread_mutex_unlock(&rt_tlock);
  if (rc != 0) {
    rt_free_dup(&f.name);
    rt_free_dup(&f.doc);
    rt_free_dup(&f.metadata);
    rt_any_release(&f.default_value_or_factory);
  }
  return rc;
}

TVM_FFI_DLL int TVMFFITypeRegisterMethod(int32_t type_index, const TVMFFIMethodInfo* info) {
  if (!info) return rt_raise("ValueError", "TVMFFITypeRegisterMethod: NULL info");
  TVMFFIMethodInfo m = *info;
  m.name.size = m.doc.size = m.metadata.size = 0;
  rt_any_set_none(&m.method);
  if (TVMFFIAnyViewToOwnedAny(&info->method, &m.method) != 0) return -1;
  int rc = 0;
  if (rt_dup_into(&m.name, &info->name) || rt_dup_into(&m.doc, &info->doc) ||
      rt_dup_into(&m.metadata, &info->metadata)) {
    rc = rt_raise("MemoryError", "out of memory registering a method");
  } else {
    pthread_mutex_lock(&rt_tlock);
    rt_type* t = rt_type_get(type_index);
    if (!t) {
      rc = rt_raise("ValueError", "TVMFFITypeRegisterMethod: type index %d is not registered",
                    (int)type_index);
    } else {
      int32_t cap;
      TVMFFIMethodInfo* arr = (TVMFFIMethodInfo*)rt_array_room(
          t->info.methods, t->info.num_methods, t->method_cap, &cap, sizeof(m));
      if (arr) arr[t->info.num_methods] = m;
      if (!arr || rt_array_commit((const void**)&t->info.methods, &t->info.num_methods, arr,
                                  &t->method_cap, cap) != 0) {
        if (arr && arr != t->info.methods) free(arr);
        rc = rt_raise("MemoryError", "out of memory registering a method");
      }
    }
    pthread_mutex_unlock(&rt_tlock);
  }
  if (rc != 0) {
    rt_free_dup(&m.name);
    rt_free_dup(&m.doc);
    rt_free_dup(&m.metadata);
    rt_any_release(&m.method);
  }
  return rc;
}

TVM_FFI_DLL int TVMFFITypeRegisterMetadata(int32_t type_index, const TVMFFITypeMetadata* metadata) {
  if (!metadata) return rt_raise("ValueError", "TVMFFITypeRegisterMetadata: NULL metadata");
  pthread_mutex_lock(&rt_tlock);
  rt_type* t = rt_type_get(type_index);
  int rc = 0;
  if (!t) {
    rc = rt_raise("ValueError", "TVMFFITypeRegisterMetadata: type index %d is not registered",
                  (int)type_index);
  } else if (t->info.metadata) {
    /* first registration wins: readers may hold the struct */
  } else {
    t->metadata = *metadata;
    if (rt_dup_into(&t->metadata.doc, &metadata->doc)) {
      rc = rt_raise("MemoryError", "out of memory registering metadata");
    } else {
      __atomic_store_n(&t->info.metadata, &t->metadata, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&rt_tlock);
  return rc;
}

/* ---- attribute columns ---- */
typedef struct rt_column {
  char* name;
  size_t len;
  TVMFFITypeAttrColumn col;
  struct rt_column* next;
} rt_column;
static rt_column* rt_columns;

static rt_column* rt_column_find(const char* name, size_t len) {
  for (rt_column* c = rt_columns; c; c = c->next)
    if (c->len == len && memcmp(c->name, name, len) == 0) return c;
  return NULL;
}

TVM_FFI_DLL int TVMFFITypeRegisterAttr(int32_t type_index, const TVMFFIByteArray* attr_name,
                                       const TVMFFIAny* attr_value) {
  if (!attr_name || !attr_value) return rt_raise("ValueError", "TVMFFITypeRegisterAttr: NULL argument");
  if (type_index < 0 || type_index >= RT_CHUNK * RT_MAX_CHUNKS)
    return rt_raise("ValueError", "TVMFFITypeRegisterAttr: bad type index %d", (int)type_index);
  TVMFFIAny owned;
  if (TVMFFIAnyViewToOwnedAny(attr_value, &owned) != 0) return -1;
  pthread_mutex_lock(&rt_tlock);
  int rc = 0;
  rt_column* c = rt_column_find(attr_name->data, attr_name->size);
  if (!c) {
    c = (rt_column*)calloc(1, sizeof(rt_column));
    char* n = (char*)malloc(attr_name->size + 1);
    if (!c || !n) {
      free(c);
      free(n);
      c = NULL;
    } else {
      memcpy(n, attr_name->data, attr_name->size);
      n[attr_name->size] = '\0';
      c->name = n;
      c->len = attr_name->size;
      c->next = rt_columns;
      rt_columns = c;
    }
  }
  if (!c) {
    rc = rt_raise("MemoryError", "out of memory registering an attribute");
  } else if (type_index == kTVMFFINone) {
    /* the None index only makes sure the column exists (as the official
     * EnsureTypeAttrColumn does): no value is stored */
  } else {
    if (type_index >= c->col.size) {
      /* grow geometrically; the old array is kept for readers */
      int32_t n = c->col.size ? c->col.size : 16;
      while (n <= type_index) n *= 2;
      TVMFFIAny* d = (TVMFFIAny*)calloc((size_t)n, sizeof(TVMFFIAny));
      rt_retired* r = c->col.data ? (rt_retired*)malloc(sizeof(rt_retired)) : NULL;
      if (!d || (c->col.data && !r)) {
        free(d);
        free(r);
        rc = rt_raise("MemoryError", "out of memory registering an attribute");
      } else {
        if (c->col.size) memcpy(d, c->col.data, sizeof(TVMFFIAny) * (size_t)c->col.size);
        if (r) {
          r->arr = (void*)c->col.data;
          r->next = rt_retired_arrays;
          rt_retired_arrays = r;
        }
        __atomic_store_n(&c->col.data, d, __ATOMIC_RELEASE);
        __atomic_store_n(&c->col.size, n, __ATOMIC_RELEASE);
      }
    }
    if (rc == 0) {
      TVMFFIAny* slot = (TVMFFIAny*)&c->col.data[type_index];
      if (slot->type_index != kTVMFFINone) {
        /* as the official runtime: a value is set once (readers may hold it
         * without a reference); a None slot still counts as empty */
        rc = rt_raise("RuntimeError",
                      "TypeAttr `%.*s` is already registered for type index %d; to change a "
                      "value later, register a mutable container (List, Dict) once",
                      (int)attr_name->size, attr_name->data, (int)type_index);
      } else {
        *slot = owned;
        rt_any_set_none(&owned);
      }
    }
  }
  pthread_mutex_unlock(&rt_tlock);
  rt_any_release(&owned);
  return rc;
}

int rt_type_set_native_attr(int32_t type_index, const char* column, void* fn) {
  TVMFFIByteArray name = rt_ba(column);
  TVMFFIAny v;
  rt_any_set_none(&v);
  v.type_index = kTVMFFIOpaquePtr;
  v.v_ptr = fn;
  return TVMFFITypeRegisterAttr(type_index, &name, &v);
}

TVM_FFI_DLL const TVMFFITypeAttrColumn* TVMFFIGetTypeAttrColumn(const TVMFFIByteArray* attr_name) {
  if (!attr_name) return NULL;
  pthread_mutex_lock(&rt_tlock);
  rt_column* c = rt_column_find(attr_name->data, attr_name->size);
  pthread_mutex_unlock(&rt_tlock);
  return c ? &c->col : NULL;
}

/* ---- helpers for the rest of the runtime ---- */
int rt_type_is_instance(int32_t type_index, int32_t ancestor) {
  if (type_index == ancestor) return 1;
  rt_type* t = rt_type_get(type_index);
  rt_type* a = rt_type_get(ancestor);
  if (!t || !a) return 0;
  int32_t d = a->info.type_depth;
  return t->info.type_depth > d && t->info.type_ancestors[d]->type_index == ancestor;
}

const char* rt_type_key(int32_t type_index, size_t* len) {
  rt_type* t = rt_type_get(type_index);
  if (!t) {
    *len = 7;
    return "unknown";
  }
  *len = t->info.type_key.size;
  return t->info.type_key.data;
}

int rt_type_keys(char*** out_keys, size_t* out_count) {
  pthread_mutex_lock(&rt_tlock);
  size_t n = 0;
  char** keys = (char**)malloc(sizeof(char*) * (rt_keys_used ? rt_keys_used : 1));
  int ok = keys != NULL;
  for (int32_t i = 0; ok && i < rt_index_end; ++i) {
    rt_type* t = rt_type_get(i);
    if (!t) continue;
    keys[n] = (char*)malloc(t->info.type_key.size + 1);
    if (!keys[n]) {
      ok = 0;
      break;
    }
    memcpy(keys[n], t->info.type_key.data, t->info.type_key.size + 1);
    n++;
  }
  pthread_mutex_unlock(&rt_tlock);
  if (!ok) {
    for (size_t i = 0; i < n; ++i) free(keys[i]);
    free(keys);
    return rt_raise("MemoryError", "out of memory listing types");
  }
  *out_keys = keys;
  *out_count = n;
  return 0;
}

TVM_FFI_DLL int tvmffi_rt_type_index_valid(int32_t type_index) {
  return rt_type_get(type_index) != NULL;
}

TVM_FFI_DLL int32_t tvmffi_rt_type_index_end(void) {
  pthread_mutex_lock(&rt_tlock);
  int32_t e = rt_index_end;
  pthread_mutex_unlock(&rt_tlock);
  return e;
}
