/* Micro-benchmark of the TVM-FFI C ABI hot paths, both runtimes in one
 * process.
 *
 * Usage: bench_abi REF.so OURS.so ROUNDS BATCH_US [CASE...]
 * (no CASE: all cases)
 *
 * Both libtvm_ffi.so files are dlopen'ed (RTLD_LOCAL: each binds to its own
 * symbols) and every API entry is called through a pointer from dlsym, so
 * both runtimes pay the same call mechanism. For each case the program
 * calibrates a batch size per runtime (iterations taking about BATCH_US
 * microseconds), warms both up, then times ROUNDS rounds; a round is one
 * batch on each runtime, back to back, the order alternating (AB, BA, AB,
 * ...) so neither side always runs first. A load spike therefore lands on
 * one round (both figures of a round see nearly the same machine state),
 * and the caller takes the median of the per-round ratios.
 *
 * Output, one line per round: "<case> <round> <ref ns/op> <ours ns/op>".
 * Built against the official headers (types only; nothing is linked). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <tvm/ffi/c_api.h>

typedef struct {
  const char* path;
  int (*FunctionCreate)(void*, TVMFFISafeCallType, void (*)(void*), TVMFFIObjectHandle*);
  int (*FunctionSetGlobal)(const TVMFFIByteArray*, TVMFFIObjectHandle, int);
  int (*FunctionGetGlobal)(const TVMFFIByteArray*, TVMFFIObjectHandle*);
  int (*FunctionCall)(TVMFFIObjectHandle, TVMFFIAny*, int32_t, TVMFFIAny*);
  int (*StringFromByteArray)(const TVMFFIByteArray*, TVMFFIAny*);
  int (*ObjectIncRef)(TVMFFIObjectHandle);
  int (*ObjectDecRef)(TVMFFIObjectHandle);
  void (*ErrorSetRaisedFromCStr)(const char*, const char*);
  void (*ErrorMoveFromRaised)(TVMFFIObjectHandle*);
  TVMFFIObjectHandle fn; /* the trivial function, made by this runtime */
} rt_api;

static void die(const rt_api* rt, const char* what) {
  fprintf(stderr, "bench_abi: %s failed on %s\n", what, rt ? rt->path : "?");
  exit(1);
}

static void* sym(rt_api* rt, void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (!p) {
    fprintf(stderr, "bench_abi: %s has no %s\n", rt->path, name);
    exit(1);
  }
  return p;
}

#define BIND(rt, lib, name) *(void**)(&(rt)->name) = sym((rt), (lib), "TVMFFI" #name)

static void load(rt_api* rt, const char* path) {
  memset(rt, 0, sizeof(*rt));
  rt->path = path;
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "bench_abi: cannot load %s: %s\n", path, dlerror());
    exit(1);
  }
  BIND(rt, lib, FunctionCreate);
  BIND(rt, lib, FunctionSetGlobal);
  BIND(rt, lib, FunctionGetGlobal);
  BIND(rt, lib, FunctionCall);
  BIND(rt, lib, StringFromByteArray);
  BIND(rt, lib, ObjectIncRef);
  BIND(rt, lib, ObjectDecRef);
  BIND(rt, lib, ErrorSetRaisedFromCStr);
  BIND(rt, lib, ErrorMoveFromRaised);
}

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

/* Keeps results observable so the loops are not optimized away. */
static volatile int64_t sink;

static const TVMFFIByteArray gname = {"bench.trivial", 13};
static const char payload[33] = "0123456789abcdef0123456789abcdef";

/* One timed batch: `iters` operations of case `c` on runtime `rt`; ns/op. */
typedef double (*batch_fn)(const rt_api* rt, long iters);

static double batch_call(const rt_api* rt, long iters) {
  TVMFFIAny arg;
  arg.type_index = kTVMFFIInt;
  arg.zero_padding = 0;
  arg.v_int64 = 41;
  int64_t acc = 0;
  /* entry points and handle in registers: the loop adds as little as it can */
  int (*call)(TVMFFIObjectHandle, TVMFFIAny*, int32_t, TVMFFIAny*) = rt->FunctionCall;
  TVMFFIObjectHandle fn = rt->fn;
  double t0 = now_ns();
  for (long i = 0; i < iters; ++i) {
    TVMFFIAny res;
    res.type_index = kTVMFFINone;
    res.zero_padding = 0;
    res.v_int64 = 0;
    if (call(fn, &arg, 1, &res) != 0) die(rt, "FunctionCall");
    acc += res.v_int64;
  }
  double dt = now_ns() - t0;
  sink += acc;
  return dt / (double)iters;
}

static double batch_string(const rt_api* rt, long iters) {
  TVMFFIByteArray s32 = {payload, 32};
  int (*make)(const TVMFFIByteArray*, TVMFFIAny*) = rt->StringFromByteArray;
  int (*decref)(TVMFFIObjectHandle) = rt->ObjectDecRef;
  double t0 = now_ns();
  for (long i = 0; i < iters; ++i) {
    TVMFFIAny out;
    if (make(&s32, &out) != 0) die(rt, "StringFromByteArray");
    decref(out.v_obj);
  }
  return (now_ns() - t0) / (double)iters;
}

static double batch_refcount(const rt_api* rt, long iters) {
  TVMFFIObjectHandle fn = rt->fn;
  int (*incref)(TVMFFIObjectHandle) = rt->ObjectIncRef;
  int (*decref)(TVMFFIObjectHandle) = rt->ObjectDecRef;
  double t0 = now_ns();
  for (long i = 0; i < iters; ++i) {
    incref(fn);
    decref(fn);
  }
  return (now_ns() - t0) / (double)iters;
}

static double batch_lookup(const rt_api* rt, long iters) {
  double t0 = now_ns();
  for (long i = 0; i < iters; ++i) {
    TVMFFIObjectHandle g = NULL;
    if (rt->FunctionGetGlobal(&gname, &g) != 0 || g == NULL) die(rt, "FunctionGetGlobal");
    rt->ObjectDecRef(g);
  }
  return (now_ns() - t0) / (double)iters;
}

static double batch_raise(const rt_api* rt, long iters) {
  double t0 = now_ns();
  for (long i = 0; i < iters; ++i) {
    rt->ErrorSetRaisedFromCStr("ValueError", "bench error message");
    TVMFFIObjectHandle err = NULL;
    rt->ErrorMoveFromRaised(&err);
    if (!err) die(rt, "ErrorMoveFromRaised");
    rt->ObjectDecRef(err);
  }
  return (now_ns() - t0) / (double)iters;
}

static const struct {
  const char* name;
  batch_fn run;
} cases[] = {
    {"call", batch_call},       {"string", batch_string},     {"incref_decref", batch_refcount},
    {"lookup", batch_lookup},   {"raise_fetch", batch_raise},
};

int main(int argc, char** argv) {
  if (argc < 5) {
    fprintf(stderr, "usage: bench_abi REF.so OURS.so ROUNDS BATCH_US [CASE...]\n");
    return 2;
  }
  long rounds = atol(argv[3]);
  double batch_ns = atof(argv[4]) * 1e3;
  if (rounds < 1 || batch_ns <= 0) {
    fprintf(stderr, "bench_abi: ROUNDS and BATCH_US must be positive\n");
    return 2;
  }
  static rt_api rts[2];
  load(&rts[0], argv[1]);
  load(&rts[1], argv[2]);
  for (int k = 0; k < 2; ++k) {
    rt_api* rt = &rts[k];
    if (rt->FunctionCreate(NULL, trivial, NULL, &rt->fn) != 0) die(rt, "FunctionCreate");
    if (rt->FunctionSetGlobal(&gname, rt->fn, 1) != 0) die(rt, "FunctionSetGlobal");
  }

  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); ++c) {
    int wanted = argc == 5;
    for (int a = 5; a < argc; ++a) wanted |= strcmp(argv[a], cases[c].name) == 0;
    if (!wanted) continue;
    batch_fn run = cases[c].run;
    /* warm-up and calibration: per runtime, grow the batch until it takes
     * about batch_ns, so both sides are timed over the same stretch of
     * wall time whatever their speed. */
    long iters[2];
    for (int k = 0; k < 2; ++k) {
      long n = 8;
      for (;;) {
        double per_op = run(&rts[k], n);
        if (per_op * (double)n >= batch_ns / 4 || n > (1L << 30)) {
          double want = batch_ns / (per_op > 0 ? per_op : 1.0);
          iters[k] = want < 1 ? 1 : (long)want;
          break;
        }
        n *= 2;
      }
    }
    for (int w = 0; w < 3; ++w) {
      (void)run(&rts[0], iters[0]);
      (void)run(&rts[1], iters[1]);
    }
    for (long r = 0; r < rounds; ++r) {
      double t[2];
      int first = (int)(r & 1);
      t[first] = run(&rts[first], iters[first]);
      t[!first] = run(&rts[!first], iters[!first]);
      printf("%s %ld %.4f %.4f\n", cases[c].name, r, t[0], t[1]);
    }
  }
  for (int k = 0; k < 2; ++k) rts[k].ObjectDecRef(rts[k].fn);
  return (int)(sink & 0);
}
