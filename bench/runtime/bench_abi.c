/* Micro-benchmark of the TVM-FFI C ABI hot paths. Built against the
 * OFFICIAL headers and linked -ltvm_ffi, so the very same binary runs on
 * either runtime (choose with LD_LIBRARY_PATH). Prints one line per case:
 * "<case> <ns per op>" (best of `reps` timed batches). */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tvm/ffi/c_api.h>

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int trivial(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)self;
  ret->type_index = kTVMFFIInt;
  ret->zero_padding = 0;
  ret->v_int64 = n > 0 ? args[0].v_int64 + 1 : 0;
  return 0;
}

static void die(const char* what) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  fprintf(stderr, "bench_abi: %s failed\n", what);
  exit(1);
}

/* Keeps results observable so the loops are not optimized away. */
static volatile int64_t sink;

#define TIME_CASE(label, iters, reps, body)                      \
  do {                                                           \
    double best = 1e30;                                          \
    for (int r_ = 0; r_ < (reps); ++r_) {                        \
      double t0_ = now_ns();                                     \
      for (long i_ = 0; i_ < (iters); ++i_) {                    \
        body;                                                    \
      }                                                          \
      double dt_ = (now_ns() - t0_) / (double)(iters);           \
      if (dt_ < best) best = dt_;                                \
    }                                                            \
    printf("%s %.3f\n", label, best);                            \
  } while (0)

int main(int argc, char** argv) {
  long scale = argc > 1 ? atol(argv[1]) : 1;
  if (scale < 1) scale = 1;
  const int reps = 21; /* best of many short batches: interference only adds time */

  TVMFFIObjectHandle fn;
  if (TVMFFIFunctionCreate(NULL, trivial, NULL, &fn) != 0) die("FunctionCreate");
  TVMFFIByteArray gname = {"bench.trivial", 13};
  if (TVMFFIFunctionSetGlobal(&gname, fn, 1) != 0) die("FunctionSetGlobal");

  TVMFFIAny arg;
  arg.type_index = kTVMFFIInt;
  arg.zero_padding = 0;
  arg.v_int64 = 41;
  TIME_CASE("call", 500000 * scale, reps, {
    TVMFFIAny res;
    res.type_index = kTVMFFINone;
    res.zero_padding = 0;
    res.v_int64 = 0;
    if (TVMFFIFunctionCall(fn, &arg, 1, &res) != 0) die("FunctionCall");
    sink += res.v_int64;
  });

  static const char payload[33] = "0123456789abcdef0123456789abcdef";
  TVMFFIByteArray s32 = {payload, 32};
  TIME_CASE("string", 200000 * scale, reps, {
    TVMFFIAny out;
    if (TVMFFIStringFromByteArray(&s32, &out) != 0) die("StringFromByteArray");
    TVMFFIObjectDecRef(out.v_obj);
  });

  TIME_CASE("incref_decref", 500000 * scale, reps, {
    TVMFFIObjectIncRef(fn);
    TVMFFIObjectDecRef(fn);
  });

  TIME_CASE("lookup", 200000 * scale, reps, {
    TVMFFIObjectHandle g = NULL;
    if (TVMFFIFunctionGetGlobal(&gname, &g) != 0 || g == NULL) die("FunctionGetGlobal");
    TVMFFIObjectDecRef(g);
  });

  TIME_CASE("raise_fetch", 5000 * scale, reps, {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "bench error message");
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err);
    if (!err) die("MoveFromRaised");
    TVMFFIObjectDecRef(err);
  });

  TVMFFIObjectDecRef(fn);
  return (int)(sink & 0);
}
