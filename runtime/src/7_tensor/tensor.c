/* Tensors: DLPack import/export, unsafe views, environment allocation and
 * the default CPU allocator.
 *
 * A Tensor object is the 24-byte header followed by a DLTensor (this much
 * is the ABI: C++ code built against the official headers reads exactly
 * that). After it we keep what owns the memory and, when needed, inline
 * shape/stride storage. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

enum {
  TK_DLPACK = 1,   /* owner: DLManagedTensor*, its deleter runs at the end */
  TK_DLPACK_V = 2, /* owner: DLManagedTensorVersioned* */
  TK_VIEW = 3      /* owner: the source Tensor object (a reference) */
};

typedef struct {
  TVMFFIObject header;
  DLTensor dl;
  int32_t kind;
  int32_t reserved;
  void* owner;
  int64_t tail[]; /* strides (and shape for views) when we supply them */
} rt_tensor;

_Static_assert(offsetof(rt_tensor, dl) == sizeof(TVMFFIObject), "DLTensor follows the header");

static void tensor_deleter(void* self, int flags) {
  rt_tensor* t = (rt_tensor*)self;
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    void* owner = t->owner;
    t->owner = NULL;
    if (owner != NULL) {
      if (t->kind == TK_DLPACK) {
        DLManagedTensor* m = (DLManagedTensor*)owner;
        if (m->deleter) m->deleter(m);
      } else if (t->kind == TK_DLPACK_V) {
        DLManagedTensorVersioned* m = (DLManagedTensorVersioned*)owner;
        if (m->deleter) m->deleter(m);
      } else if (t->kind == TK_VIEW) {
        rt_decref(owner);
      }
    }
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

/* Row-major compact strides; unsigned arithmetic so huge shapes wrap
 * instead of being undefined. */
static void fill_compact_strides(const int64_t* shape, int32_t ndim, int64_t* strides) {
  uint64_t acc = 1;
  for (int32_t i = ndim; i > 0; --i) {
    strides[i - 1] = (int64_t)acc;
    acc *= (uint64_t)shape[i - 1];
  }
}

/* Devices whose data pointer is a real address (alignment is checked on the
 * address; elsewhere only byte_offset counts). */
static int direct_address_device(DLDevice dev) {
  return dev.device_type <= kDLCUDAHost || dev.device_type == kDLCUDAManaged ||
         dev.device_type == kDLROCM || dev.device_type == kDLROCMHost;
}

static int is_aligned(const DLTensor* t, uint64_t alignment) {
  if (direct_address_device(t->device)) {
    return ((uintptr_t)t->data + t->byte_offset) % alignment == 0;
  }
  return t->byte_offset % alignment == 0;
}

static int is_contiguous(const DLTensor* t) {
  if (t->strides == NULL) return 1;
  for (int32_t i = 0; i < t->ndim; ++i) {
    if (t->shape[i] == 0) return 1; /* empty tensors are trivially contiguous */
  }
  uint64_t expected = 1;
  for (int32_t i = t->ndim; i > 0; --i) {
    int32_t k = i - 1;
    if (t->shape[k] == 1) continue; /* any stride is fine on a unit dimension */
    if ((uint64_t)t->strides[k] != expected) return 0;
    expected *= (uint64_t)t->shape[k];
  }
  return 1;
}

static int check_dltensor(const DLTensor* t, const char* who) {
  if (t->ndim < 0) return rt_raise("ValueError", "%s: negative ndim %d", who, (int)t->ndim);
  if (t->ndim > 0 && t->shape == NULL) {
    return rt_raise("ValueError", "%s: shape is NULL with ndim %d", who, (int)t->ndim);
  }
  return 0;
}

/* Wraps a managed tensor (either version) without checks. */
static int wrap_managed(const DLTensor* dl, int kind, void* managed, TVMFFIObjectHandle* out) {
  int need_strides = dl->strides == NULL && dl->ndim > 0;
  size_t extra = need_strides ? (size_t)dl->ndim * sizeof(int64_t) : 0;
  rt_tensor* t = (rt_tensor*)rt_object_alloc(sizeof(rt_tensor) + extra, kTVMFFITensor,
                                             tensor_deleter);
  if (t == NULL) return -1;
  t->dl = *dl;
  t->kind = kind;
  t->owner = managed;
  if (need_strides) {
    t->dl.strides = t->tail;
    fill_compact_strides(dl->shape, dl->ndim, t->tail);
  }
  *out = t;
  return 0;
}

static int import_checks(const DLTensor* dl, int32_t require_alignment, int32_t require_contiguous,
                         const char* who) {
  if (check_dltensor(dl, who) != 0) return -1;
  if (require_alignment < 0) {
    return rt_raise("ValueError", "%s: negative require_alignment %d", who, (int)require_alignment);
  }
  if (require_alignment > 0 && !is_aligned(dl, (uint64_t)require_alignment)) {
    return rt_raise("RuntimeError", "FromDLPack: Data is not aligned to %d bytes.",
                    (int)require_alignment);
  }
  if (require_contiguous && !is_contiguous(dl)) {
    return rt_raise("RuntimeError", "FromDLPack: Tensor is not contiguous.");
  }
  return 0;
}

int TVMFFITensorFromDLPack(DLManagedTensor* from, int32_t require_alignment,
                           int32_t require_contiguous, TVMFFIObjectHandle* out) {
  if (from == NULL || out == NULL) return rt_raise("ValueError", "TVMFFITensorFromDLPack: NULL argument");
  if (import_checks(&from->dl_tensor, require_alignment, require_contiguous,
                    "TVMFFITensorFromDLPack") != 0) {
    return -1;
  }
  return wrap_managed(&from->dl_tensor, TK_DLPACK, from, out);
}

int TVMFFITensorFromDLPackVersioned(DLManagedTensorVersioned* from, int32_t require_alignment,
                                    int32_t require_contiguous, TVMFFIObjectHandle* out) {
  if (from == NULL || out == NULL) {
    return rt_raise("ValueError", "TVMFFITensorFromDLPackVersioned: NULL argument");
  }
  if (import_checks(&from->dl_tensor, require_alignment, require_contiguous,
                    "TVMFFITensorFromDLPackVersioned") != 0) {
    return -1;
  }
  if (from->flags & DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED) {
    return rt_raise("RuntimeError", "Subbyte type padded is not yet supported");
  }
  return wrap_managed(&from->dl_tensor, TK_DLPACK_V, from, out);
}

static rt_tensor* as_tensor(TVMFFIObjectHandle h, const char* who) {
  if (h == NULL) {
    rt_raise("ValueError", "%s: NULL tensor", who);
    return NULL;
  }
  int32_t ti = ((TVMFFIObject*)h)->type_index;
  if (ti != kTVMFFITensor && !rt_type_is_instance(ti, kTVMFFITensor)) {
    size_t n = 0;
    const char* key = rt_type_key(ti, &n);
    rt_raise("TypeError", "%s: expected a Tensor but got `%.*s`", who, (int)n, key);
    return NULL;
  }
  return (rt_tensor*)h;
}

/* Deleters of the managed tensors we hand out: drop our reference. */
static void export_deleter(DLManagedTensor* self) {
  if (self == NULL) return;
  rt_decref(self->manager_ctx);
  free(self);
}
static void export_deleter_v(DLManagedTensorVersioned* self) {
  if (self == NULL) return;
  rt_decref(self->manager_ctx);
  free(self);
}

int TVMFFITensorToDLPack(TVMFFIObjectHandle from, DLManagedTensor** out) {
  rt_tensor* t = as_tensor(from, "TVMFFITensorToDLPack");
  if (t == NULL) return -1;
  DLManagedTensor* m = (DLManagedTensor*)calloc(1, sizeof(DLManagedTensor));
  if (m == NULL) return rt_raise("MemoryError", "TVMFFITensorToDLPack: out of memory");
  m->dl_tensor = t->dl;
  m->manager_ctx = t;
  m->deleter = export_deleter;
  rt_incref(t);
  *out = m;
  return 0;
}

int TVMFFITensorToDLPackVersioned(TVMFFIObjectHandle from, DLManagedTensorVersioned** out) {
  rt_tensor* t = as_tensor(from, "TVMFFITensorToDLPackVersioned");
  if (t == NULL) return -1;
  DLManagedTensorVersioned* m =
      (DLManagedTensorVersioned*)calloc(1, sizeof(DLManagedTensorVersioned));
  if (m == NULL) return rt_raise("MemoryError", "TVMFFITensorToDLPackVersioned: out of memory");
  m->version.major = DLPACK_MAJOR_VERSION;
  m->version.minor = DLPACK_MINOR_VERSION;
  m->dl_tensor = t->dl;
  m->manager_ctx = t;
  m->deleter = export_deleter_v;
  m->flags = 0;
  rt_incref(t);
  *out = m;
  return 0;
}

int TVMFFITensorCreateUnsafeView(TVMFFIObjectHandle source, const DLTensor* prototype,
                                 TVMFFIObjectHandle* out) {
  rt_tensor* src = as_tensor(source, "TVMFFITensorCreateUnsafeView");
  if (src == NULL) return -1;
  if (prototype == NULL || out == NULL) {
    return rt_raise("ValueError", "TVMFFITensorCreateUnsafeView: NULL argument");
  }
  if (check_dltensor(prototype, "TVMFFITensorCreateUnsafeView") != 0) return -1;
  size_t nd = (size_t)prototype->ndim;
  rt_tensor* t = (rt_tensor*)rt_object_alloc(sizeof(rt_tensor) + 2 * nd * sizeof(int64_t),
                                             kTVMFFITensor, tensor_deleter);
  if (t == NULL) return -1;
  t->dl = *prototype;
  t->dl.shape = t->tail;
  t->dl.strides = t->tail + nd;
  if (nd) memcpy(t->dl.shape, prototype->shape, nd * sizeof(int64_t));
  /* The reference requires strides; a compact prototype without them gets
   * compact strides instead of a failure. */
  if (prototype->strides != NULL) {
    if (nd) memcpy(t->dl.strides, prototype->strides, nd * sizeof(int64_t));
  } else {
    fill_compact_strides(t->dl.shape, prototype->ndim, t->dl.strides);
  }
  t->kind = TK_VIEW;
  t->owner = src;
  rt_incref(src);
  *out = t;
  return 0;
}

/* ------------------------------------------------------------------ */
/* the default CPU allocator                                          */
/* ------------------------------------------------------------------ */

typedef struct {
  DLManagedTensorVersioned managed;
  int64_t dims[]; /* shape then strides */
} cpu_block;

static void cpu_block_deleter(DLManagedTensorVersioned* self) {
  if (self == NULL) return;
  free(self->dl_tensor.data);
  free(self);
}

static int alloc_fail(void* error_ctx, void (*set_error)(void*, const char*, const char*),
                      const char* kind, const char* message) {
  if (set_error) set_error(error_ctx, kind, message);
  return -1;
}

int rt_cpu_tensor_alloc(DLTensor* prototype, DLManagedTensorVersioned** out, void* error_ctx,
                        void (*set_error)(void* error_ctx, const char* kind, const char* message)) {
  if (prototype == NULL || out == NULL) {
    return alloc_fail(error_ctx, set_error, "ValueError", "CPU tensor allocator: NULL argument");
  }
  *out = NULL;
  if (prototype->device.device_type != kDLCPU) {
    return alloc_fail(error_ctx, set_error, "RuntimeError",
                      "the default tensor allocator only allocates on CPU; install one with "
                      "TVMFFIEnvSetDLPackManagedTensorAllocator for other devices");
  }
  if (prototype->ndim < 0 || (prototype->ndim > 0 && prototype->shape == NULL)) {
    return alloc_fail(error_ctx, set_error, "ValueError", "CPU tensor allocator: bad ndim/shape");
  }
  int16_t lanes = (int16_t)prototype->dtype.lanes;
  if (lanes < 1) {
    return alloc_fail(error_ctx, set_error, "ValueError",
                      "CPU tensor allocator: scalable or zero-lane dtype has no fixed size");
  }
  /* bytes = ceil(numel * bits * lanes / 8), every step overflow-checked */
  uint64_t nbits = (uint64_t)prototype->dtype.bits * (uint64_t)lanes;
  for (int32_t i = 0; i < prototype->ndim; ++i) {
    int64_t d = prototype->shape[i];
    if (d < 0) {
      return alloc_fail(error_ctx, set_error, "ValueError", "CPU tensor allocator: negative dimension");
    }
    if (__builtin_mul_overflow(nbits, (uint64_t)d, &nbits)) {
      return alloc_fail(error_ctx, set_error, "ValueError", "CPU tensor allocator: size overflows");
    }
  }
  uint64_t nbytes = nbits / 8 + (nbits % 8 != 0);
  const uint64_t align = 64;
  if (nbytes > (uint64_t)SIZE_MAX - align) {
    return alloc_fail(error_ctx, set_error, "ValueError", "CPU tensor allocator: size overflows");
  }
  size_t padded = (size_t)((nbytes + align - 1) / align * align);
  if (padded == 0) padded = align; /* a real, aligned pointer even when empty */
  size_t nd = (size_t)prototype->ndim;
  cpu_block* b = (cpu_block*)calloc(1, sizeof(cpu_block) + 2 * nd * sizeof(int64_t));
  void* data = b ? aligned_alloc((size_t)align, padded) : NULL;
  if (data == NULL) {
    free(b);
    return alloc_fail(error_ctx, set_error, "MemoryError", "CPU tensor allocator: out of memory");
  }
  DLTensor* dl = &b->managed.dl_tensor;
  dl->data = data;
  dl->device = prototype->device;
  dl->ndim = prototype->ndim;
  dl->dtype = prototype->dtype;
  dl->shape = b->dims;
  dl->strides = b->dims + nd;
  dl->byte_offset = 0;
  if (nd) memcpy(dl->shape, prototype->shape, nd * sizeof(int64_t));
  fill_compact_strides(dl->shape, dl->ndim, dl->strides);
  b->managed.version.major = DLPACK_MAJOR_VERSION;
  b->managed.version.minor = DLPACK_MINOR_VERSION;
  b->managed.manager_ctx = NULL;
  b->managed.deleter = cpu_block_deleter;
  b->managed.flags = 0;
  *out = &b->managed;
  return 0;
}

/* ---- DLPack allocator: process-wide slot first, then this thread's,
 * then the built-in CPU allocator ---- */
static DLPackManagedTensorAllocator rt_global_allocator;
static __thread DLPackManagedTensorAllocator rt_tls_allocator;

TVM_FFI_DLL int TVMFFIEnvSetDLPackManagedTensorAllocator(
    DLPackManagedTensorAllocator allocator, int write_to_global_context,
    DLPackManagedTensorAllocator* opt_out_original_allocator) {
  if (opt_out_original_allocator) *opt_out_original_allocator = rt_tls_allocator;
  rt_tls_allocator = allocator;
  if (write_to_global_context)
    __atomic_store_n(&rt_global_allocator, allocator, __ATOMIC_RELEASE);
  return 0;
}

TVM_FFI_DLL DLPackManagedTensorAllocator TVMFFIEnvGetDLPackManagedTensorAllocator(void) {
  DLPackManagedTensorAllocator a = __atomic_load_n(&rt_global_allocator, __ATOMIC_ACQUIRE);
  if (a) return a;
  if (rt_tls_allocator) return rt_tls_allocator;
  return rt_cpu_tensor_alloc;
}

int TVMFFIEnvTensorAlloc(DLTensor* prototype, TVMFFIObjectHandle* out) {
  if (prototype == NULL || out == NULL) return rt_raise("ValueError", "TVMFFIEnvTensorAlloc: NULL argument");
  DLPackManagedTensorAllocator alloc = TVMFFIEnvGetDLPackManagedTensorAllocator();
  if (alloc == NULL) {
    return rt_raise("RuntimeError",
                    "TVMFFIEnvTensorAlloc: allocator is nullptr, likely because "
                    "TVMFFIEnvSetDLPackManagedTensorAllocator has not been called.");
  }
  DLManagedTensorVersioned* m = NULL;
  int rc = alloc(prototype, &m, NULL, rt_set_error_cb);
  if (rc != 0) {
    if (!tvmffi_rt_error_pending()) {
      rt_raise("RuntimeError", "TVMFFIEnvTensorAlloc: the allocator failed without an error");
    }
    return -1;
  }
  if (m == NULL) {
    return rt_raise("RuntimeError",
                    "TVMFFIEnvTensorAlloc: failed to allocate a tensor from the allocator");
  }
  if (wrap_managed(&m->dl_tensor, TK_DLPACK_V, m, out) != 0) {
    if (m->deleter) m->deleter(m);
    return -1;
  }
  return 0;
}
