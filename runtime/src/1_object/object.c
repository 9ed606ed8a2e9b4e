/* Object storage and reference counting: the bottom layer. Nothing here
 * raises an error (errors are objects made with this file's allocator):
 * allocation failure returns NULL and alloc.c, one layer up, raises. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* ---- the built-in allocator ----
 * Each block is [raw pointer][TVMFFIObjectAllocHeader][body...]: the 16-byte
 * prefix keeps the body 16-byte aligned with plain malloc. A block from
 * plain malloc starts at its prefix (rt_default_delete_space frees that,
 * the raw field is not used); an over-aligned block records where malloc's
 * block starts in raw (rt_aligned_delete_space). */
void rt_default_delete_space(void* body) { free((rt_prefix*)body - 1); }
static void rt_aligned_delete_space(void* body) { free(((rt_prefix*)body - 1)->raw); }

static void* rt_default_allocate(size_t size, size_t alignment, int32_t type_index, void* ctx) {
  (void)type_index;
  (void)ctx;
  char* raw;
  char* body;
  if (alignment <= 16) {
    raw = (char*)malloc(sizeof(rt_prefix) + size);
    body = raw + sizeof(rt_prefix);
  } else {
    if (alignment & (alignment - 1)) return NULL; /* alloc.c checks it first */
    raw = (char*)malloc(alignment + size + sizeof(rt_prefix));
    body = raw ? (char*)(((uintptr_t)raw + sizeof(rt_prefix) + alignment - 1) &
                         ~(uintptr_t)(alignment - 1))
               : NULL;
  }
  if (!raw) return NULL;
  rt_prefix* p = (rt_prefix*)body - 1;
  p->raw = raw;
  p->hdr.delete_space = raw == (char*)p ? rt_default_delete_space : rt_aligned_delete_space;
  return body;
}

TVMFFICustomAllocator rt_default_allocator = {rt_default_allocate, NULL};
TVMFFICustomAllocator* rt_allocator = &rt_default_allocator;

TVM_FFI_DLL TVMFFICustomAllocator* TVMFFIGetCustomAllocator(void) {
  return __atomic_load_n(&rt_allocator, __ATOMIC_ACQUIRE);
}

void rt_object_set_allocator(TVMFFICustomAllocator* allocator) {
  __atomic_store_n(&rt_allocator, allocator ? allocator : &rt_default_allocator,
                   __ATOMIC_RELEASE);
}

void* rt_object_alloc_aligned_quiet(size_t total_size, size_t alignment, int32_t type_index,
                              void (*deleter)(void*, int)) {
  TVMFFICustomAllocator* a = __atomic_load_n(&rt_allocator, __ATOMIC_ACQUIRE);
  void* body = a->allocate(total_size, alignment, type_index, a->context);
  if (RT_UNLIKELY(!body)) return NULL;
  memset(body, 0, total_size);
  TVMFFIObject* o = (TVMFFIObject*)body;
  o->combined_ref_count = RT_BOTH_ONE;
  o->type_index = type_index;
  o->deleter = deleter;
  rt_count_alloc(type_index);
  return body;
}

void* rt_object_alloc_quiet(size_t total_size, int32_t type_index, void (*deleter)(void*, int)) {
  void* body = rt_object_alloc_uninit_quiet(total_size, type_index, deleter);
  if (body && total_size > sizeof(TVMFFIObject))
    memset((char*)body + sizeof(TVMFFIObject), 0, total_size - sizeof(TVMFFIObject));
  return body;
}

/* Checking mode keeps freed blocks in a quarantine so a later DecRef/IncRef
 * of a dead object reads a zero count instead of recycled memory. */
#define RT_QUARANTINE 4096
static pthread_mutex_t rt_quarantine_lock = PTHREAD_MUTEX_INITIALIZER;
static void* rt_quarantine[RT_QUARANTINE];
static size_t rt_quarantine_pos;

static void rt_dead_deleter(void* self, int flags) {
  (void)flags;
  rt_violation("deleter_on_dead", "deleter called on dead object %p", self);
}

static inline __attribute__((always_inline)) void rt_small_keep(rt_prefix* p) {
  rt_small_cache* c = &rt_tls_small;
  if (RT_LIKELY(c->count < RT_SMALL_KEEP)) {
    p->raw = c->head;
    c->head = p;
    c->count++;
  } else {
    free(p);
  }
}

void rt_small_delete_space(void* body) { rt_small_keep((rt_prefix*)body - 1); }

static void rt_release_space(void* obj) {
  TVMFFIObjectAllocHeader* h = (TVMFFIObjectAllocHeader*)obj - 1;
  if (RT_LIKELY(h->delete_space == rt_small_delete_space)) {
    rt_small_keep((rt_prefix*)obj - 1);
  } else if (RT_LIKELY(h->delete_space == rt_default_delete_space)) {
    free((rt_prefix*)obj - 1);
  } else if (h->delete_space) {
    h->delete_space(obj);
  }
}

/* Checking mode: park the dead block, release the oldest parked one. */
__attribute__((noinline, cold)) static void rt_quarantine_put(TVMFFIObject* o) {
  __atomic_store_n(&o->combined_ref_count, 0, __ATOMIC_RELEASE);
  o->deleter = rt_dead_deleter;
  void* evict;
  pthread_mutex_lock(&rt_quarantine_lock);
  evict = rt_quarantine[rt_quarantine_pos];
  rt_quarantine[rt_quarantine_pos] = o;
  rt_quarantine_pos = (rt_quarantine_pos + 1) % RT_QUARANTINE;
  pthread_mutex_unlock(&rt_quarantine_lock);
  if (evict) rt_release_space(evict);
}

/* Shared by rt_object_free and the plain deleter (inlined into both, so
 * freeing a plain object is one call from the deleter to free()). */
static inline __attribute__((always_inline)) void rt_object_free_nonnull(TVMFFIObject* o) {
  rt_count_free(o->type_index);
  if (RT_UNLIKELY(__atomic_load_n(&rt_checking_level, __ATOMIC_RELAXED) > 0)) {
    rt_quarantine_put(o);
    return;
  }
  rt_release_space(o);
}

void rt_object_free(void* obj) {
  if (obj) rt_object_free_nonnull((TVMFFIObject*)obj);
}

void rt_object_plain_deleter(void* self, int flags) {
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free_nonnull((TVMFFIObject*)self);
}

/* ---- reference counting ----
 * Strong count in the low 32 bits, weak in the high 32 bits; a fresh object
 * holds one of each (the strong references together own one weak one). */
/* Misuse shows up in the value the atomic returned, so the fast path has no
 * extra test: a strong count of 0 before the operation means the object was
 * already dead. In checking mode the operation is undone and recorded (the
 * quarantine keeps dead blocks readable); otherwise behaviour is the plain
 * ABI one. */
__attribute__((noinline, cold)) static void rt_incref_from_zero(TVMFFIObject* o) {
  if (!__atomic_load_n(&rt_checking_level, __ATOMIC_RELAXED)) return;
  __atomic_fetch_sub(&o->combined_ref_count, RT_STRONG_ONE, __ATOMIC_RELAXED);
  rt_violation("incref_dead", "IncRef on object %p (type %d) whose strong count is 0", (void*)o,
               o->type_index);
}

__attribute__((noinline, cold)) static void rt_decref_from_zero(TVMFFIObject* o) {
  if (!__atomic_load_n(&rt_checking_level, __ATOMIC_RELAXED)) return;
  __atomic_fetch_add(&o->combined_ref_count, RT_STRONG_ONE, __ATOMIC_RELAXED);
  rt_violation("decref_dead", "DecRef on object %p (type %d) whose strong count is 0", (void*)o,
               o->type_index);
}

TVM_FFI_DLL __attribute__((aligned(64))) int TVMFFIObjectIncRef(TVMFFIObjectHandle obj) {
  TVMFFIObject* o = (TVMFFIObject*)obj;
  if (RT_UNLIKELY(!o)) return 0;
  uint64_t before = __atomic_fetch_add(&o->combined_ref_count, RT_STRONG_ONE, __ATOMIC_RELAXED);
  if (RT_UNLIKELY((uint32_t)before == 0)) rt_incref_from_zero(o);
  return 0;
}

/* Last strong and last weak reference at once: one deleter call. */
static inline __attribute__((always_inline)) void rt_delete_both(TVMFFIObject* o) {
  void (*deleter)(void*, int) = o->deleter;
  if (deleter == rt_object_plain_deleter) {
    rt_object_free_nonnull(o); /* what that deleter does, without the indirect call */
  } else if (deleter) {
    deleter(o, kTVMFFIObjectDeleterFlagBitMaskBoth);
  }
}

/* The strong count was at most 1 before the decrement (`before`): run the
 * deleter(s), or report a DecRef of a dead object. Kept out of line so the
 * common DecRef (other references remain) needs no stack frame. */
__attribute__((noinline)) static int rt_decref_last(TVMFFIObject* o, uint64_t before) {
  if (RT_LIKELY(before == RT_BOTH_ONE)) {
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    rt_delete_both(o);
    return 0;
  }
  if (RT_UNLIKELY((uint32_t)before == 0)) {
    rt_decref_from_zero(o);
    return 0;
  }
  __atomic_thread_fence(__ATOMIC_ACQUIRE);
  if (o->deleter) o->deleter(o, kTVMFFIObjectDeleterFlagBitMaskStrong);
  if (__atomic_fetch_sub(&o->combined_ref_count, RT_WEAK_ONE, __ATOMIC_ACQ_REL) == RT_WEAK_ONE) {
    if (o->deleter) o->deleter(o, kTVMFFIObjectDeleterFlagBitMaskWeak);
  }
  return 0;
}

TVM_FFI_DLL __attribute__((aligned(64))) int TVMFFIObjectDecRef(TVMFFIObjectHandle obj) {
  TVMFFIObject* o = (TVMFFIObject*)obj;
  if (RT_UNLIKELY(!o)) return 0;
  uint64_t before = __atomic_fetch_sub(&o->combined_ref_count, RT_STRONG_ONE, __ATOMIC_RELEASE);
  if (RT_LIKELY((uint32_t)before > 1)) return 0;
  return rt_decref_last(o, before);
}
