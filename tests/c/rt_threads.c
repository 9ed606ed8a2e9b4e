/* Thread stress of the runtime core; prints deterministic summary lines
 * that tests/test_runtime_core.py compares exactly. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tvm/ffi/c_api.h>
#include <tvmffi/rt.h>

#define NT 8

static TVMFFIByteArray ba(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}

static void run(void* (*fn)(void*)) {
  pthread_t th[NT];
  for (long i = 0; i < NT; ++i) pthread_create(&th[i], NULL, fn, (void*)i);
  for (int i = 0; i < NT; ++i) pthread_join(th[i], NULL);
}

/* 1. refcounts: no lost update */
#define NOBJ 4
static TVMFFIObjectHandle shared[NOBJ];
static int deleted[NOBJ];
static void count_delete(void* h) { __atomic_fetch_add(&deleted[(intptr_t)h], 1, __ATOMIC_RELAXED); }

static void* refcount_worker(void* arg) {
  long t = (long)arg;
  for (int i = 0; i < 200000; ++i) {
    TVMFFIObjectHandle o = shared[(i + t) % NOBJ];
    TVMFFIObjectIncRef(o);
    if (i % 3 == 0) TVMFFIObjectIncRef(o);
    TVMFFIObjectDecRef(o);
    if (i % 3 == 0) TVMFFIObjectDecRef(o);
  }
  return NULL;
}

/* 2. raised errors are per thread */
static int wrong_error[NT];
static void* error_worker(void* arg) {
  long t = (long)arg;
  char msg[64];
  for (int i = 0; i < 20000; ++i) {
    snprintf(msg, sizeof(msg), "thread %ld iteration %d", t, i);
    TVMFFIErrorSetRaisedFromCStr("ValueError", msg);
    if (i % 7 == 0) TVMFFIErrorSetRaisedFromCStr("ValueError", msg); /* replaces */
    TVMFFIObjectHandle e = NULL;
    TVMFFIErrorMoveFromRaised(&e);
    if (!e) {
      wrong_error[t]++;
      continue;
    }
    TVMFFIErrorCell* c = (TVMFFIErrorCell*)((char*)e + sizeof(TVMFFIObject));
    if (c->message.size != strlen(msg) || memcmp(c->message.data, msg, c->message.size) != 0)
      wrong_error[t]++;
    TVMFFIObjectDecRef(e);
    if (tvmffi_rt_error_pending()) wrong_error[t]++;
  }
  return NULL;
}

/* 3. global registry: concurrent registration, override and lookup */
static int ret_self(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)args;
  (void)n;
  ret->type_index = kTVMFFIInt;
  ret->zero_padding = 0;
  ret->v_int64 = (int64_t)(intptr_t)self;
  return 0;
}

static int registry_bad[NT];
static void* registry_worker(void* arg) {
  long t = (long)arg;
  char name[64];
  if (t < NT / 2) {
    for (int j = 0; j < 500; ++j) {
      TVMFFIObjectHandle f;
      TVMFFIFunctionCreate((void*)(intptr_t)(t * 1000 + j), ret_self, NULL, &f);
      snprintf(name, sizeof(name), "stress.%ld.%d", t, j);
      TVMFFIByteArray n = ba(name);
      if (TVMFFIFunctionSetGlobal(&n, f, 0) != 0) registry_bad[t]++;
      /* keep replacing one shared name while readers call it */
      TVMFFIByteArray sh = ba("stress.shared");
      if (TVMFFIFunctionSetGlobal(&sh, f, 1) != 0) registry_bad[t]++;
      TVMFFIObjectDecRef(f);
    }
  } else {
    for (int j = 0; j < 20000; ++j) {
      TVMFFIByteArray sh = ba("stress.shared");
      TVMFFIObjectHandle g = NULL;
      if (TVMFFIFunctionGetGlobal(&sh, &g) != 0 || !g) {
        registry_bad[t]++;
        continue;
      }
      TVMFFIAny r;
      memset(&r, 0, sizeof(r));
      if (TVMFFIFunctionCall(g, NULL, 0, &r) != 0 || r.type_index != kTVMFFIInt) registry_bad[t]++;
      TVMFFIObjectDecRef(g);
      /* a name registered by a writer either is absent or returns its value */
      long w = j % (NT / 2);
      int k = j % 500;
      snprintf(name, sizeof(name), "stress.%ld.%d", w, k);
      TVMFFIByteArray n = ba(name);
      g = NULL;
      if (TVMFFIFunctionGetGlobal(&n, &g) != 0) registry_bad[t]++;
      if (g) {
        memset(&r, 0, sizeof(r));
        TVMFFIFunctionCall(g, NULL, 0, &r);
        if (r.v_int64 != w * 1000 + k) registry_bad[t]++;
        TVMFFIObjectDecRef(g);
      }
    }
  }
  return NULL;
}

/* 4. type registration: same key -> same index in every thread */
#define NTYPES 100
static int32_t type_idx[NT][NTYPES];
static void* type_worker(void* arg) {
  long t = (long)arg;
  char key[64];
  for (int k = 0; k < NTYPES; ++k) {
    int kk = (int)((k + t * 13) % NTYPES);
    snprintf(key, sizeof(key), "stress.Type%d", kk);
    TVMFFIByteArray b = ba(key);
    type_idx[t][kk] = TVMFFITypeGetOrAllocIndex(&b, -1, 1, 0, 1, kTVMFFIObject);
  }
  return NULL;
}

/* 5. init once under a race */
static void* once_handle;
static int once_calls;
static int slow_init(void** out) {
  __atomic_fetch_add(&once_calls, 1, __ATOMIC_RELAXED);
  for (volatile int i = 0; i < 100000; ++i) {
  }
  *out = &once_calls;
  return 0;
}
static int once_bad;
static void* once_worker(void* arg) {
  (void)arg;
  if (TVMFFIHandleInitOnce(&once_handle, slow_init) != 0 || once_handle != &once_calls)
    __atomic_fetch_add(&once_bad, 1, __ATOMIC_RELAXED);
  return NULL;
}

/* 6. objects made in one thread, released in another; counters of exited
 * threads are kept */
#define NSTR 5000
static TVMFFIObject* handoff[NT][NSTR];
static void* alloc_worker(void* arg) {
  long t = (long)arg;
  for (int i = 0; i < NSTR; ++i) {
    TVMFFIByteArray b = ba("a string that is long enough for the heap");
    TVMFFIAny a;
    TVMFFIStringFromByteArray(&b, &a);
    handoff[t][i] = a.v_obj;
  }
  return NULL;
}
static void* free_worker(void* arg) {
  long t = (long)arg;
  for (int i = 0; i < NSTR; ++i) TVMFFIObjectDecRef(handoff[(t + 1) % NT][i]);
  return NULL;
}

int main(void) {
  for (int i = 0; i < NOBJ; ++i)
    TVMFFIObjectCreateOpaque((void*)(intptr_t)i, kTVMFFIOpaquePyObject, count_delete, &shared[i]);
  run(refcount_worker);
  int ok = 1;
  for (int i = 0; i < NOBJ; ++i) ok &= tvmffi_rt_strong_count(shared[i]) == 1 && deleted[i] == 0;
  printf("refcount: counts intact=%d\n", ok);
  for (int i = 0; i < NOBJ; ++i) TVMFFIObjectDecRef(shared[i]);
  printf("refcount: each deleted once=%d\n",
         deleted[0] == 1 && deleted[1] == 1 && deleted[2] == 1 && deleted[3] == 1);

  run(error_worker);
  int wrong = 0;
  for (int i = 0; i < NT; ++i) wrong += wrong_error[i];
  printf("errors: wrong fetches=%d\n", wrong);

  TVMFFIObjectHandle f0;
  TVMFFIFunctionCreate((void*)(intptr_t)-1, ret_self, NULL, &f0);
  TVMFFIByteArray sh = ba("stress.shared");
  TVMFFIFunctionSetGlobal(&sh, f0, 1);
  TVMFFIObjectDecRef(f0);
  run(registry_worker);
  int bad = 0;
  for (int i = 0; i < NT; ++i) bad += registry_bad[i];
  int present = 0;
  char name[64];
  for (long w = 0; w < NT / 2; ++w) {
    for (int k = 0; k < 500; ++k) {
      snprintf(name, sizeof(name), "stress.%ld.%d", w, k);
      TVMFFIByteArray n = ba(name);
      TVMFFIObjectHandle g = NULL;
      TVMFFIFunctionGetGlobal(&n, &g);
      if (g) {
        present++;
        TVMFFIObjectDecRef(g);
      }
    }
  }
  printf("registry: bad=%d present=%d\n", bad, present);

  run(type_worker);
  int agree = 1, distinct = 1;
  for (int k = 0; k < NTYPES; ++k) {
    for (int t = 1; t < NT; ++t) agree &= type_idx[t][k] == type_idx[0][k];
    for (int k2 = 0; k2 < k; ++k2) distinct &= type_idx[0][k] != type_idx[0][k2];
    agree &= type_idx[0][k] >= kTVMFFIDynObjectBegin;
  }
  printf("types: agree=%d distinct=%d\n", agree, distinct);

  run(once_worker);
  printf("init once: calls=%d bad=%d\n", once_calls, once_bad);

  int64_t live0 = tvmffi_rt_live_objects();
  int64_t str0 = tvmffi_rt_live_objects_of_type(kTVMFFIStr);
  run(alloc_worker);
  printf("handoff: live after alloc=+%lld strings=+%lld\n",
         (long long)(tvmffi_rt_live_objects() - live0),
         (long long)(tvmffi_rt_live_objects_of_type(kTVMFFIStr) - str0));
  run(free_worker);
  printf("handoff: live after free=+%lld\n", (long long)(tvmffi_rt_live_objects() - live0));
  return 0;
}
