/* Thread stress of the runtime at the sizes of issue 6, beyond what
 * tests/c/rt_threads.c covers: 8 threads x 1,000,000 IncRef and DecRef with
 * the exact count checked between phases, errors raised by all threads at
 * once (a barrier between raise and fetch), every thread registering and
 * looking up globals (plus a same-name race with exactly one winner), and
 * concurrent type registration with shared and private keys whose type
 * info is checked afterwards.
 *
 * stdout: deterministic lines compared exactly by
 * tests/test_hardening_stress.py. stderr: "time <phase> <ms>" lines for
 * bench/bench_hardening.py.
 *
 * usage: stress [ITERATIONS]   (IncRef/DecRef per thread, default 1000000) */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tvm/ffi/c_api.h>
#include <tvmffi/rt.h>

#define NT 8

static long iters = 1000000;
static pthread_barrier_t barrier;

static TVMFFIByteArray ba(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void run(const char* what, void* (*fn)(void*)) {
  pthread_t th[NT];
  double t0 = now_ms();
  for (long i = 0; i < NT; ++i) pthread_create(&th[i], NULL, fn, (void*)i);
  for (int i = 0; i < NT; ++i) pthread_join(th[i], NULL);
  fprintf(stderr, "time %s %.1f\n", what, now_ms() - t0);
}

/* ---------------------------------------------------------------- refcounts
 * Two shared objects; each thread alternates between them. Phase 1 only
 * increments, phase 2 only decrements, phase 3 mixes both; the main thread
 * reads the exact count after each phase. */
#define NOBJ 2
static TVMFFIObjectHandle shared_obj[NOBJ];
static int deleted[NOBJ];
static void count_delete(void* h) { __atomic_fetch_add(&deleted[(intptr_t)h], 1, __ATOMIC_SEQ_CST); }

static void* inc_worker(void* arg) {
  long t = (long)arg;
  for (long i = 0; i < iters; ++i) TVMFFIObjectIncRef(shared_obj[(i + t) & 1]);
  return NULL;
}
static void* dec_worker(void* arg) {
  long t = (long)arg;
  for (long i = 0; i < iters; ++i) TVMFFIObjectDecRef(shared_obj[(i + t) & 1]);
  return NULL;
}
static void* mixed_worker(void* arg) {
  long t = (long)arg;
  for (long i = 0; i < iters / 2; ++i) {
    TVMFFIObjectHandle o = shared_obj[(i + t) & 1];
    TVMFFIObjectIncRef(o);
    TVMFFIObjectDecRef(o);
  }
  return NULL;
}

static void refcounts(void) {
  for (intptr_t i = 0; i < NOBJ; ++i)
    TVMFFIObjectCreateOpaque((void*)i, kTVMFFIOpaquePyObject, count_delete, &shared_obj[i]);
  run("refcount-inc", inc_worker);
  /* iters per thread split over two objects: NT * iters / 2 each */
  unsigned long want = 1 + (unsigned long)NT * (unsigned long)iters / NOBJ;
  int exact = 1;
  for (int i = 0; i < NOBJ; ++i) exact &= tvmffi_rt_strong_count(shared_obj[i]) == want;
  printf("refcount: after %d x %ld IncRef exact=%d deleted=%d\n", NT, iters, exact,
         deleted[0] + deleted[1]);
  run("refcount-dec", dec_worker);
  exact = 1;
  for (int i = 0; i < NOBJ; ++i) exact &= tvmffi_rt_strong_count(shared_obj[i]) == 1;
  printf("refcount: after %d x %ld DecRef exact=%d deleted=%d\n", NT, iters, exact,
         deleted[0] + deleted[1]);
  run("refcount-mixed", mixed_worker);
  exact = 1;
  for (int i = 0; i < NOBJ; ++i) exact &= tvmffi_rt_strong_count(shared_obj[i]) == 1;
  printf("refcount: after mixed exact=%d deleted=%d\n", exact, deleted[0] + deleted[1]);
  for (int i = 0; i < NOBJ; ++i) TVMFFIObjectDecRef(shared_obj[i]);
  printf("refcount: deleter calls=%d,%d\n", deleted[0], deleted[1]);
}

/* ---------------------------------------------------------------- errors
 * Every thread raises, all wait at a barrier so that NT errors are pending
 * at once, then each fetches its own; some rounds raise through a function
 * call and some set an error object. */
#define ERR_ROUNDS 2000
static int err_wrong[NT], err_missing[NT], err_left[NT];
static int raising(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)self;
  (void)ret;
  (void)n;
  TVMFFIErrorSetRaisedFromCStr("KeyError", args[0].v_c_str);
  return -1;
}
static TVMFFIObjectHandle raising_fn;

static void* error_worker(void* arg) {
  long t = (long)arg;
  char msg[96];
  for (int r = 0; r < ERR_ROUNDS; ++r) {
    snprintf(msg, sizeof(msg), "thread %ld round %d: a message long enough for the heap", t, r);
    const char* kind = "ValueError";
    switch (r % 3) {
      case 0:
        TVMFFIErrorSetRaisedFromCStr("ValueError", msg);
        break;
      case 1: {
        TVMFFIAny a;
        memset(&a, 0, sizeof(a));
        a.type_index = kTVMFFIRawStr;
        a.v_c_str = msg;
        TVMFFIAny out;
        memset(&out, 0, sizeof(out));
        if (TVMFFIFunctionCall(raising_fn, &a, 1, &out) == 0) err_wrong[t]++;
        kind = "KeyError";
        break;
      }
      default: {
        TVMFFIByteArray k = ba("TypeError"), m = ba(msg);
        TVMFFIObjectHandle e = NULL;
        TVMFFIErrorCreate(&k, &m, NULL, &e);
        TVMFFIErrorSetRaised(e);
        TVMFFIObjectDecRef(e);
        kind = "TypeError";
      }
    }
    pthread_barrier_wait(&barrier);
    TVMFFIObjectHandle e = NULL;
    TVMFFIErrorMoveFromRaised(&e);
    if (!e) {
      err_missing[t]++;
    } else {
      TVMFFIErrorCell* c = (TVMFFIErrorCell*)((TVMFFIObject*)e + 1);
      if (c->message.size != strlen(msg) || memcmp(c->message.data, msg, c->message.size) ||
          c->kind.size != strlen(kind) || memcmp(c->kind.data, kind, c->kind.size))
        err_wrong[t]++;
      TVMFFIObjectDecRef(e);
    }
    if (tvmffi_rt_error_pending()) err_left[t]++;
  }
  return NULL;
}

static void errors(void) {
  TVMFFIFunctionCreate(NULL, raising, NULL, &raising_fn);
  run("errors", error_worker);
  int wrong = 0, missing = 0, left = 0;
  for (int i = 0; i < NT; ++i) {
    wrong += err_wrong[i];
    missing += err_missing[i];
    left += err_left[i];
  }
  printf("errors: %d x %d raised, wrong=%d missing=%d left_pending=%d\n", NT, ERR_ROUNDS, wrong,
         missing, left);
  TVMFFIObjectDecRef(raising_fn);
}

/* ---------------------------------------------------------------- globals
 * Every thread registers NG names of its own and looks up the names of the
 * thread before it (present -> must return that thread's value); all race
 * for one name without override (exactly one may win) and keep replacing
 * another with override while reading it. */
#define NG 1000
static int ret_self(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)args;
  (void)n;
  memset(ret, 0, sizeof(*ret));
  ret->type_index = kTVMFFIInt;
  ret->v_int64 = (int64_t)(intptr_t)self;
  return 0;
}
static int g_bad[NT], g_seen[NT], race_wins, race_refusals;

static int64_t call_global(const char* name, int* found) {
  TVMFFIByteArray n = ba(name);
  TVMFFIObjectHandle g = NULL;
  *found = 0;
  if (TVMFFIFunctionGetGlobal(&n, &g) != 0) return -1;
  if (!g) return 0;
  *found = 1;
  TVMFFIAny r;
  memset(&r, 0, sizeof(r));
  int rc = TVMFFIFunctionCall(g, NULL, 0, &r);
  TVMFFIObjectDecRef(g);
  return rc == 0 && r.type_index == kTVMFFIInt ? r.v_int64 : -1;
}

static void* global_worker(void* arg) {
  long t = (long)arg;
  char name[64];
  /* the same-name race first, all threads released together */
  TVMFFIObjectHandle mine;
  TVMFFIFunctionCreate((void*)(intptr_t)(1000000 + t), ret_self, NULL, &mine);
  TVMFFIByteArray race = ba("stress2.race");
  pthread_barrier_wait(&barrier);
  if (TVMFFIFunctionSetGlobal(&race, mine, 0) == 0) {
    __atomic_fetch_add(&race_wins, 1, __ATOMIC_SEQ_CST);
  } else {
    TVMFFIObjectHandle e = NULL;
    TVMFFIErrorMoveFromRaised(&e);
    if (e) {
      __atomic_fetch_add(&race_refusals, 1, __ATOMIC_SEQ_CST);
      TVMFFIObjectDecRef(e);
    }
  }
  TVMFFIObjectDecRef(mine);
  for (int j = 0; j < NG; ++j) {
    TVMFFIObjectHandle f;
    TVMFFIFunctionCreate((void*)(intptr_t)(t * NG + j), ret_self, NULL, &f);
    snprintf(name, sizeof(name), "stress2.t%ld.f%d", t, j);
    TVMFFIByteArray n = ba(name);
    if (TVMFFIFunctionSetGlobal(&n, f, 0) != 0) g_bad[t]++;
    TVMFFIByteArray sh = ba("stress2.shared");
    if (TVMFFIFunctionSetGlobal(&sh, f, 1) != 0) g_bad[t]++;
    TVMFFIObjectDecRef(f);
    /* a name of the previous thread: absent or exactly its value */
    long o = (t + NT - 1) % NT;
    snprintf(name, sizeof(name), "stress2.t%ld.f%d", o, j);
    int found;
    int64_t v = call_global(name, &found);
    if (found) {
      g_seen[t]++;
      if (v != o * NG + j) g_bad[t]++;
    }
    v = call_global("stress2.shared", &found);
    if (!found || v < 0 || v >= NT * NG) g_bad[t]++;
  }
  return NULL;
}

static void globals(void) {
  run("globals", global_worker);
  int bad = 0, present = 0, right = 1;
  char name[64];
  for (long t = 0; t < NT; ++t) {
    bad += g_bad[t];
    for (int j = 0; j < NG; ++j) {
      snprintf(name, sizeof(name), "stress2.t%ld.f%d", t, j);
      int found;
      int64_t v = call_global(name, &found);
      present += found;
      right &= v == t * NG + j;
    }
  }
  int found;
  int64_t race = call_global("stress2.race", &found);
  printf("globals: %d x %d registered, bad=%d present=%d values_right=%d\n", NT, NG, bad, present,
         right);
  printf("globals: same-name race wins=%d refusals=%d winner_valid=%d\n", race_wins,
         race_refusals, found && race >= 1000000 && race < 1000000 + NT);
}

/* ---------------------------------------------------------------- types
 * NSHARED keys registered by every thread (in different orders) under one
 * shared parent, and NPRIV keys private to each thread. */
#define NSHARED 200
#define NPRIV 100
static int32_t parent_idx;
static int32_t shared_idx[NT][NSHARED];
static int32_t priv_idx[NT][NPRIV];

static void* type_worker(void* arg) {
  long t = (long)arg;
  char key[64];
  pthread_barrier_wait(&barrier);
  for (int k = 0; k < NSHARED; ++k) {
    int kk = (int)((k * 7 + t * 31) % NSHARED);
    snprintf(key, sizeof(key), "stress2.Shared%d", kk);
    TVMFFIByteArray b = ba(key);
    shared_idx[t][kk] = TVMFFITypeGetOrAllocIndex(&b, -1, 2, 0, 1, parent_idx);
    if (k < NPRIV) {
      snprintf(key, sizeof(key), "stress2.T%ld.Private%d", t, k);
      b = ba(key);
      priv_idx[t][k] = TVMFFITypeGetOrAllocIndex(&b, -1, 2, 0, 1, parent_idx);
    }
  }
  return NULL;
}

static int info_ok(int32_t idx, const char* key) {
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(idx);
  int32_t back = -1;
  TVMFFIByteArray b = ba(key);
  return info && info->type_index == idx && info->type_depth == 2 &&
         info->type_key.size == strlen(key) && !memcmp(info->type_key.data, key, b.size) &&
         info->type_ancestors[0]->type_index == kTVMFFIObject &&
         info->type_ancestors[1]->type_index == parent_idx &&
         TVMFFITypeKeyToIndex(&b, &back) == 0 && back == idx;
}

static int cmp_i32(const void* a, const void* b) {
  int32_t x = *(const int32_t*)a, y = *(const int32_t*)b;
  return (x > y) - (x < y);
}

static void types(void) {
  TVMFFIByteArray pk = ba("stress2.Parent");
  /* enough child slots that the children may or may not overflow them */
  parent_idx = TVMFFITypeGetOrAllocIndex(&pk, -1, 1, 64, 1, kTVMFFIObject);
  run("types", type_worker);
  int agree = 1, consistent = 1;
  char key[64];
  for (int k = 0; k < NSHARED; ++k) {
    for (int t = 1; t < NT; ++t) agree &= shared_idx[t][k] == shared_idx[0][k];
    snprintf(key, sizeof(key), "stress2.Shared%d", k);
    consistent &= info_ok(shared_idx[0][k], key);
  }
  static int32_t all[NSHARED + NT * NPRIV];
  int n = 0;
  for (int k = 0; k < NSHARED; ++k) all[n++] = shared_idx[0][k];
  for (int t = 0; t < NT; ++t) {
    for (int k = 0; k < NPRIV; ++k) {
      all[n++] = priv_idx[t][k];
      snprintf(key, sizeof(key), "stress2.T%d.Private%d", t, k);
      consistent &= info_ok(priv_idx[t][k], key);
    }
  }
  qsort(all, (size_t)n, sizeof(all[0]), cmp_i32);
  int distinct = all[0] >= kTVMFFIDynObjectBegin;
  for (int i = 1; i < n; ++i) distinct &= all[i] != all[i - 1];
  printf("types: %d shared keys agree=%d, %d keys distinct=%d, info consistent=%d\n", NSHARED,
         agree, n, distinct, consistent);
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* lines survive a crash of a later phase */
  if (argc > 1) iters = atol(argv[1]);
  if (iters < 2) iters = 2;
  pthread_barrier_init(&barrier, NULL, NT);
  int64_t live0 = tvmffi_rt_live_objects();
  refcounts();
  errors();
  int64_t live1 = tvmffi_rt_live_objects();
  globals();
  types();
  printf("live objects after refcount+errors: %+lld\n", (long long)(live1 - live0));
  pthread_barrier_destroy(&barrier);
  return 0;
}
