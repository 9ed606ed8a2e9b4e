/* Checks aimed at two mutations of the C runtime (issue 10):
 *  - "weak release never frees": an object whose last weak reference goes
 *    away must give its storage back (through its deleter's weak step);
 *  - "rt_type_is_instance accepts deeper types": a type that is deeper in
 *    the hierarchy but not derived from the expected one must be refused.
 * One line per check; tests/test_runtime_mutations.py compares them. */
#include <stdio.h>
#include <string.h>

#include <tvm/ffi/c_api.h>
#include <tvmffi/rt.h>

#define WEAK_ONE ((uint64_t)1 << 32)

static TVMFFIByteArray ba(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}

static void drop_error(void) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err) {
    const TVMFFIErrorCell* cell =
        (const TVMFFIErrorCell*)((char*)err + sizeof(TVMFFIObject));
    printf("  raised %.*s\n", (int)cell->kind.size, cell->kind.data);
    TVMFFIObjectDecRef(err);
  }
}

static int call_global(const char* name, TVMFFIAny* args, int n, TVMFFIAny* out) {
  TVMFFIByteArray b = ba(name);
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionGetGlobal(&b, &f) != 0 || !f) return -1;
  memset(out, 0, sizeof(*out));
  int rc = TVMFFIFunctionCall(f, args, n, out);
  TVMFFIObjectDecRef(f);
  return rc;
}

static int resource_freed;
static void free_resource(void* self) {
  (void)self;
  ++resource_freed;
}
/* The weak holder lets go while the strong release is running the
 * contents' cleanup: then the runtime's own weak step is the last one and
 * must free the block. */
static TVMFFIObject* drop_weak_of;
static void drop_weak_during_cleanup(void* self) {
  (void)self;
  ++resource_freed;
  if (drop_weak_of &&
      __atomic_fetch_sub(&drop_weak_of->combined_ref_count, WEAK_ONE, __ATOMIC_ACQ_REL) ==
          WEAK_ONE)
    printf("unexpected: the holder had the last weak reference\n");
}

static int noop_call(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)self;
  (void)args;
  (void)n;
  (void)ret;
  return 0;
}

/* Releases obj's strong reference while a weak one is held, then the weak
 * one as C++'s WeakObjectPtr does (last weak -> deleter with the weak flag). */
static void weak_cycle(const char* kind, TVMFFIObjectHandle obj) {
  int64_t live0 = tvmffi_rt_live_objects() - 1;
  TVMFFIObject* o = (TVMFFIObject*)obj;
  __atomic_fetch_add(&o->combined_ref_count, WEAK_ONE, __ATOMIC_RELAXED);
  TVMFFIObjectDecRef(obj);
  int64_t after_strong = tvmffi_rt_live_objects() - live0;
  if (__atomic_fetch_sub(&o->combined_ref_count, WEAK_ONE, __ATOMIC_ACQ_REL) == WEAK_ONE)
    o->deleter(o, kTVMFFIObjectDeleterFlagBitMaskWeak);
  int64_t after_weak = tvmffi_rt_live_objects() - live0;
  printf("%s: after strong release %+lld, after weak release %+lld\n", kind,
         (long long)after_strong, (long long)after_weak);
}

/* A plain last DecRef (strong and weak both one). */
static void plain_cycle(const char* kind, TVMFFIObjectHandle obj) {
  int64_t live0 = tvmffi_rt_live_objects() - 1;
  TVMFFIObjectDecRef(obj);
  printf("%s: after last release %+lld\n", kind, (long long)(tvmffi_rt_live_objects() - live0));
}

static TVMFFIObjectHandle make(const char* kind) {
  TVMFFIAny out;
  memset(&out, 0, sizeof(out));
  if (!strcmp(kind, "string")) {
    TVMFFIByteArray s = ba("a string longer than seven bytes");
    TVMFFIStringFromByteArray(&s, &out);
  } else if (!strcmp(kind, "bytes")) {
    TVMFFIByteArray s = ba("bytes longer than seven");
    TVMFFIBytesFromByteArray(&s, &out);
  } else if (!strcmp(kind, "array") || !strcmp(kind, "map") || !strcmp(kind, "shape")) {
    TVMFFIAny args[2];
    memset(args, 0, sizeof(args));
    args[0].type_index = args[1].type_index = kTVMFFIInt;
    args[0].v_int64 = 3;
    args[1].v_int64 = 4;
    const char* g = !strcmp(kind, "array") ? "ffi.Array" : !strcmp(kind, "map") ? "ffi.Map"
                                                                                : "ffi.Shape";
    if (call_global(g, args, 2, &out) != 0) drop_error();
  } else if (!strcmp(kind, "function")) {
    TVMFFIObjectHandle f = NULL;
    TVMFFIFunctionCreate((void*)1, noop_call, free_resource, &f);
    return f;
  } else if (!strcmp(kind, "error")) {
    TVMFFIByteArray k = ba("ValueError"), m = ba("message"), b = ba("");
    TVMFFIObjectHandle e = NULL;
    TVMFFIErrorCreate(&k, &m, &b, &e);
    return e;
  } else if (!strcmp(kind, "opaque")) {
    TVMFFIObjectHandle h = NULL;
    TVMFFIObjectCreateOpaque((void*)2, kTVMFFIOpaquePyObject, free_resource, &h);
    return h;
  }
  return out.type_index >= kTVMFFIStaticObjectBegin ? out.v_obj : NULL;
}

static int32_t new_type(const char* key, int32_t parent, int32_t depth) {
  TVMFFIByteArray k = ba(key);
  return TVMFFITypeGetOrAllocIndex(&k, -1, depth, 0, 1, parent);
}

/* Calls `global` on an Array whose header claims type `ti`. */
static void array_as(const char* label, const char* global, int32_t ti) {
  TVMFFIAny arr, args[2], out;
  memset(args, 0, sizeof(args));
  args[0].type_index = args[1].type_index = kTVMFFIInt;
  args[0].v_int64 = 5;
  args[1].v_int64 = 6;
  if (call_global("ffi.Array", args, 2, &arr) != 0) return drop_error();
  int32_t real = arr.v_obj->type_index;
  arr.v_obj->type_index = ti;
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = ti;
  a.v_obj = arr.v_obj;
  int rc = call_global(global, &a, 1, &out);
  if (rc == 0)
    printf("%s: accepted, %s -> %lld\n", label, global, (long long)out.v_int64);
  else
    printf("%s: refused\n", label);
  if (rc != 0) drop_error();
  arr.v_obj->type_index = real;
  TVMFFIObjectDecRef(arr.v_obj);
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int64_t live_start = tvmffi_rt_live_objects();
  const char* kinds[] = {"string", "bytes", "array", "map", "shape", "function", "error",
                         "opaque"};
  for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); ++i) {
    resource_freed = 0;
    weak_cycle(kinds[i], make(kinds[i]));
    plain_cycle(kinds[i], make(kinds[i]));
    if (!strcmp(kinds[i], "function") || !strcmp(kinds[i], "opaque"))
      printf("%s: resource freed %d times\n", kinds[i], resource_freed);
  }
  {
    int64_t live0 = tvmffi_rt_live_objects();
    TVMFFIObjectHandle f = NULL;
    resource_freed = 0;
    TVMFFIFunctionCreate((void*)1, noop_call, drop_weak_during_cleanup, &f);
    drop_weak_of = (TVMFFIObject*)f;
    __atomic_fetch_add(&drop_weak_of->combined_ref_count, WEAK_ONE, __ATOMIC_RELAXED);
    TVMFFIObjectDecRef(f);
    drop_weak_of = NULL;
    printf("weak dropped during strong release: %+lld (cleanup ran %d times)\n",
           (long long)(tvmffi_rt_live_objects() - live0), resource_freed);
  }
  printf("live objects delta: %lld\n", (long long)(tvmffi_rt_live_objects() - live_start));

  /* Object -> probe.Other (1) -> probe.OtherChild (2) -> probe.OtherGrandChild (3),
   * Object -> ffi.Array (1) -> probe.ArrayChild (2) -> probe.ArrayGrandChild (3) */
  int32_t other = new_type("probe.Other", kTVMFFIObject, 1);
  int32_t other_child = new_type("probe.OtherChild", other, 2);
  int32_t other_grand = new_type("probe.OtherGrandChild", other_child, 3);
  int32_t array_child = new_type("probe.ArrayChild", kTVMFFIArray, 2);
  int32_t array_grand = new_type("probe.ArrayGrandChild", array_child, 3);
  array_as("ffi.Array itself", "ffi.ArraySize", kTVMFFIArray);
  array_as("derived from Array (depth 2)", "ffi.ArraySize", array_child);
  array_as("derived from Array (depth 3)", "ffi.ArraySize", array_grand);
  array_as("unrelated, same depth", "ffi.ArraySize", other);
  array_as("unrelated, deeper (depth 2)", "ffi.ArraySize", other_child);
  array_as("unrelated, deeper (depth 3)", "ffi.ArraySize", other_grand);
  array_as("Map (same depth)", "ffi.ArraySize", kTVMFFIMap);
  return 0;
}
