/* Internal interface shared by the runtime's source files (not installed).
 *
 * The sources are arranged in layers, one directory each, numbered in
 * dependency order (see runtime/src/README.md): a file calls only functions
 * of its own layer or of lower ones, and no two files call each other
 * (tests/test_runtime_layout.py checks both).
 *
 * Conventions:
 *  - Functions returning int return 0 on success and -1 with an error raised
 *    in the calling thread (rt_raise) on failure.
 *  - Every object made here starts with TVMFFIObject, refcount "both one"
 *    (strong 1, weak 1), and is preceded by a TVMFFIObjectAllocHeader.
 *  - Start-up: files register their globals from a function marked
 *    RT_INIT; the registry and type table are usable at any time (lazily
 *    initialised), so constructor order between files does not matter. */
#ifndef TVMFFI_RT_INTERNAL_H_
#define TVMFFI_RT_INTERNAL_H_

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvmffi/rt.h>

#define RT_HIDDEN __attribute__((visibility("hidden")))
#define RT_LIKELY(x) __builtin_expect(!!(x), 1)
#define RT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define RT_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Run `fn` once when the library is loaded (after the core, whose own
 * constructor has priority 101). Usage: RT_INIT(container_init) { ... } */
#define RT_INIT(fn) __attribute__((constructor(200))) static void fn(void)

#define RT_STRONG_ONE ((uint64_t)1)
#define RT_WEAK_ONE ((uint64_t)1 << 32)
#define RT_BOTH_ONE (RT_STRONG_ONE | RT_WEAK_ONE)

/* ------------------------------------------------------------------ */
/* objects (1_object/object.c: quiet; 2_error/alloc.c: raising)        */
/* ------------------------------------------------------------------ */
/* The quiet allocator: NULL without an error on failure (object.c). */
RT_HIDDEN void* rt_object_alloc_quiet(size_t total_size, int32_t type_index,
                                      void (*deleter)(void* self, int flags));
RT_HIDDEN void* rt_object_alloc_aligned_quiet(size_t total_size, size_t alignment,
                                              int32_t type_index,
                                              void (*deleter)(void* self, int flags));
/* Installs `allocator` (NULL: the built-in one) without checking it. */
RT_HIDDEN void rt_object_set_allocator(TVMFFICustomAllocator* allocator);


/* Zeroed storage for an object of `total_size` bytes (header included),
 * 16-byte aligned, through the current TVMFFICustomAllocator; header set:
 * count = strong 1 + weak 1, type_index, deleter. Counted as live.
 * Returns NULL with an error raised on failure. */
RT_HIDDEN void* rt_object_alloc(size_t total_size, int32_t type_index,
                                void (*deleter)(void* self, int flags));
/* Zeroed, with the body aligned to `alignment` (a power of two; 64 keeps a
 * small hot object within one cache line). */
RT_HIDDEN void* rt_object_alloc_aligned(size_t total_size, size_t alignment, int32_t type_index,
                                        void (*deleter)(void* self, int flags));
/* Same as rt_object_alloc without zeroing the bytes after the header (the caller fills them). */
RT_HIDDEN void* rt_object_alloc_uninit(size_t total_size, int32_t type_index,
                                       void (*deleter)(void* self, int flags));
/* Releases the storage of an object made by rt_object_alloc (through the
 * TVMFFIObjectAllocHeader::delete_space before it). Call it from your
 * deleter when flags contain kTVMFFIObjectDeleterFlagBitMaskWeak. */
RT_HIDDEN void rt_object_free(void* obj);
/* The two sentinel objects (plain ffi.Object, made once, never freed):
 * "missing" (ffi.GetInvalidObject, *GetItemOrMissing) and "kwargs"
 * (ffi.GetKwargsObject). *out receives a new reference (alloc.c). */
RT_HIDDEN int rt_missing_object(TVMFFIAny* out);
RT_HIDDEN int rt_kwargs_object(TVMFFIAny* out);
/* A ready-made deleter for objects with nothing to release but storage. */
RT_HIDDEN void rt_object_plain_deleter(void* self, int flags);

static inline void rt_incref(void* obj) { (void)TVMFFIObjectIncRef(obj); }
static inline void rt_decref(void* obj) {
  if (obj) (void)TVMFFIObjectDecRef(obj);
}
static inline void* rt_cell(void* obj) { return (char*)obj + sizeof(TVMFFIObject); }

/* ------------------------------------------------------------------ */
/* Any helpers                                                         */
/* ------------------------------------------------------------------ */
static inline void rt_any_set_none(TVMFFIAny* a) {
  a->type_index = kTVMFFINone;
  a->zero_padding = 0;
  a->v_int64 = 0;
}
static inline void rt_any_set_int(TVMFFIAny* a, int64_t v) {
  a->type_index = kTVMFFIInt;
  a->zero_padding = 0;
  a->v_int64 = v;
}
static inline void rt_any_set_bool(TVMFFIAny* a, int v) {
  a->type_index = kTVMFFIBool;
  a->zero_padding = 0;
  a->v_int64 = v ? 1 : 0;
}
/* A NUL-terminated string as a byte array (no copy). */
static inline TVMFFIByteArray rt_ba(const char* s) {
  TVMFFIByteArray b = {s, __builtin_strlen(s)};
  return b;
}
/* Takes ownership of `obj` (no IncRef). */
static inline void rt_any_set_obj(TVMFFIAny* a, void* obj) {
  a->type_index = ((TVMFFIObject*)obj)->type_index;
  a->zero_padding = 0;
  a->v_obj = (TVMFFIObject*)obj;
}
/* Drops the reference held by an owned Any (if any) and sets it to None. */
static inline void rt_any_release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj) TVMFFIObjectDecRef(a->v_obj);
  rt_any_set_none(a);
}
/* Adds a reference for a copy of an owned Any (copy = *a afterwards). */
static inline void rt_any_retain(const TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj) TVMFFIObjectIncRef(a->v_obj);
}
/* If `a` (owned or view) is string-like (small/heap str or bytes, raw str,
 * byte-array pointer) store its content and return 1; else 0. With
 * want_bytes == 0 only str forms match, == 1 only bytes forms, -1 both. */
RT_HIDDEN int rt_any_get_bytes(const TVMFFIAny* a, int want_bytes, TVMFFIByteArray* out);

/* ------------------------------------------------------------------ */
/* strings (string.c)                                                  */
/* ------------------------------------------------------------------ */
/* Owned String (small when <= 7 bytes, else heap) / Bytes in *out. */
RT_HIDDEN int rt_string_to_any(const char* data, size_t size, TVMFFIAny* out);
RT_HIDDEN int rt_bytes_to_any(const char* data, size_t size, TVMFFIAny* out);
/* Always a heap String object (new reference). NULL + error on failure. */
RT_HIDDEN void* rt_string_obj_new(const char* data, size_t size);

/* A growable byte buffer for building messages and JSON. */
typedef struct {
  char* data;
  size_t size;
  size_t cap;
  int failed; /* set on allocation failure; later appends are ignored */
} rt_sbuf;
RT_HIDDEN void rt_sb_init(rt_sbuf* b);
RT_HIDDEN void rt_sb_free(rt_sbuf* b);
RT_HIDDEN void rt_sb_append(rt_sbuf* b, const char* data, size_t n);
RT_HIDDEN void rt_sb_puts(rt_sbuf* b, const char* s);
RT_HIDDEN void rt_sb_printf(rt_sbuf* b, const char* fmt, ...) RT_PRINTF(2, 3);
/* Appends a JSON string literal (quotes and escapes) of data[0:n]. */
RT_HIDDEN void rt_sb_json_str(rt_sbuf* b, const char* data, size_t n);
/* Moves the content into an owned String Any; frees the buffer. */
RT_HIDDEN int rt_sb_to_string_any(rt_sbuf* b, TVMFFIAny* out);

/* ------------------------------------------------------------------ */
/* errors (error.c)                                                    */
/* ------------------------------------------------------------------ */
/* Raises an error of `kind` with a printf-formatted message; returns -1. */
RT_HIDDEN int rt_raise(const char* kind, const char* fmt, ...) RT_PRINTF(2, 3);
/* Same for a deleter/allocator callback's SetError(ctx, kind, message). */
RT_HIDDEN void rt_set_error_cb(void* error_ctx, const char* kind, const char* message);

/* ------------------------------------------------------------------ */
/* functions and global registry (function.c)                         */
/* ------------------------------------------------------------------ */
/* Registers a global function implemented in C (handle passed = NULL).
 * Replaces an existing one. Returns 0/-1. */
RT_HIDDEN int rt_register_global(const char* name, TVMFFISafeCallType f);
/* Same with a handle passed as the first safe-call argument. */
RT_HIDDEN int rt_register_global_with_handle(const char* name, TVMFFISafeCallType f, void* handle);
/* New reference to a global function or NULL (no error raised). */
RT_HIDDEN void* rt_get_global(const char* name);
/* Names of all globals, sorted; caller frees each name and the array. */
RT_HIDDEN int rt_global_names(char*** out_names, size_t* out_count);
/* Copy of a global's metadata text ("" when it has none) in *out (free
 * it); returns 1, or 0 when there is no such global, -1 on error. */
RT_HIDDEN int rt_global_metadata(const char* name, size_t len, char** out);
/* Removes a global; returns 1 if it existed. */
RT_HIDDEN int rt_remove_global(const char* name, size_t len);

/* ------------------------------------------------------------------ */
/* types (type.c)                                                      */
/* ------------------------------------------------------------------ */
/* 1 if `type_index` is `ancestor` or derives from it. */
RT_HIDDEN int rt_type_is_instance(int32_t type_index, int32_t ancestor);
/* Type key for messages ("<unknown:N>" style text for unknown indices). */
RT_HIDDEN const char* rt_type_key(int32_t type_index, size_t* len);
/* Sorted list of registered type keys; caller frees like rt_global_names. */
RT_HIDDEN int rt_type_keys(char*** out_keys, size_t* out_count);

/* ------------------------------------------------------------------ */
/* environment (env.c)                                                 */
/* ------------------------------------------------------------------ */
/* Symbols given to TVMFFIEnvRegisterCAPI / ModRegisterContextSymbol /
 * ModRegisterSystemLibSymbol; NULL when unknown. */
RT_HIDDEN void* rt_env_capi_lookup(const char* name);
RT_HIDDEN void* rt_env_context_symbol_lookup(const char* name);
RT_HIDDEN void* rt_env_system_lib_symbol_lookup(const char* name);
/* Calls fn(name, symbol, ctx) for every registered context symbol /
 * system-lib symbol (under the env lock: fn must not register symbols). */
RT_HIDDEN void rt_env_context_symbols_foreach(void (*fn)(const char* name, void* sym, void* ctx),
                                              void* ctx);
RT_HIDDEN void rt_env_system_lib_symbols_foreach(
    void (*fn)(const char* name, void* sym, void* ctx), void* ctx);

/* Registers a native C function pointer (an opaque-pointer value) in the
 * type attribute column `column` for `type_index` (4_type/type.c): the
 * __any_hash__/__any_equal__ and __s_*__ hooks are read this way. */
RT_HIDDEN int rt_type_set_native_attr(int32_t type_index, const char* column, void* fn);

/* ------------------------------------------------------------------ */
/* instrumentation (1_object/counters.c; reports in report.c)          */
/* ------------------------------------------------------------------ */
/* Per-thread counter blocks (see counters.c): only the owning thread
 * writes its block, with plain relaxed load+store (no locked instruction).
 * There is no running total: readers add up the slots. */
#define RT_TYPE_SLOTS 1024      /* per-thread slots for type indices below this */
#define RT_OVERFLOW_SLOTS 15360 /* shared atomic slots for [1024, 16384) */
typedef struct rt_counter_block {
  int64_t live_other; /* type indices outside [0, 1024 + 15360) */
  int64_t live[RT_TYPE_SLOTS];
  struct rt_counter_block* next_all;  /* every block ever made */
  struct rt_counter_block* next_free; /* blocks of exited threads */
} rt_counter_block;
extern RT_HIDDEN __thread rt_counter_block* rt_tls_counters
    __attribute__((tls_model("initial-exec")));
extern RT_HIDDEN int64_t rt_overflow_live[RT_OVERFLOW_SLOTS];
RT_HIDDEN rt_counter_block* rt_counter_block_slow(void);
/* Counts `d` for `type_index` when the fast path cannot: the thread has no
 * block yet, or the index is at or above RT_TYPE_SLOTS or negative. */
RT_HIDDEN void rt_count_slow(int32_t type_index, int64_t d);

static inline void rt_bump(int64_t* p, int64_t d) {
  __atomic_store_n(p, __atomic_load_n(p, __ATOMIC_RELAXED) + d, __ATOMIC_RELAXED);
}
static inline void rt_count(int32_t type_index, int64_t d) {
  rt_counter_block* b = rt_tls_counters;
  if (RT_LIKELY(b != NULL && (uint32_t)type_index < RT_TYPE_SLOTS))
    rt_bump(&b->live[type_index], d);
  else
    rt_count_slow(type_index, d);
}
static inline void rt_count_alloc(int32_t type_index) { rt_count(type_index, 1); }
static inline void rt_count_free(int32_t type_index) { rt_count(type_index, -1); }
/* Checking level (tvmffi_rt_set_checking); read on hot paths. */
extern RT_HIDDEN int rt_checking_level;
/* Records a misuse when checking is on. */
RT_HIDDEN void rt_violation(const char* kind, const char* fmt, ...) RT_PRINTF(2, 3);
/* Calls fn for each kept record, oldest first, under the record lock. */
RT_HIDDEN void rt_violations_snapshot(void (*fn)(const char* kind, const char* detail, void* ctx),
                                      void* ctx);

/* ------------------------------------------------------------------ */
/* the quiet allocator's fast path, inlined into its callers           */
/* (1_object/object.c owns the state)                                  */
/* ------------------------------------------------------------------ */
/* Each block of the built-in allocator is [raw pointer][alloc header][body];
 * raw is set only in over-aligned blocks (object.c). */
typedef struct {
  void* raw;
  TVMFFIObjectAllocHeader hdr;
} rt_prefix;
extern RT_HIDDEN TVMFFICustomAllocator rt_default_allocator;
extern RT_HIDDEN TVMFFICustomAllocator* rt_allocator;
RT_HIDDEN void rt_default_delete_space(void* body);

/* Small blocks: objects whose malloc block (prefix included) fits in
 * RT_SMALL_BLOCK bytes all get a block of exactly that size, and freed ones
 * are kept on a per-thread list (linked through the prefix's raw field, up
 * to RT_SMALL_KEEP of them) for the next allocation on that thread, instead
 * of a free()+malloc() round trip. A block may be freed on any thread. The
 * list is released at thread exit (counters.c); sanitizer builds skip it so
 * every object keeps its own malloc block. */
#define RT_SMALL_BLOCK 128
#define RT_SMALL_KEEP 64
#if defined(__SANITIZE_ADDRESS__)
#define RT_SMALL_CACHE 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer)
#define RT_SMALL_CACHE 0
#endif
#endif
#ifndef RT_SMALL_CACHE
#define RT_SMALL_CACHE 1
#endif
typedef struct {
  void* head;     /* first kept block (its rt_prefix) */
  uint32_t count; /* blocks kept; RT_SMALL_KEEP once the thread has exited */
} rt_small_cache;
extern RT_HIDDEN __thread rt_small_cache rt_tls_small __attribute__((tls_model("initial-exec")));
/* delete_space of small blocks: keeps the block for this thread or frees it. */
RT_HIDDEN void rt_small_delete_space(void* body);

/* Storage for an object with only its header set (NULL, no error, on
 * failure); the bytes after the header are not cleared. */
static inline void* rt_object_alloc_uninit_quiet(size_t total_size, int32_t type_index,
                                                 void (*deleter)(void* self, int flags)) {
  if (total_size < sizeof(TVMFFIObject)) total_size = sizeof(TVMFFIObject);
  TVMFFICustomAllocator* a = __atomic_load_n(&rt_allocator, __ATOMIC_ACQUIRE);
  void* body;
  if (RT_LIKELY(a == &rt_default_allocator)) {
    /* the common case without the indirect call */
    rt_prefix* p;
    if (RT_SMALL_CACHE && total_size <= RT_SMALL_BLOCK - sizeof(rt_prefix)) {
      rt_small_cache* c = &rt_tls_small;
      p = (rt_prefix*)c->head;
      if (p) {
        c->head = p->raw;
        c->count--;
      } else {
        p = (rt_prefix*)malloc(RT_SMALL_BLOCK);
      }
      if (p) p->hdr.delete_space = rt_small_delete_space;
    } else {
      p = (rt_prefix*)malloc(sizeof(rt_prefix) + total_size);
      if (p) p->hdr.delete_space = rt_default_delete_space;
    }
    body = p ? (void*)(p + 1) : NULL;
  } else {
    body = a->allocate(total_size, 16, type_index, a->context);
  }
  if (RT_UNLIKELY(!body)) return NULL;
  TVMFFIObject* o = (TVMFFIObject*)body;
  o->combined_ref_count = RT_BOTH_ONE;
  o->type_index = type_index;
  o->__padding = 0;
  o->deleter = deleter;
  rt_count_alloc(type_index);
  return body;
}

/* ------------------------------------------------------------------ */
/* tensors and containers                                              */
/* ------------------------------------------------------------------ */
/* The default CPU DLPackManagedTensorAllocator (tensor.c). */
RT_HIDDEN int rt_cpu_tensor_alloc(DLTensor* prototype, DLManagedTensorVersioned** out,
                                  void* error_ctx,
                                  void (*set_error)(void* error_ctx, const char* kind,
                                                    const char* message));
/* New Array holding copies (retained) of items[0:n], as an owned Any. */
RT_HIDDEN int rt_array_from_anys(const TVMFFIAny* items, int64_t n, TVMFFIAny* out);

#endif /* TVMFFI_RT_INTERNAL_H_ */
