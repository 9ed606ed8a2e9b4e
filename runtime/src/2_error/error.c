/* Errors: Error objects, the per-thread raised error, and a backtrace that
 * costs nothing at raise time (no unwinding: only what the caller names). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* Header, cell, then an owned heap backtrace once it was updated, then
 * kind, message and the initial backtrace, each NUL-terminated, in the same
 * block. */
typedef struct {
  TVMFFIObject header;
  TVMFFIErrorCell cell;
  char* bt_heap;
} rt_error_obj;

/* The raised error of this thread (an owned reference) or NULL. */
static __thread TVMFFIObject* rt_tls_raised __attribute__((tls_model("initial-exec")));

/* Returned when even an Error object cannot be allocated: immortal (its
 * count never reaches zero) and shared by all threads. */
static void rt_error_update_backtrace(TVMFFIObjectHandle self, const TVMFFIByteArray* bt,
                                      int32_t mode);
static rt_error_obj rt_oom_error = {
    .header = {.combined_ref_count = RT_BOTH_ONE, .type_index = kTVMFFIError},
    .cell = {.kind = {"MemoryError", 11},
             .message = {"out of memory while creating an error", 37},
             .backtrace = {"", 0},
             .update_backtrace = rt_error_update_backtrace},
};

static void rt_error_update_backtrace(TVMFFIObjectHandle self, const TVMFFIByteArray* bt,
                                      int32_t mode) {
  rt_error_obj* e = (rt_error_obj*)self;
  if (e == &rt_oom_error || !bt) return;
  size_t keep = mode == kTVMFFIBacktraceUpdateModeAppend ? e->cell.backtrace.size : 0;
  char* p = (char*)malloc(keep + bt->size + 1);
  if (!p) return; /* the old backtrace stays: better than none */
  if (keep) memcpy(p, e->cell.backtrace.data, keep);
  if (bt->size) memcpy(p + keep, bt->data, bt->size);
  p[keep + bt->size] = '\0';
  free(e->bt_heap);
  e->bt_heap = p;
  e->cell.backtrace.data = p;
  e->cell.backtrace.size = keep + bt->size;
}

static void rt_error_deleter(void* self, int flags) {
  rt_error_obj* e = (rt_error_obj*)self;
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    rt_decref(e->cell.cause_chain);
    rt_decref(e->cell.extra_context);
    free(e->bt_heap);
    e->cell.cause_chain = e->cell.extra_context = NULL;
    e->bt_heap = NULL;
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

static TVMFFIObject* rt_oom(void) {
  __atomic_fetch_add(&rt_oom_error.header.combined_ref_count, RT_STRONG_ONE,
                     __ATOMIC_RELAXED);
  return &rt_oom_error.header;
}

static int rt_error_new(const char* kind, size_t nk, const char* msg, size_t nm, const char* bt,
                        size_t nb, TVMFFIObjectHandle cause, TVMFFIObjectHandle extra,
                        TVMFFIObjectHandle* out) {
  static __thread int depth; /* an allocator that raises must not recurse forever */
  if (depth) return -1;
  depth = 1;
  rt_error_obj* e = (rt_error_obj*)rt_object_alloc_quiet(sizeof(rt_error_obj) + nk + nm + nb + 3,
                                                   kTVMFFIError, rt_error_deleter);
  depth = 0;
  if (!e) return -1;
  char* p = (char*)(e + 1);
  e->cell.kind.data = p;
  e->cell.kind.size = nk;
  if (nk) memcpy(p, kind, nk);
  p[nk] = '\0';
  p += nk + 1;
  e->cell.message.data = p;
  e->cell.message.size = nm;
  if (nm) memcpy(p, msg, nm);
  p[nm] = '\0';
  p += nm + 1;
  e->cell.backtrace.data = p;
  e->cell.backtrace.size = nb;
  if (nb) memcpy(p, bt, nb);
  p[nb] = '\0';
  e->cell.update_backtrace = rt_error_update_backtrace;
  if (cause) TVMFFIObjectIncRef(cause);
  if (extra) TVMFFIObjectIncRef(extra);
  e->cell.cause_chain = cause;
  e->cell.extra_context = extra;
  *out = e;
  return 0;
}

#define RT_BA(x) ((x) ? (x)->data : NULL), ((x) ? (x)->size : 0)

TVM_FFI_DLL int TVMFFIErrorCreate(const TVMFFIByteArray* kind, const TVMFFIByteArray* message,
                                  const TVMFFIByteArray* backtrace, TVMFFIObjectHandle* out) {
  if (!out) return -1;
  return rt_error_new(RT_BA(kind), RT_BA(message), RT_BA(backtrace), NULL, NULL, out);
}

TVM_FFI_DLL int TVMFFIErrorCreateWithCauseAndExtraContext(
    const TVMFFIByteArray* kind, const TVMFFIByteArray* message, const TVMFFIByteArray* backtrace,
    TVMFFIObjectHandle cause_chain, TVMFFIObjectHandle extra_context, TVMFFIObjectHandle* out) {
  if (!out) return -1;
  return rt_error_new(RT_BA(kind), RT_BA(message), RT_BA(backtrace), cause_chain, extra_context,
                      out);
}

/* Takes ownership of `err`. */
static void rt_set_raised_owned(TVMFFIObject* err) {
  TVMFFIObject* old = rt_tls_raised;
  rt_tls_raised = err;
  if (old) TVMFFIObjectDecRef(old);
}

TVM_FFI_DLL void TVMFFIErrorSetRaised(TVMFFIObjectHandle error) {
  if (error) TVMFFIObjectIncRef(error);
  rt_set_raised_owned((TVMFFIObject*)error);
}

TVM_FFI_DLL void TVMFFIErrorMoveFromRaised(TVMFFIObjectHandle* result) {
  TVMFFIObject* e = rt_tls_raised;
  rt_tls_raised = NULL;
  if (result) {
    *result = e;
  } else if (e) {
    TVMFFIObjectDecRef(e);
  }
}

TVM_FFI_DLL int tvmffi_rt_error_pending(void) { return rt_tls_raised != NULL; }

static void rt_raise_bytes(const char* kind, const char* msg, size_t nm) {
  TVMFFIObjectHandle e = NULL;
  if (!kind) kind = "RuntimeError";
  if (rt_error_new(kind, strlen(kind), msg, nm, NULL, 0, NULL, NULL, &e) != 0) e = rt_oom();
  rt_set_raised_owned((TVMFFIObject*)e);
}

TVM_FFI_DLL void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message) {
  rt_raise_bytes(kind, message ? message : "", message ? strlen(message) : 0);
}

TVM_FFI_DLL void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** message_parts,
                                                   int32_t num_parts) {
  size_t total = 0;
  for (int32_t i = 0; message_parts && i < num_parts; ++i)
    if (message_parts[i]) total += strlen(message_parts[i]);
  char small[512];
  char* buf = total < sizeof(small) ? small : (char*)malloc(total + 1);
  if (!buf) {
    rt_set_raised_owned(rt_oom());
    return;
  }
  size_t pos = 0;
  for (int32_t i = 0; message_parts && i < num_parts; ++i) {
    if (!message_parts[i]) continue;
    size_t n = strlen(message_parts[i]);
    memcpy(buf + pos, message_parts[i], n);
    pos += n;
  }
  buf[pos] = '\0';
  rt_raise_bytes(kind, buf, pos);
  if (buf != small) free(buf);
}

int rt_raise(const char* kind, const char* fmt, ...) {
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof(small), fmt, ap);
  va_end(ap);
  if (n < 0) n = 0;
  if ((size_t)n < sizeof(small)) {
    rt_raise_bytes(kind, small, (size_t)n);
    return -1;
  }
  char* big = (char*)malloc((size_t)n + 1);
  if (!big) {
    rt_raise_bytes(kind, small, sizeof(small) - 1); /* truncated but still informative */
    return -1;
  }
  va_start(ap, fmt);
  vsnprintf(big, (size_t)n + 1, fmt, ap);
  va_end(ap);
  rt_raise_bytes(kind, big, (size_t)n);
  free(big);
  return -1;
}

void rt_set_error_cb(void* error_ctx, const char* kind, const char* message) {
  (void)error_ctx;
  TVMFFIErrorSetRaisedFromCStr(kind, message);
}

/* One Python-style frame line for the location the caller names, in a
 * per-thread heap buffer (valid until this thread's next call). The buffer
 * lives behind a pointer so the runtime's static TLS stays small. */
#define RT_BT_CAP 1024
typedef struct {
  TVMFFIByteArray out;
  char buf[RT_BT_CAP];
} rt_bt_scratch;
static __thread rt_bt_scratch* rt_bt;
static pthread_key_t rt_bt_key;
static pthread_once_t rt_bt_once = PTHREAD_ONCE_INIT;
static void rt_bt_key_init(void) { (void)pthread_key_create(&rt_bt_key, free); }

TVM_FFI_DLL const TVMFFIByteArray* TVMFFIBacktrace(const char* filename, int lineno,
                                                   const char* func, int cross_ffi_boundary) {
  static const TVMFFIByteArray empty = {"", 0};
  (void)cross_ffi_boundary;
  if (!rt_bt) {
    pthread_once(&rt_bt_once, rt_bt_key_init);
    rt_bt = (rt_bt_scratch*)malloc(sizeof(rt_bt_scratch));
    if (!rt_bt) return &empty;
    (void)pthread_setspecific(rt_bt_key, rt_bt);
  }
  int n = 0;
  if (filename || func) {
    n = snprintf(rt_bt->buf, RT_BT_CAP, "  File \"%s\", line %d, in %s\n",
                 filename ? filename : "<unknown>", lineno, func ? func : "<unknown>");
    if (n < 0) n = 0;
    if (n >= RT_BT_CAP) n = RT_BT_CAP - 1;
  }
  rt_bt->buf[n] = '\0';
  rt_bt->out.data = rt_bt->buf;
  rt_bt->out.size = (size_t)n;
  return &rt_bt->out;
}
