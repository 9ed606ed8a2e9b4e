/* Environment: per-thread streams, the DLPack tensor allocator slot,
 * signals, C API / context / system-lib symbol tables, init-once helpers
 * and the version. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

TVM_FFI_DLL void TVMFFIGetVersion(TVMFFIVersion* out_version) {
  if (!out_version) return;
  out_version->major = TVM_FFI_VERSION_MAJOR;
  out_version->minor = TVM_FFI_VERSION_MINOR;
  out_version->patch = TVM_FFI_VERSION_PATCH;
}

/* ---- streams: a small per-thread list of (device, stream) ----
 * Kept on the heap behind one thread-local pointer: the runtime's TLS
 * segment must stay tiny, because a library dlopen'ed at run time (as
 * Python loads us) gets static TLS only from a small surplus. */
#define RT_MAX_STREAMS 64
typedef struct {
  int32_t device_type;
  int32_t device_id;
  TVMFFIStreamHandle stream;
} rt_stream_slot;
typedef struct {
  int n;
  rt_stream_slot slot[RT_MAX_STREAMS];
} rt_stream_table;
static __thread rt_stream_table* rt_streams;
static pthread_key_t rt_streams_key;
static pthread_once_t rt_streams_once = PTHREAD_ONCE_INIT;

static void rt_streams_key_init(void) { (void)pthread_key_create(&rt_streams_key, free); }

static rt_stream_table* rt_stream_table_get(int create) {
  if (rt_streams || !create) return rt_streams;
  pthread_once(&rt_streams_once, rt_streams_key_init);
  rt_stream_table* t = (rt_stream_table*)calloc(1, sizeof(rt_stream_table));
  if (!t) return NULL;
  /* the key's destructor frees the table when the thread exits */
  (void)pthread_setspecific(rt_streams_key, t);
  rt_streams = t;
  return t;
}

TVM_FFI_DLL int TVMFFIEnvSetStream(int32_t device_type, int32_t device_id,
                                   TVMFFIStreamHandle stream,
                                   TVMFFIStreamHandle* opt_out_original_stream) {
  rt_stream_table* t = rt_stream_table_get(stream != NULL);
  for (int i = 0; t && i < t->n; ++i) {
    if (t->slot[i].device_type == device_type && t->slot[i].device_id == device_id) {
      if (opt_out_original_stream) *opt_out_original_stream = t->slot[i].stream;
      t->slot[i].stream = stream;
      return 0;
    }
  }
  if (opt_out_original_stream) *opt_out_original_stream = NULL;
  if (!stream) return 0; /* unset and absent: nothing to record */
  if (!t) return rt_raise("MemoryError", "cannot allocate the stream table of this thread");
  if (t->n == RT_MAX_STREAMS)
    return rt_raise("RuntimeError", "too many devices with a current stream in this thread");
  t->slot[t->n].device_type = device_type;
  t->slot[t->n].device_id = device_id;
  t->slot[t->n].stream = stream;
  t->n++;
  return 0;
}

TVM_FFI_DLL TVMFFIStreamHandle TVMFFIEnvGetStream(int32_t device_type, int32_t device_id) {
  rt_stream_table* t = rt_streams;
  for (int i = 0; t && i < t->n; ++i)
    if (t->slot[i].device_type == device_type && t->slot[i].device_id == device_id)
      return t->slot[i].stream;
  return NULL;
}

TVM_FFI_DLL int TVMFFIEnvCheckSignals(void) { return 0; }

/* ---- symbol tables (small; a mutex and a linear list are enough) ---- */
typedef struct rt_sym {
  char* name;
  void* symbol;
  struct rt_sym* next;
} rt_sym;

static pthread_mutex_t rt_env_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_sym* rt_capi_syms;
static rt_sym* rt_ctx_syms;
static rt_sym* rt_syslib_syms;

static int rt_sym_put(rt_sym** list, const char* name, void* symbol) {
  if (!name) return rt_raise("ValueError", "symbol name is NULL");
  pthread_mutex_lock(&rt_env_lock);
  for (rt_sym* s = *list; s; s = s->next) {
    if (strcmp(s->name, name) == 0) {
      s->symbol = symbol; /* a later registration replaces the earlier */
      pthread_mutex_unlock(&rt_env_lock);
      return 0;
    }
  }
  rt_sym* s = (rt_sym*)malloc(sizeof(rt_sym));
  char* n = strdup(name);
  if (!s || !n) {
    pthread_mutex_unlock(&rt_env_lock);
    free(s);
    free(n);
    return rt_raise("MemoryError", "out of memory registering a symbol");
  }
  s->name = n;
  s->symbol = symbol;
  s->next = *list;
  *list = s;
  pthread_mutex_unlock(&rt_env_lock);
  return 0;
}

static void* rt_sym_get(rt_sym* const* list, const char* name) {
  void* r = NULL;
  if (!name) return NULL;
  pthread_mutex_lock(&rt_env_lock);
  for (rt_sym* s = *list; s; s = s->next) {
    if (strcmp(s->name, name) == 0) {
      r = s->symbol;
      break;
    }
  }
  pthread_mutex_unlock(&rt_env_lock);
  return r;
}

static void rt_sym_foreach(rt_sym* const* list, void (*fn)(const char*, void*, void*), void* ctx) {
  pthread_mutex_lock(&rt_env_lock);
  for (rt_sym* s = *list; s; s = s->next) fn(s->name, s->symbol, ctx);
  pthread_mutex_unlock(&rt_env_lock);
}

TVM_FFI_DLL int TVMFFIEnvRegisterCAPI(const char* name, void* symbol) {
  return rt_sym_put(&rt_capi_syms, name, symbol);
}
TVM_FFI_DLL int TVMFFIEnvModRegisterContextSymbol(const char* name, void* symbol) {
  return rt_sym_put(&rt_ctx_syms, name, symbol);
}
TVM_FFI_DLL int TVMFFIEnvModRegisterSystemLibSymbol(const char* name, void* symbol) {
  return rt_sym_put(&rt_syslib_syms, name, symbol);
}

void* rt_env_capi_lookup(const char* name) { return rt_sym_get(&rt_capi_syms, name); }
void* rt_env_context_symbol_lookup(const char* name) { return rt_sym_get(&rt_ctx_syms, name); }
void* rt_env_system_lib_symbol_lookup(const char* name) {
  return rt_sym_get(&rt_syslib_syms, name);
}
void rt_env_context_symbols_foreach(void (*fn)(const char*, void*, void*), void* ctx) {
  rt_sym_foreach(&rt_ctx_syms, fn, ctx);
}
void rt_env_system_lib_symbols_foreach(void (*fn)(const char*, void*, void*), void* ctx) {
  rt_sym_foreach(&rt_syslib_syms, fn, ctx);
}

/* ---- init once / deinit once ----
 * Striped recursive locks: an init function may itself initialise another
 * handle (same stripe or not) from the same thread. */
#define RT_ONCE_STRIPES 64
static pthread_mutex_t rt_once_locks[RT_ONCE_STRIPES];
static pthread_once_t rt_once_locks_once = PTHREAD_ONCE_INIT;

static void rt_once_locks_init(void) {
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_RECURSIVE);
  for (int i = 0; i < RT_ONCE_STRIPES; ++i) pthread_mutex_init(&rt_once_locks[i], &attr);
  pthread_mutexattr_destroy(&attr);
}

static pthread_mutex_t* rt_once_lock(void** addr) {
  pthread_once(&rt_once_locks_once, rt_once_locks_init);
  uintptr_t a = (uintptr_t)addr;
  return &rt_once_locks[(a >> 3) % RT_ONCE_STRIPES];
}

TVM_FFI_DLL int TVMFFIHandleInitOnce(void** handle_addr, int (*init_func)(void** result)) {
  if (!handle_addr || !init_func) return rt_raise("ValueError", "TVMFFIHandleInitOnce: NULL argument");
  if (__atomic_load_n(handle_addr, __ATOMIC_ACQUIRE)) return 0;
  pthread_mutex_t* m = rt_once_lock(handle_addr);
  pthread_mutex_lock(m);
  int rc = 0;
  if (!__atomic_load_n(handle_addr, __ATOMIC_ACQUIRE)) {
    void* result = NULL;
    rc = init_func(&result);
    if (rc == 0) __atomic_store_n(handle_addr, result, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(m);
  return rc;
}

TVM_FFI_DLL int TVMFFIHandleDeinitOnce(void** handle_addr, int (*deinit_func)(void* handle)) {
  if (!handle_addr || !deinit_func) return rt_raise("ValueError", "TVMFFIHandleDeinitOnce: NULL argument");
  if (!__atomic_load_n(handle_addr, __ATOMIC_ACQUIRE)) return 0;
  pthread_mutex_t* m = rt_once_lock(handle_addr);
  pthread_mutex_lock(m);
  int rc = 0;
  void* h = __atomic_load_n(handle_addr, __ATOMIC_ACQUIRE);
  if (h) {
    rc = deinit_func(h);
    if (rc == 0) __atomic_store_n(handle_addr, NULL, __ATOMIC_RELEASE);
  }
  pthread_mutex_unlock(m);
  return rc;
}
