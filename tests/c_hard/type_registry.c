/* Registers many fields, methods and attribute values on types and reads
 * them back (issue 11: the method array of a type overflowed once it grew).
 * Prints one line per check; exit status 1 on a wrong value. Run under
 * ASan (with leak detection) by tests/test_hardening_sanitize.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tvm/ffi/c_api.h>

static TVMFFIByteArray ba(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}

static int fail(const char* what) {
  printf("FAIL %s\n", what);
  return 1;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IONBF, 0);
  int n = argc > 1 ? atoi(argv[1]) : 100;
  TVMFFIByteArray key = ba("probe.ManyMethods");
  int32_t ti = TVMFFITypeGetOrAllocIndex(&key, -1, 1, 0, 1, kTVMFFIObject);
  if (ti < kTVMFFIDynObjectBegin) return fail("type index");
  char name[32];
  int rejected = 0;
  for (int i = 0; i < n; ++i) {
    TVMFFIMethodInfo m;
    memset(&m, 0, sizeof(m));
    if (i % 4 == 0) {
      /* a registration that fails (a NULL raw string cannot be owned)
       * must leave the type as it was */
      m.name = ba("rejected");
      m.method.type_index = kTVMFFIRawStr;
      m.method.v_c_str = NULL;
      if (TVMFFITypeRegisterMethod(ti, &m) == 0) return fail("bad method accepted");
      TVMFFIObjectHandle err = NULL;
      TVMFFIErrorMoveFromRaised(&err);
      if (err == NULL) return fail("no error raised");
      TVMFFIObjectDecRef(err);
      ++rejected;
    }
    snprintf(name, sizeof(name), "method_%d", i);
    m.name = ba(name);
    m.doc = ba(i % 2 ? "odd" : "");
    m.method.type_index = kTVMFFIInt;
    m.method.v_int64 = 1000 + i;
    if (TVMFFITypeRegisterMethod(ti, &m) != 0) return fail("register method");
    TVMFFIFieldInfo f;
    memset(&f, 0, sizeof(f));
    snprintf(name, sizeof(name), "field_%d", i);
    f.name = ba(name);
    f.size = 8;
    f.offset = 24 + 8 * i;
    f.field_static_type_index = kTVMFFIInt;
    if (TVMFFITypeRegisterField(ti, &f) != 0) return fail("register field");
  }
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
  printf("methods %d fields %d\n", (int)info->num_methods, (int)info->num_fields);
  for (int i = 0; i < n; ++i) {
    snprintf(name, sizeof(name), "method_%d", i);
    const TVMFFIMethodInfo* m = &info->methods[i];
    if (m->name.size != strlen(name) || memcmp(m->name.data, name, m->name.size) != 0 ||
        m->method.type_index != kTVMFFIInt || m->method.v_int64 != 1000 + i)
      return fail("method read back");
    snprintf(name, sizeof(name), "field_%d", i);
    const TVMFFIFieldInfo* f = &info->fields[i];
    if (f->name.size != strlen(name) || memcmp(f->name.data, name, f->name.size) != 0 ||
        f->offset != 24 + 8 * i)
      return fail("field read back");
  }
  printf("read back %d methods and %d fields; %d rejected\n", n, n, rejected);
  /* attribute values on many types of one column; a second value is refused */
  TVMFFIByteArray col = ba("__probe_attr__");
  TVMFFIAny first;
  memset(&first, 0, sizeof(first));
  first.type_index = kTVMFFIInt;
  first.v_int64 = 7; /* a low index first: the column grows later */
  if (TVMFFITypeRegisterAttr(kTVMFFIObject, &col, &first) != 0) return fail("register attr");
  for (int i = 0; i < n; ++i) {
    snprintf(name, sizeof(name), "probe.Attr%d", i);
    TVMFFIByteArray k = ba(name);
    int32_t t = TVMFFITypeGetOrAllocIndex(&k, -1, 1, 0, 1, kTVMFFIObject);
    TVMFFIAny v;
    memset(&v, 0, sizeof(v));
    v.type_index = kTVMFFIInt;
    v.v_int64 = i;
    if (TVMFFITypeRegisterAttr(t, &col, &v) != 0) return fail("register attr");
    v.v_int64 = 2 * i;
    if (TVMFFITypeRegisterAttr(t, &col, &v) == 0) return fail("a second value was accepted");
    TVMFFIObjectHandle err = NULL;
    TVMFFIErrorMoveFromRaised(&err);
    if (!err) return fail("no error for a second value");
    TVMFFIObjectDecRef(err);
  }
  const TVMFFITypeAttrColumn* c = TVMFFIGetTypeAttrColumn(&col);
  int64_t sum = 0;
  for (int32_t i = 0; c && i < c->size; ++i)
    if (c->data[i].type_index == kTVMFFIInt) sum += c->data[i].v_int64;
  printf("attr sum %lld\n", (long long)sum);
  return 0;
}
