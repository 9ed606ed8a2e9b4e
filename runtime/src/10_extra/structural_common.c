/* Shared pieces of structural equality and hashing: the address table, type
 * kinds and custom hooks, field walking, def regions, tensor checks; and the
 * structural kinds the official runtime gives its own types at start-up. */
#include <string.h>

#include "structural_internal.h"

/* ---- address table (open addressing, linear probing) ---- */
void rt_st_map_init(rt_st_map* m) {
  m->slots = NULL;
  m->cap = 0;
  m->used = 0;
}

void rt_st_map_free(rt_st_map* m) {
  for (size_t i = 0; i < m->cap; ++i) {
    if (m->slots[i].key) {
      rt_decref(m->slots[i].key);
      rt_decref(m->slots[i].obj);
    }
  }
  free(m->slots);
  rt_st_map_init(m);
}

static size_t st_slot_of(const void* key, size_t cap) {
  uint64_t h = (uint64_t)(uintptr_t)key;
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return (size_t)h & (cap - 1);
}

const rt_st_slot* rt_st_map_find(const rt_st_map* m, const void* key) {
  if (m->cap == 0) return NULL;
  for (size_t i = st_slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
    if (m->slots[i].key == key) return &m->slots[i];
    if (m->slots[i].key == NULL) return NULL;
  }
}

static int st_map_grow(rt_st_map* m) {
  size_t cap = m->cap ? m->cap * 2 : 16;
  rt_st_slot* slots = (rt_st_slot*)calloc(cap, sizeof(rt_st_slot));
  if (slots == NULL) return rt_raise("MemoryError", "out of memory in a structural walk");
  for (size_t i = 0; i < m->cap; ++i) {
    if (m->slots[i].key == NULL) continue;
    size_t j = st_slot_of(m->slots[i].key, cap);
    while (slots[j].key) j = (j + 1) & (cap - 1);
    slots[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return 0;
}

int rt_st_map_put(rt_st_map* m, void* key, void* obj, uint64_t num) {
  if ((m->used + 1) * 2 > m->cap && st_map_grow(m) != 0) return -1;
  size_t i = st_slot_of(key, m->cap);
  while (m->slots[i].key && m->slots[i].key != key) i = (i + 1) & (m->cap - 1);
  rt_st_slot* s = &m->slots[i];
  if (obj) rt_incref(obj);
  if (s->key) {
    rt_decref(s->obj);
  } else {
    rt_incref(key);
    s->key = key;
    ++m->used;
  }
  s->obj = obj;
  s->num = num;
  return 0;
}

/* ---- types, hooks, fields ---- */
int rt_st_kind(int32_t type_index, const TVMFFITypeInfo** info, TVMFFISEqHashKind* kind) {
  const TVMFFITypeInfo* t = TVMFFIGetTypeInfo(type_index);
  if (t == NULL) return rt_raise("TypeError", "unknown type index %d", (int)type_index);
  if (t->metadata == NULL) {
    return rt_raise("TypeError",
                    "Type metadata is not set for type `%.*s`, so StructuralHash is not "
                    "supported for this type",
                    (int)t->type_key.size, t->type_key.data);
  }
  if (t->metadata->structural_eq_hash_kind == kTVMFFISEqHashKindUnsupported) {
    return rt_raise("TypeError",
                    "_type_s_eq_hash_kind is not set for type `%.*s`, so StructuralHash is not "
                    "supported for this type",
                    (int)t->type_key.size, t->type_key.data);
  }
  *info = t;
  *kind = t->metadata->structural_eq_hash_kind;
  return 0;
}

const TVMFFIAny* rt_st_hook(const char* column, int32_t type_index) {
  /* a column, once made, stays at its address: look each one up once */
  static const TVMFFITypeAttrColumn* s_equal;
  static const TVMFFITypeAttrColumn* s_hash;
  const TVMFFITypeAttrColumn** cache = strcmp(column, "__s_equal__") == 0  ? &s_equal
                                       : strcmp(column, "__s_hash__") == 0 ? &s_hash
                                                                           : NULL;
  const TVMFFITypeAttrColumn* c = cache ? __atomic_load_n(cache, __ATOMIC_ACQUIRE) : NULL;
  if (c == NULL) {
    TVMFFIByteArray name = {column, strlen(column)};
    c = TVMFFIGetTypeAttrColumn(&name);
    if (c == NULL) return NULL;
    if (cache) __atomic_store_n(cache, c, __ATOMIC_RELEASE);
  }
  int64_t off = (int64_t)type_index - c->begin_index;
  if (off < 0 || off >= c->size) return NULL;
  const TVMFFIAny* e = &c->data[off];
  return e->type_index == kTVMFFINone ? NULL : e;
}

void rt_st_fields_begin(rt_st_fields* it, const TVMFFITypeInfo* info) {
  it->info = info;
  it->level = 1; /* depth 0 is ffi.Object, which has no fields */
  it->next = 0;
}

const TVMFFIFieldInfo* rt_st_fields_next(rt_st_fields* it) {
  const TVMFFITypeInfo* info = it->info;
  while (it->level <= info->type_depth) {
    const TVMFFITypeInfo* t =
        it->level < info->type_depth ? info->type_ancestors[it->level] : info;
    if (t != NULL && it->next < t->num_fields) return &t->fields[it->next++];
    ++it->level;
    it->next = 0;
  }
  return NULL;
}

int rt_st_field_get(void* obj, const TVMFFIFieldInfo* f, TVMFFIAny* out) {
  rt_any_set_none(out);
  if (f->getter == NULL) {
    return rt_raise("TypeError", "field `%.*s` has no getter", (int)f->name.size, f->name.data);
  }
  return f->getter((char*)obj + f->offset, out);
}

int32_t rt_st_field_region(int32_t current, int64_t flags) {
  const int64_t def_any =
      kTVMFFIFieldFlagBitMaskSEqHashDefPattern | kTVMFFIFieldFlagBitMaskSEqHashDefSimple;
  if (!(flags & def_any)) return current;
  if (current == kTVMFFIDefRegionKindPattern) return kTVMFFIDefRegionKindPattern;
  return (flags & kTVMFFIFieldFlagBitMaskSEqHashDefSimple) ? kTVMFFIDefRegionKindSimple
                                                            : kTVMFFIDefRegionKindPattern;
}

int32_t rt_st_callback_region(int32_t current, int64_t requested) {
  if (current == kTVMFFIDefRegionKindPattern) return kTVMFFIDefRegionKindPattern;
  return requested == kTVMFFIDefRegionKindNone ? current : (int32_t)requested;
}

struct rt_st_cell {
  void* ctx; /* NULL once the walk ended */
  TVMFFISafeCallType fn;
};

static int st_cell_call(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  rt_st_cell* cell = (rt_st_cell*)self;
  void* ctx = __atomic_load_n(&cell->ctx, __ATOMIC_ACQUIRE);
  if (ctx == NULL)
    return rt_raise("RuntimeError",
                    "a structural equal/hash callback was called after its walk ended");
  return cell->fn(ctx, args, nargs, ret);
}

int rt_st_callback_new(void* ctx, TVMFFISafeCallType fn, TVMFFIObjectHandle* out,
                       rt_st_cell** cell) {
  rt_st_cell* c = (rt_st_cell*)malloc(sizeof(rt_st_cell));
  if (c == NULL) return rt_raise("MemoryError", "out of memory in a structural walk");
  c->ctx = ctx;
  c->fn = fn;
  if (TVMFFIFunctionCreate(c, st_cell_call, free, out) != 0) {
    free(c);
    return -1;
  }
  *cell = c;
  return 0;
}

void rt_st_callback_close(rt_st_cell* cell, TVMFFIObjectHandle f) {
  if (cell != NULL) __atomic_store_n(&cell->ctx, NULL, __ATOMIC_RELEASE);
  rt_decref(f);
}

/* The lowest stack address a walk may reach in this thread (0: not
 * measured yet; 1: unknown, the depth bound alone applies). */
static __thread uintptr_t st_stack_floor;

int rt_st_too_deep_now(int depth) {
  if (depth > RT_ST_MAX_DEPTH) return 1;
  uintptr_t floor = st_stack_floor;
  if (floor == 0) {
    floor = 1;
    pthread_attr_t attr;
    if (pthread_getattr_np(pthread_self(), &attr) == 0) {
      void* base = NULL;
      size_t size = 0;
      if (pthread_attr_getstack(&attr, &base, &size) == 0 && base != NULL && size > 0) {
        /* a small stack keeps a quarter of itself */
        size_t margin = size / 4 < (size_t)RT_ST_STACK_MARGIN ? size / 4 : RT_ST_STACK_MARGIN;
        floor = (uintptr_t)base + margin;
      }
      pthread_attr_destroy(&attr);
    }
    st_stack_floor = floor;
  }
  char here;
  return (uintptr_t)&here < floor;
}

int rt_st_too_deep(const char* what) {
  return rt_raise("ValueError",
                  "%s: the value nests too deeply (over %d levels, or more than the thread's "
                  "stack holds); a container that holds itself does too",
                  what, RT_ST_MAX_DEPTH);
}

/* ---- tensors ---- */
size_t rt_st_tensor_nbytes(const DLTensor* t) {
  uint64_t numel = 1;
  for (int32_t i = 0; i < t->ndim; ++i) numel *= (uint64_t)t->shape[i];
  return (size_t)((numel * t->dtype.bits * t->dtype.lanes + 7) / 8);
}

int rt_st_tensor_on_cpu(const DLTensor* t, const char* side, const char* verb) {
  if (t->device.device_type == kDLCPU) return 0;
  return rt_raise("InternalError",
                  "Check failed: %s.device().device_type == kDLCPU (%d vs. %d) : can only %s "
                  "CPU tensor",
                  side, (int)t->device.device_type, (int)kDLCPU, verb);
}

static int st_is_contiguous(const DLTensor* t) {
  if (t->strides == NULL) return 1;
  for (int32_t i = 0; i < t->ndim; ++i)
    if (t->shape[i] == 0) return 1;
  int64_t expected = 1;
  for (int32_t k = t->ndim - 1; k >= 0; --k) {
    if (t->shape[k] == 1) continue;
    if (t->strides[k] != expected) return 0;
    expected *= t->shape[k];
  }
  return 1;
}

int rt_st_tensor_contiguous(const DLTensor* t, const char* side, const char* verb) {
  if (st_is_contiguous(t)) return 0;
  return rt_raise("InternalError",
                  "Check failed: (%s.IsContiguous()) is false: Can only %s contiguous tensor", side,
                  verb);
}

/* ---- the structural kinds of the official runtime's own types ----
 * Its C++ declarations give these types metadata (kind Unsupported unless
 * listed otherwise); structural walks read it: Enum values compare by
 * identity, access paths by content, the rest raise TypeError. Registered
 * after the types exist (the RT_INIT constructors run at priority 200). */
__attribute__((constructor(201))) static void rt_structural_kinds_init(void) {
  static const struct {
    const char* key;
    int32_t total_size;
    TVMFFISEqHashKind kind;
  } kinds[] = {
      {"ffi.Object", 24, kTVMFFISEqHashKindUnsupported},
      {"ffi.Module", 48, kTVMFFISEqHashKindUnsupported},
      {"ffi.VisitInterrupt", 40, kTVMFFISEqHashKindUnsupported},
      {"ffi.BigInt", 32, kTVMFFISEqHashKindUnsupported},
      {"ffi.EnumState", 48, kTVMFFISEqHashKindUnsupported},
      {"ffi.Enum", 48, kTVMFFISEqHashKindUniqueInstance},
      {"ffi.IntEnum", 48, kTVMFFISEqHashKindUniqueInstance},
      {"ffi.StrEnum", 48, kTVMFFISEqHashKindUniqueInstance},
      {"ffi.reflection.AccessStep", 48, kTVMFFISEqHashKindConstTreeNode},
      {"ffi.reflection.AccessPath", 48, kTVMFFISEqHashKindConstTreeNode},
      {"ffi.StructuralVisitor", 40, kTVMFFISEqHashKindUnsupported},
      {"ffi.VisitErrorContext", 40, kTVMFFISEqHashKindUnsupported},
      {"ffi.StructuralMutator", 40, kTVMFFISEqHashKindUnsupported},
      {"ffi.StructuralKey", 48, kTVMFFISEqHashKindUnsupported},
  };
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) {
    TVMFFIByteArray key = {kinds[i].key, strlen(kinds[i].key)};
    int32_t ti = -1;
    if (TVMFFITypeKeyToIndex(&key, &ti) != 0 || ti < 0) continue;
    const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
    if (info == NULL || info->metadata != NULL) continue;
    TVMFFITypeMetadata md;
    memset(&md, 0, sizeof(md));
    md.total_size = kinds[i].total_size;
    md.structural_eq_hash_kind = kinds[i].kind;
    (void)TVMFFITypeRegisterMetadata(ti, &md);
  }
  /* a type missing above leaves an error behind; start-up has no caller */
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  rt_decref(err);
}
