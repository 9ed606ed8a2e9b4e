/* The List and Dict globals through their whole life: growth, in-place
 * changes, erase, self-replacement, conversion hooks, sentinels. Prints a
 * summary; the live-object count must come back to where it started.
 * Run under ASan with leak detection by tests/test_hardening_sanitize.py. */
#include <stdio.h>
#include <string.h>

#include <tvm/ffi/c_api.h>
#include <tvmffi/rt.h>

static TVMFFIAny i64(int64_t v) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}

static TVMFFIAny str(const char* s) {
  TVMFFIAny a;
  TVMFFIByteArray b = {s, strlen(s)};
  TVMFFIStringFromByteArray(&b, &a);
  return a;
}

static void release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(a->v_obj);
  memset(a, 0, sizeof(*a));
}

static int failures;
/* Calls global `name`; keeps the result in *out (release it) and drops a
 * raised error (counted when `expect_ok`). */
static int call(const char* name, TVMFFIAny* args, int n, TVMFFIAny* out, int expect_ok) {
  TVMFFIByteArray b = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  TVMFFIAny dummy;
  if (!out) out = &dummy;
  memset(out, 0, sizeof(*out));
  if (TVMFFIFunctionGetGlobal(&b, &f) != 0 || !f) {
    printf("missing %s\n", name);
    ++failures;
    return -1;
  }
  int rc = TVMFFIFunctionCall(f, args, n, out);
  TVMFFIObjectDecRef(f);
  if (rc != 0) {
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err);
    if (err) TVMFFIObjectDecRef(err);
    if (expect_ok) {
      printf("%s failed\n", name);
      ++failures;
    }
  }
  if (out == &dummy) release(&dummy);
  return rc;
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int64_t live0 = tvmffi_rt_live_objects();
  TVMFFIAny d, l, r, args[4];
  call("ffi.Dict", NULL, 0, &d, 1);
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 200; ++i) {
      char key[32];
      snprintf(key, sizeof(key), "key number %d", i);
      args[0] = d;
      args[1] = str(key);
      args[2] = i % 2 ? i64(i) : str(key);
      call("ffi.DictSetItem", args, 3, NULL, 1);
      release(&args[1]);
      release(&args[2]);
    }
    for (int i = 0; i < 200; i += 3) {
      args[0] = d;
      args[1] = i64(i); /* absent keys: no-op */
      call("ffi.DictErase", args, 2, NULL, 1);
      char key[32];
      snprintf(key, sizeof(key), "key number %d", i);
      args[1] = str(key);
      call("ffi.DictErase", args, 2, NULL, 1);
      release(&args[1]);
    }
    args[0] = d;
    call("ffi.DictSize", args, 1, &r, 1);
    printf("round %d: dict size %lld\n", round, (long long)r.v_int64);
    if (round == 1) call("ffi.DictClear", args, 1, NULL, 1);
  }
  args[0] = d;
  args[1] = str("not there");
  call("ffi.DictGetItem", args, 2, NULL, 0);
  call("ffi.DictGetItemOrMissing", args, 2, &r, 1);
  release(&r);
  release(&args[1]);
  call("ffi.DictForwardIterFunctor", args, 1, &r, 1);
  release(&r);

  call("ffi.List", NULL, 0, &l, 1);
  for (int i = 0; i < 300; ++i) {
    args[0] = l;
    args[1] = i % 3 ? i64(i) : str("a heap string in a list");
    call("ffi.ListAppend", args, 2, NULL, 1);
    release(&args[1]);
  }
  args[0] = l;
  args[1] = i64(10);
  args[2] = i64(200);
  args[3] = l; /* replaced by itself */
  call("ffi.ListReplaceSlice", args, 4, NULL, 1);
  call("ffi.ListEraseRange", args, 3, NULL, 1);
  call("ffi.ListPop", args, 2, &r, 1);
  release(&r);
  args[1] = i64(1);
  args[2] = d; /* a list holding the dict */
  call("ffi.ListInsert", args, 3, NULL, 1);
  call("ffi.ListReverse", args, 1, NULL, 1);
  args[1] = i64(100000);
  call("ffi.ListGetItem", args, 2, NULL, 0);
  call("ffi.ListSize", args, 1, &r, 1);
  printf("list size %lld\n", (long long)r.v_int64);
  /* conversions through the hooks: List -> Array, Dict -> Map */
  TVMFFIByteArray col = {"__ffi_convert__", 15};
  const TVMFFITypeAttrColumn* c = TVMFFIGetTypeAttrColumn(&col);
  int32_t targets[2] = {kTVMFFIArray, kTVMFFIMap};
  TVMFFIAny sources[2] = {l, d};
  for (int k = 0; k < 2; ++k) {
    TVMFFIAny conv;
    memset(&conv, 0, sizeof(conv));
    if (TVMFFIFunctionCall(c->data[targets[k]].v_obj, &sources[k], 1, &conv) != 0) {
      printf("convert failed\n");
      ++failures;
    }
    printf("converted to type %d\n", (int)conv.type_index);
    release(&conv);
  }
  call("ffi.ListClear", args, 1, NULL, 1);
  release(&l);
  release(&d);
  printf("failures %d, live objects delta %lld\n", failures,
         (long long)(tvmffi_rt_live_objects() - live0));
  return failures != 0;
}
