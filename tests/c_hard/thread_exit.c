/* Threads that make and release small objects (kept by the runtime for
 * reuse on that thread), some of them released on another thread, then
 * exit. Under valgrind nothing may be lost: an exiting thread's kept
 * blocks must be freed. Prints one line; exit 1 on a wrong string. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include <tvm/ffi/c_api.h>

#define NSTR 50
#define NTHREADS 4

static TVMFFIAny handoff[NTHREADS][NSTR];
static int bad;

static void* worker(void* arg) {
  long t = (long)arg;
  TVMFFIByteArray b = {"a string of thirty-one bytes...", 31};
  TVMFFIAny keep[NSTR];
  /* left for the main thread to release after this thread has exited */
  for (int i = 0; i < NSTR; ++i) TVMFFIStringFromByteArray(&b, &handoff[t][i]);
  /* the last round's blocks stay kept by this thread when it exits */
  for (int r = 0; r < 3; ++r) {
    for (int i = 0; i < NSTR; ++i) TVMFFIStringFromByteArray(&b, &keep[i]);
    for (int i = 0; i < NSTR; ++i) {
      const TVMFFIByteArray* c = (const TVMFFIByteArray*)((char*)keep[i].v_obj + sizeof(TVMFFIObject));
      if (c->size != 31 || memcmp(c->data, b.data, 31) != 0) __atomic_add_fetch(&bad, 1, __ATOMIC_RELAXED);
      TVMFFIObjectDecRef(keep[i].v_obj);
    }
  }
  return NULL;
}

int main(void) {
  for (int round = 0; round < 3; ++round) {
    pthread_t th[NTHREADS];
    for (long i = 0; i < NTHREADS; ++i) pthread_create(&th[i], NULL, worker, (void*)i);
    for (int i = 0; i < NTHREADS; ++i) pthread_join(th[i], NULL);
    for (int t = 0; t < NTHREADS; ++t)
      for (int i = 0; i < NSTR; ++i) TVMFFIObjectDecRef(handoff[t][i].v_obj);
  }
  printf("thread_exit: bad=%d\n", bad);
  return bad != 0;
}
