/* Object allocation that raises: the rt_object_alloc* front-ends over
 * object.c's quiet allocator, TVMFFISetCustomAllocator and opaque objects. */
#include "internal.h"

static __attribute__((noinline, cold)) void* rt_alloc_failed(size_t total_size) {
  if (!tvmffi_rt_error_pending())
    rt_raise("MemoryError", "allocator returned NULL for %zu bytes", total_size);
  return NULL;
}

void* rt_object_alloc_uninit(size_t total_size, int32_t type_index,
                             void (*deleter)(void*, int)) {
  void* body = rt_object_alloc_uninit_quiet(total_size, type_index, deleter);
  return RT_LIKELY(body != NULL) ? body : rt_alloc_failed(total_size);
}

void* rt_object_alloc(size_t total_size, int32_t type_index, void (*deleter)(void*, int)) {
  void* body = rt_object_alloc_quiet(total_size, type_index, deleter);
  return RT_LIKELY(body != NULL) ? body : rt_alloc_failed(total_size);
}

void* rt_object_alloc_aligned(size_t total_size, size_t alignment, int32_t type_index,
                              void (*deleter)(void*, int)) {
  if (alignment & (alignment - 1)) {
    rt_raise("ValueError", "object alignment must be a power of two");
    return NULL;
  }
  void* body = rt_object_alloc_aligned_quiet(total_size, alignment, type_index, deleter);
  return RT_LIKELY(body != NULL) ? body : rt_alloc_failed(total_size);
}

TVM_FFI_DLL int TVMFFISetCustomAllocator(TVMFFICustomAllocator* allocator) {
  if (allocator && !allocator->allocate)
    return rt_raise("ValueError", "custom allocator has no allocate callback");
  rt_object_set_allocator(allocator);
  return 0;
}

/* ---- opaque objects ---- */
typedef struct {
  TVMFFIObject header;
  TVMFFIOpaqueObjectCell cell;
  void (*deleter)(void* handle);
} rt_opaque_obj;

static void rt_opaque_deleter(void* self, int flags) {
  rt_opaque_obj* o = (rt_opaque_obj*)self;
  if ((flags & kTVMFFIObjectDeleterFlagBitMaskStrong) && o->deleter) o->deleter(o->cell.handle);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

TVM_FFI_DLL int TVMFFIObjectCreateOpaque(void* handle, int32_t type_index,
                                         void (*deleter)(void* handle), TVMFFIObjectHandle* out) {
  if (!out) return rt_raise("ValueError", "TVMFFIObjectCreateOpaque: out is NULL");
  if (type_index < kTVMFFIStaticObjectBegin)
    return rt_raise("ValueError", "TVMFFIObjectCreateOpaque: type index %d is not an object type",
                    (int)type_index);
  rt_opaque_obj* o = (rt_opaque_obj*)rt_object_alloc(sizeof(rt_opaque_obj), type_index,
                                                      rt_opaque_deleter);
  if (!o) return -1;
  o->cell.handle = handle;
  o->deleter = deleter;
  *out = o;
  return 0;
}

/* ---- sentinels ---- */
static void* rt_sentinels[2];
static pthread_once_t rt_sentinels_once = PTHREAD_ONCE_INIT;

static void rt_sentinels_init(void) {
  for (int i = 0; i < 2; ++i)
    rt_sentinels[i] = rt_object_alloc_quiet(sizeof(TVMFFIObject), kTVMFFIObject,
                                            rt_object_plain_deleter);
}

static int rt_sentinel(int which, TVMFFIAny* out) {
  pthread_once(&rt_sentinels_once, rt_sentinels_init);
  void* o = rt_sentinels[which];
  if (o == NULL) return rt_raise("MemoryError", "out of memory");
  rt_incref(o);
  rt_any_set_obj(out, o);
  return 0;
}

int rt_missing_object(TVMFFIAny* out) { return rt_sentinel(0, out); }
int rt_kwargs_object(TVMFFIAny* out) { return rt_sentinel(1, out); }

/* made at load, so they never show up as a change of the live count */
RT_INIT(rt_sentinels_at_load) { pthread_once(&rt_sentinels_once, rt_sentinels_init); }
