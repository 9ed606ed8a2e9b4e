/* Instrumentation kept below the object layer: live-object counters and the
 * record of misuse seen in checking mode (reported by report.c).
 *
 * Counters must not slow down allocation, so each thread owns a block of
 * counters that only it writes (plain relaxed load+store, no locked
 * instruction); readers sum all blocks under a lock. Blocks of exited
 * threads are kept (their deltas still count) and reused by new threads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"


static pthread_mutex_t rt_counter_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_counter_block* rt_all_blocks;
static rt_counter_block* rt_free_blocks;
int64_t rt_overflow_live[RT_OVERFLOW_SLOTS];
static int64_t rt_overflow_total; /* sum of rt_overflow_live */
static pthread_key_t rt_counter_key;
static pthread_once_t rt_counter_key_once = PTHREAD_ONCE_INIT;

__thread rt_counter_block* rt_tls_counters __attribute__((tls_model("initial-exec")));
__thread rt_small_cache rt_tls_small __attribute__((tls_model("initial-exec")));

/* Every thread that made or released an object has a counter block, so
 * its exit comes here: free the small blocks it kept, and keep none from
 * now on (objects released later in the exit free their blocks). */
static void rt_small_cache_close(void) {
  void* p = rt_tls_small.head;
  while (p) {
    void* next = ((rt_prefix*)p)->raw;
    free(p);
    p = next;
  }
  rt_tls_small.head = NULL;
  rt_tls_small.count = RT_SMALL_KEEP;
}

static void rt_counter_thread_exit(void* p) {
  rt_small_cache_close();
  rt_counter_block* b = (rt_counter_block*)p;
  pthread_mutex_lock(&rt_counter_lock);
  b->next_free = rt_free_blocks;
  rt_free_blocks = b;
  pthread_mutex_unlock(&rt_counter_lock);
  rt_tls_counters = NULL;
}

static void rt_counter_key_init(void) { pthread_key_create(&rt_counter_key, rt_counter_thread_exit); }

rt_counter_block* rt_counter_block_slow(void) {
  pthread_once(&rt_counter_key_once, rt_counter_key_init);
  pthread_mutex_lock(&rt_counter_lock);
  rt_counter_block* b = rt_free_blocks;
  if (b) {
    rt_free_blocks = b->next_free;
  } else {
    b = (rt_counter_block*)calloc(1, sizeof(rt_counter_block));
    if (b) {
      b->next_all = rt_all_blocks;
      __atomic_store_n(&rt_all_blocks, b, __ATOMIC_RELEASE);
    }
  }
  pthread_mutex_unlock(&rt_counter_lock);
  if (!b) return NULL;
  pthread_setspecific(rt_counter_key, b);
  rt_tls_counters = b;
  return b;
}

/* Out of line so the inlined fast path (rt_count) stays two tests and a
 * bump, with no call to keep registers around. */
__attribute__((noinline, cold)) void rt_count_slow(int32_t type_index, int64_t d) {
  rt_counter_block* b = rt_tls_counters;
  if (!b && !(b = rt_counter_block_slow())) return;
  if (type_index >= 0 && type_index < RT_TYPE_SLOTS) {
    rt_bump(&b->live[type_index], d);
  } else if (type_index >= RT_TYPE_SLOTS && type_index < RT_TYPE_SLOTS + RT_OVERFLOW_SLOTS) {
    __atomic_fetch_add(&rt_overflow_live[type_index - RT_TYPE_SLOTS], d, __ATOMIC_RELAXED);
    __atomic_fetch_add(&rt_overflow_total, d, __ATOMIC_RELAXED);
  } else {
    rt_bump(&b->live_other, d);
  }
}

TVM_FFI_DLL int64_t tvmffi_rt_live_objects(void) {
  int64_t s = 0;
  pthread_mutex_lock(&rt_counter_lock);
  for (rt_counter_block* b = rt_all_blocks; b; b = b->next_all) {
    s += __atomic_load_n(&b->live_other, __ATOMIC_RELAXED);
    for (size_t i = 0; i < RT_TYPE_SLOTS; ++i) s += __atomic_load_n(&b->live[i], __ATOMIC_RELAXED);
  }
  pthread_mutex_unlock(&rt_counter_lock);
  return s + __atomic_load_n(&rt_overflow_total, __ATOMIC_RELAXED);
}

TVM_FFI_DLL int64_t tvmffi_rt_live_objects_of_type(int32_t type_index) {
  if (type_index < 0) return 0;
  if (type_index >= RT_TYPE_SLOTS) {
    if (type_index >= RT_TYPE_SLOTS + RT_OVERFLOW_SLOTS) return 0;
    return __atomic_load_n(&rt_overflow_live[type_index - RT_TYPE_SLOTS], __ATOMIC_RELAXED);
  }
  int64_t s = 0;
  pthread_mutex_lock(&rt_counter_lock);
  for (rt_counter_block* b = rt_all_blocks; b; b = b->next_all)
    s += __atomic_load_n(&b->live[type_index], __ATOMIC_RELAXED);
  pthread_mutex_unlock(&rt_counter_lock);
  return s;
}

TVM_FFI_DLL uint32_t tvmffi_rt_strong_count(TVMFFIObjectHandle obj) {
  if (!obj) return 0;
  return (uint32_t)(__atomic_load_n(&((TVMFFIObject*)obj)->combined_ref_count, __ATOMIC_RELAXED) &
                    0xFFFFFFFFu);
}

TVM_FFI_DLL uint32_t tvmffi_rt_weak_count(TVMFFIObjectHandle obj) {
  if (!obj) return 0;
  return (uint32_t)(__atomic_load_n(&((TVMFFIObject*)obj)->combined_ref_count, __ATOMIC_RELAXED) >>
                    32);
}

/* ---- misuse checking ---- */
int rt_checking_level;

#define RT_MAX_VIOLATIONS 1000 /* details kept; the count keeps going */
typedef struct {
  char kind[32];
  char detail[224];
} rt_violation_rec;

static pthread_mutex_t rt_violation_lock = PTHREAD_MUTEX_INITIALIZER;
static rt_violation_rec* rt_violation_recs;
static size_t rt_violation_kept;
static int64_t rt_violation_total;

TVM_FFI_DLL void tvmffi_rt_set_checking(int level) {
  __atomic_store_n(&rt_checking_level, level < 0 ? 0 : level, __ATOMIC_RELEASE);
}

void rt_violation(const char* kind, const char* fmt, ...) {
  rt_violation_rec rec;
  snprintf(rec.kind, sizeof(rec.kind), "%s", kind);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rec.detail, sizeof(rec.detail), fmt, ap);
  va_end(ap);
  pthread_mutex_lock(&rt_violation_lock);
  rt_violation_total++;
  if (!rt_violation_recs) rt_violation_recs = calloc(RT_MAX_VIOLATIONS, sizeof(rt_violation_rec));
  if (rt_violation_recs && rt_violation_kept < RT_MAX_VIOLATIONS)
    rt_violation_recs[rt_violation_kept++] = rec;
  pthread_mutex_unlock(&rt_violation_lock);
}

TVM_FFI_DLL int64_t tvmffi_rt_violation_count(void) {
  pthread_mutex_lock(&rt_violation_lock);
  int64_t n = rt_violation_total;
  pthread_mutex_unlock(&rt_violation_lock);
  return n;
}

void rt_violations_snapshot(void (*fn)(const char* kind, const char* detail, void* ctx),
                            void* ctx) {
  pthread_mutex_lock(&rt_violation_lock);
  for (size_t i = 0; i < rt_violation_kept; ++i)
    fn(rt_violation_recs[i].kind, rt_violation_recs[i].detail, ctx);
  pthread_mutex_unlock(&rt_violation_lock);
}
