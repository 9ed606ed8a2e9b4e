/* Exercises the runtime core through our public headers and prints one
 * line per fact; tests/test_runtime_core.py compares the whole output. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvmffi/rt.h>

#define CHECK(cond)                                                      \
  do {                                                                   \
    if (!(cond)) {                                                       \
      printf("CHECK FAILED line %d: %s\n", __LINE__, #cond);            \
      exit(1);                                                           \
    }                                                                    \
  } while (0)

static TVMFFIByteArray ba(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}

/* Prints "<kind>: <message>" of the raised error and releases it. */
static void print_raised(const char* label) {
  TVMFFIObjectHandle e = NULL;
  TVMFFIErrorMoveFromRaised(&e);
  if (!e) {
    printf("%s: no error\n", label);
    return;
  }
  TVMFFIErrorCell* c = tvmffi_c_error_cell(e);
  printf("%s: %.*s: %.*s\n", label, (int)c->kind.size, c->kind.data, (int)c->message.size,
         c->message.data);
  TVMFFIObjectDecRef(e);
}

static void print_any_str(const char* label, const TVMFFIAny* a) {
  TVMFFIByteArray b = tvmffi_c_any_bytes(a);
  printf("%s: type=%d len=%zu \"%.*s\"\n", label, a->type_index, b.size, (int)b.size, b.data);
}

/* ---- objects ---- */
static int opaque_deleted;
static void opaque_deleter(void* h) { opaque_deleted += (int)(intptr_t)h; }

static void test_objects(void) {
  int64_t live0 = tvmffi_rt_live_objects();
  int64_t live_py0 = tvmffi_rt_live_objects_of_type(kTVMFFIOpaquePyObject);
  TVMFFIObjectHandle o;
  CHECK(TVMFFIObjectCreateOpaque((void*)(intptr_t)7, kTVMFFIOpaquePyObject, opaque_deleter, &o) == 0);
  printf("opaque type=%d handle=%d strong=%u weak=%u\n", tvmffi_c_type_index(o),
         (int)(intptr_t)tvmffi_c_opaque_cell(o)->handle, tvmffi_rt_strong_count(o),
         tvmffi_rt_weak_count(o));
  printf("live delta=%lld of_type delta=%lld\n", (long long)(tvmffi_rt_live_objects() - live0),
         (long long)(tvmffi_rt_live_objects_of_type(kTVMFFIOpaquePyObject) - live_py0));
  TVMFFIObjectIncRef(o);
  TVMFFIObjectIncRef(o);
  printf("after 2 incref strong=%u combined=0x%llx\n", tvmffi_rt_strong_count(o),
         (unsigned long long)((TVMFFIObject*)o)->combined_ref_count);
  TVMFFIObjectDecRef(o);
  TVMFFIObjectDecRef(o);
  printf("after 2 decref strong=%u deleted=%d\n", tvmffi_rt_strong_count(o), opaque_deleted);
  TVMFFIObjectDecRef(o);
  printf("after last decref deleted=%d live delta=%lld\n", opaque_deleted,
         (long long)(tvmffi_rt_live_objects() - live0));
  printf("create opaque with POD index: rc=%d\n",
         TVMFFIObjectCreateOpaque(NULL, kTVMFFIInt, NULL, &o));
  print_raised("  error");
  printf("incref/decref NULL: %d %d\n", TVMFFIObjectIncRef(NULL), TVMFFIObjectDecRef(NULL));

  /* live counters for the three index ranges: per-thread slot (< 1024),
   * shared overflow slot (< 16384), and beyond the table (total only) */
  const int32_t idx[3] = {100, 5000, 20000};
  int64_t of0[3];
  for (int i = 0; i < 3; ++i) of0[i] = tvmffi_rt_live_objects_of_type(idx[i]);
  live0 = tvmffi_rt_live_objects();
  TVMFFIObjectHandle objs[3];
  for (int i = 0; i < 3; ++i)
    CHECK(TVMFFIObjectCreateOpaque((void*)(intptr_t)1, idx[i], opaque_deleter, &objs[i]) == 0);
  printf("ranges live delta=%lld of_type deltas=%lld,%lld,%lld\n",
         (long long)(tvmffi_rt_live_objects() - live0),
         (long long)(tvmffi_rt_live_objects_of_type(idx[0]) - of0[0]),
         (long long)(tvmffi_rt_live_objects_of_type(idx[1]) - of0[1]),
         (long long)(tvmffi_rt_live_objects_of_type(idx[2]) - of0[2]));
  opaque_deleted = 0;
  for (int i = 0; i < 3; ++i) TVMFFIObjectDecRef(objs[i]);
  printf("ranges released deleted=%d live delta=%lld\n", opaque_deleted,
         (long long)(tvmffi_rt_live_objects() - live0));

  /* an outside weak reference (added the way C++ weak references do) keeps
   * the storage after the last strong DecRef; the weak DecRef frees it */
  CHECK(TVMFFIObjectCreateOpaque((void*)(intptr_t)5, kTVMFFIOpaquePyObject, opaque_deleter, &o) == 0);
  live0 = tvmffi_rt_live_objects();
  __atomic_fetch_add(&((TVMFFIObject*)o)->combined_ref_count, (uint64_t)1 << 32, __ATOMIC_RELAXED);
  opaque_deleted = 0;
  TVMFFIObjectDecRef(o);
  printf("weak held: deleted=%d weak=%u live delta=%lld\n", opaque_deleted,
         tvmffi_rt_weak_count(o), (long long)(tvmffi_rt_live_objects() - live0));
  if (__atomic_sub_fetch(&((TVMFFIObject*)o)->combined_ref_count, (uint64_t)1 << 32,
                         __ATOMIC_ACQ_REL) == 0)
    ((TVMFFIObject*)o)->deleter(o, kTVMFFIObjectDeleterFlagBitMaskWeak);
  printf("weak released: live delta=%lld\n", (long long)(tvmffi_rt_live_objects() - live0));
}

/* ---- types ---- */
static int creator_called;
static int my_creator(TVMFFIObjectHandle* out) {
  creator_called++;
  *out = NULL;
  return 0;
}
static int my_getter(void* field, TVMFFIAny* result) {
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = *(int64_t*)field;
  return 0;
}

static void print_type(int32_t idx) {
  const TVMFFITypeInfo* t = TVMFFIGetTypeInfo(idx);
  if (!t) {
    printf("type %d: none\n", idx);
    return;
  }
  if (idx >= kTVMFFIDynObjectBegin) /* dynamic indices depend on registration order */
    printf("type dyn(%s): key=%.*s depth=%d ancestors=[", t->type_index == idx ? "ok" : "bad",
           (int)t->type_key.size, t->type_key.data, t->type_depth);
  else
    printf("type %d: key=%.*s depth=%d ancestors=[", t->type_index, (int)t->type_key.size,
           t->type_key.data, t->type_depth);
  for (int32_t d = 0; d < t->type_depth; ++d)
    printf("%s%d", d ? "," : "", t->type_ancestors[d]->type_index);
  printf("] fields=%d methods=%d metadata=%s\n", t->num_fields, t->num_methods,
         t->metadata ? "yes" : "no");
}

static int32_t alloc_type(const char* key, int32_t slots, int32_t overflow, int32_t parent) {
  TVMFFIByteArray k = ba(key);
  const TVMFFITypeInfo* p = TVMFFIGetTypeInfo(parent);
  return TVMFFITypeGetOrAllocIndex(&k, -1, p ? p->type_depth + 1 : 0, slots, overflow, parent);
}

static void test_types(void) {
  for (int32_t i = 0; i <= 13; ++i) print_type(i);
  for (int32_t i = 64; i <= 78; ++i) print_type(i);
  print_type(14);
  print_type(79);
  int32_t idx = -5;
  TVMFFIByteArray k = ba("ffi.Map");
  int rc0 = TVMFFITypeKeyToIndex(&k, &idx);
  printf("KeyToIndex ffi.Map rc=%d idx=%d\n", rc0, idx);
  k = ba("no.such.Type");
  printf("KeyToIndex missing rc=%d\n", TVMFFITypeKeyToIndex(&k, &idx));
  print_raised("  error");

  int32_t a = alloc_type("test.A", 0, 1, kTVMFFIObject);
  int32_t b = alloc_type("test.B", 3, 0, kTVMFFIObject);
  int32_t b1 = alloc_type("test.B1", 0, 0, b);
  int32_t b2 = alloc_type("test.B2", 1, 1, b);
  int32_t b2a = alloc_type("test.B2a", 0, 1, b2);
  int32_t b3 = alloc_type("test.B3", 0, 1, b);
  printf("alloc: A>=128:%d B=A+%d B1=B+%d B2=B+%d B2a=B2+%d\n", a >= kTVMFFIDynObjectBegin, b - a,
         b1 - b, b2 - b, b2a - b2);
  printf("B3 (no slot left, parent forbids overflow) = %d\n", b3);
  print_raised("  error");
  printf("again A same=%d\n", alloc_type("test.A", 5, 1, kTVMFFIObject) == a);
  k = ba("test.B2a");
  printf("query B2a same=%d\n", TVMFFITypeGetOrAllocIndex(&k, -1, 0, 0, 0, -2) == b2a);
  k = ba("test.Missing");
  printf("query missing=%d\n", TVMFFITypeGetOrAllocIndex(&k, -1, 0, 0, 0, -2));
  const TVMFFITypeInfo* t = TVMFFIGetTypeInfo(b2a);
  printf("B2a depth=%d ancestors=%d,%s,%s\n", t->type_depth, t->type_ancestors[0]->type_index,
         t->type_ancestors[1]->type_index == b ? "B" : "?",
         t->type_ancestors[2]->type_index == b2 ? "B2" : "?");
  int32_t c = alloc_type("test.C", 0, 1, a);
  printf("C after B's range: %d\n", c > b + 3);
  printf("valid: A=%d 13=%d 14=%d 78=%d 79=%d end>B2a=%d\n", tvmffi_rt_type_index_valid(a),
         tvmffi_rt_type_index_valid(13), tvmffi_rt_type_index_valid(14),
         tvmffi_rt_type_index_valid(78), tvmffi_rt_type_index_valid(79),
         tvmffi_rt_type_index_end() > b2a);
  k = ba("test.Static");
  printf("static 1000: %d\n", TVMFFITypeGetOrAllocIndex(&k, 1000, 1, 0, 1, kTVMFFIObject));
  k = ba("test.Static2");
  printf("static 1000 again (taken): %d\n",
         TVMFFITypeGetOrAllocIndex(&k, 1000, 1, 0, 1, kTVMFFIObject));
  print_raised("  error");

  /* reflection */
  TVMFFIFieldInfo f;
  memset(&f, 0, sizeof(f));
  f.name = ba("value");
  f.doc = ba("the value");
  f.flags = kTVMFFIFieldFlagBitMaskWritable;
  f.size = 8;
  f.alignment = 8;
  f.offset = 24;
  f.getter = my_getter;
  f.field_static_type_index = kTVMFFIInt;
  f.default_value_or_factory.type_index = kTVMFFIRawStr;
  f.default_value_or_factory.v_c_str = "a default longer than seven";
  CHECK(TVMFFITypeRegisterField(a, &f) == 0);
  f.name = ba("other");
  f.default_value_or_factory.type_index = kTVMFFINone;
  CHECK(TVMFFITypeRegisterField(a, &f) == 0);
  TVMFFIObjectHandle fn;
  extern int add_one(void*, const TVMFFIAny*, int32_t, TVMFFIAny*);
  CHECK(TVMFFIFunctionCreate(NULL, add_one, NULL, &fn) == 0);
  TVMFFIMethodInfo m;
  memset(&m, 0, sizeof(m));
  m.name = ba("inc");
  m.doc = ba("adds one");
  m.method.type_index = kTVMFFIFunction;
  m.method.v_obj = (TVMFFIObject*)fn;
  CHECK(TVMFFITypeRegisterMethod(a, &m) == 0);
  printf("method holds fn: strong=%u\n", tvmffi_rt_strong_count(fn));
  TVMFFITypeMetadata md;
  memset(&md, 0, sizeof(md));
  md.doc = ba("type A");
  md.creator = my_creator;
  md.total_size = 32;
  md.structural_eq_hash_kind = kTVMFFISEqHashKindTreeNode;
  CHECK(TVMFFITypeRegisterMetadata(a, &md) == 0);
  print_type(a);
  t = TVMFFIGetTypeInfo(a);
  TVMFFIAny dv = t->fields[0].default_value_or_factory;
  print_any_str("field0 default", &dv);
  printf("field0 name=%.*s doc=%.*s offset=%lld; field1=%.*s\n", (int)t->fields[0].name.size,
         t->fields[0].name.data, (int)t->fields[0].doc.size, t->fields[0].doc.data,
         (long long)t->fields[0].offset, (int)t->fields[1].name.size, t->fields[1].name.data);
  int64_t raw = 41;
  TVMFFIAny got;
  t->fields[0].getter(&raw, &got);
  printf("getter -> %lld\n", (long long)got.v_int64);
  TVMFFIObjectHandle dummy;
  t->metadata->creator(&dummy);
  printf("metadata doc=%.*s total_size=%d kind=%d creator_called=%d\n",
         (int)t->metadata->doc.size, t->metadata->doc.data, t->metadata->total_size,
         (int)t->metadata->structural_eq_hash_kind, creator_called);
  printf("method name=%.*s type=%d\n", (int)t->methods[0].name.size, t->methods[0].name.data,
         t->methods[0].method.type_index);
  printf("register field on bad type rc=%d\n", TVMFFITypeRegisterField(99999, &f));
  print_raised("  error");

  /* attribute columns */
  TVMFFIByteArray an = ba("test.__repr__");
  printf("column before: %s\n", TVMFFIGetTypeAttrColumn(&an) ? "present" : "NULL");
  TVMFFIAny v;
  v.type_index = kTVMFFIInt;
  v.zero_padding = 0;
  v.v_int64 = 5;
  CHECK(TVMFFITypeRegisterAttr(a, &an, &v) == 0);
  v.v_int64 = 6;
  CHECK(TVMFFITypeRegisterAttr(kTVMFFIStr, &an, &v) == 0);
  const TVMFFITypeAttrColumn* col = TVMFFIGetTypeAttrColumn(&an);
  printf("column: begin=%d size>A=%d [A]=%lld [Str]=%lld [Bytes].type=%d\n", col->begin_index,
         col->size > a, (long long)col->data[a - col->begin_index].v_int64,
         (long long)col->data[kTVMFFIStr - col->begin_index].v_int64,
         col->data[kTVMFFIBytes - col->begin_index].type_index);
  v.v_int64 = 7;
  CHECK(TVMFFITypeRegisterAttr(a, &an, &v) != 0); /* set once, as the official runtime */
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  CHECK(err != NULL);
  TVMFFIObjectDecRef(err);
  printf("column after a refused second value [A]=%lld\n",
         (long long)col->data[a - col->begin_index].v_int64);
  TVMFFIObjectDecRef(fn);
}

/* ---- strings ---- */
/* Every size from 0 to 200 (the inline copies cover 8..64), str and bytes,
 * at two source offsets: content, length and terminating NUL exact. */
static void test_string_sizes(void) {
  char src[208];
  for (int i = 0; i < 208; ++i) src[i] = (char)('!' + (i * 7) % 90);
  int bad = 0;
  for (int off = 0; off < 2; ++off) {
    for (size_t n = 0; n <= 200; ++n) {
      for (int bytes = 0; bytes < 2; ++bytes) {
        TVMFFIByteArray in = {src + off, n};
        TVMFFIAny out;
        int rc = bytes ? TVMFFIBytesFromByteArray(&in, &out) : TVMFFIStringFromByteArray(&in, &out);
        TVMFFIByteArray got = tvmffi_c_any_bytes(&out);
        if (rc != 0 || got.size != n || memcmp(got.data, src + off, n) != 0) ++bad;
        if (n > 7 && got.data[n] != '\0') ++bad;
        if (out.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(out.v_obj);
      }
    }
  }
  printf("string sizes 0..200: bad=%d\n", bad);
}

static void test_strings(void) {
  test_string_sizes();
  TVMFFIAny out;
  TVMFFIByteArray in = ba("abc");
  CHECK(TVMFFIStringFromByteArray(&in, &out) == 0);
  print_any_str("str abc", &out);
  printf("  small_str_len=%u v_bytes[3]=%d\n", out.small_str_len, out.v_bytes[3]);
  in = ba("1234567");
  CHECK(TVMFFIStringFromByteArray(&in, &out) == 0);
  print_any_str("str 7", &out);
  in = ba("12345678");
  CHECK(TVMFFIStringFromByteArray(&in, &out) == 0);
  print_any_str("str 8", &out);
  TVMFFIByteArray* cell = tvmffi_c_bytes(out.v_obj);
  printf("  heap: data follows cell=%d nul=%d strong=%u\n",
         cell->data == (const char*)(cell + 1), cell->data[8] == 0,
         tvmffi_rt_strong_count(out.v_obj));
  TVMFFIObjectDecRef(out.v_obj);
  TVMFFIByteArray bin = {"a\0b", 3};
  CHECK(TVMFFIBytesFromByteArray(&bin, &out) == 0);
  printf("bytes a\\0b: type=%d len=%u mid=%d\n", out.type_index, out.small_str_len, out.v_bytes[1]);
  TVMFFIByteArray bin2 = {"0123456789\0abc", 14};
  CHECK(TVMFFIBytesFromByteArray(&bin2, &out) == 0);
  cell = tvmffi_c_bytes(out.v_obj);
  printf("bytes 14: type=%d size=%zu byte10=%d tail=%s\n", out.type_index, cell->size,
         cell->data[10], cell->data + 11);
  TVMFFIObjectDecRef(out.v_obj);
  TVMFFIByteArray empty = {NULL, 0};
  CHECK(TVMFFIStringFromByteArray(&empty, &out) == 0);
  print_any_str("str empty", &out);

  /* AnyView -> owned Any */
  TVMFFIAny view;
  memset(&view, 0, sizeof(view));
  view.type_index = kTVMFFIRawStr;
  view.v_c_str = "short";
  CHECK(TVMFFIAnyViewToOwnedAny(&view, &out) == 0);
  print_any_str("view raw short", &out);
  view.v_c_str = "a raw string longer than seven";
  CHECK(TVMFFIAnyViewToOwnedAny(&view, &out) == 0);
  print_any_str("view raw long", &out);
  TVMFFIObjectDecRef(out.v_obj);
  TVMFFIByteArray bytes = ba("bytes-view-long");
  view.type_index = kTVMFFIByteArrayPtr;
  view.v_ptr = &bytes;
  CHECK(TVMFFIAnyViewToOwnedAny(&view, &out) == 0);
  print_any_str("view bytearray", &out);
  TVMFFIObjectHandle s_obj = out.v_obj;
  view = out;
  CHECK(TVMFFIAnyViewToOwnedAny(&view, &out) == 0);
  printf("view object: same=%d strong=%u\n", out.v_obj == (TVMFFIObject*)s_obj,
         tvmffi_rt_strong_count(s_obj));
  TVMFFIObjectDecRef(s_obj);
  view.type_index = kTVMFFIObjectRValueRef;
  TVMFFIObjectHandle slot = s_obj;
  view.v_ptr = &slot;
  CHECK(TVMFFIAnyViewToOwnedAny(&view, &out) == 0);
  printf("rvalue ref moved: same=%d slot_null=%d strong=%u\n",
         out.v_obj == (TVMFFIObject*)s_obj, slot == NULL, tvmffi_rt_strong_count(s_obj));
  printf("rvalue ref again rc=%d\n", TVMFFIAnyViewToOwnedAny(&view, &out));
  print_raised("  error");
  TVMFFIObjectDecRef(s_obj);
  memset(&view, 0, sizeof(view));
  view.type_index = kTVMFFIFloat;
  view.v_float64 = 2.5;
  CHECK(TVMFFIAnyViewToOwnedAny(&view, &out) == 0);
  printf("view float: type=%d v=%g\n", out.type_index, out.v_float64);
  view.type_index = kTVMFFIDevice;
  view.v_device.device_type = kDLCUDA;
  view.v_device.device_id = 3;
  CHECK(TVMFFIAnyViewToOwnedAny(&view, &out) == 0);
  printf("view device: type=%d dev=%d:%d\n", out.type_index, (int)out.v_device.device_type,
         out.v_device.device_id);
}

/* ---- functions ---- */
int add_one(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)self;
  if (n != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one expects one int");
    return -1;
  }
  ret->type_index = kTVMFFIInt;
  ret->zero_padding = 0;
  ret->v_int64 = args[0].v_int64 + 1;
  return 0;
}

static int self_deleted;
static void self_deleter(void* self) { self_deleted = *(int*)self; }
static int read_self(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)args;
  ret->type_index = kTVMFFIInt;
  ret->zero_padding = 0;
  ret->v_int64 = *(int*)self * 100 + n;
  return 0;
}

static TVMFFIAny call1(TVMFFIObjectHandle f, TVMFFIAny arg, int* rc) {
  TVMFFIAny res;
  memset(&res, 0, sizeof(res));
  *rc = TVMFFIFunctionCall(f, &arg, 1, &res);
  return res;
}

static TVMFFIAny int_any(int64_t v) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}

static void test_functions(void) {
  TVMFFIObjectHandle f;
  CHECK(TVMFFIFunctionCreate(NULL, add_one, NULL, &f) == 0);
  printf("function type=%d cpp_call=%p\n", tvmffi_c_type_index(f),
         tvmffi_c_function_cell(f)->cpp_call);
  int rc;
  TVMFFIAny r = call1(f, int_any(41), &rc);
  printf("call add_one(41): rc=%d type=%d v=%lld\n", rc, r.type_index, (long long)r.v_int64);
  TVMFFIAny bad = tvmffi_c_raw_str("x");
  r = call1(f, bad, &rc);
  printf("call add_one(\"x\"): rc=%d\n", rc);
  print_raised("  error");
  /* the cell's safe_call takes the function object itself */
  TVMFFIAny arg = int_any(1);
  TVMFFIAny res = tvmffi_c_none();
  rc = tvmffi_c_function_cell(f)->safe_call(f, &arg, 1, &res);
  printf("direct safe_call: rc=%d v=%lld\n", rc, (long long)res.v_int64);

  static int self_val = 9;
  TVMFFIObjectHandle g;
  CHECK(TVMFFIFunctionCreate(&self_val, read_self, self_deleter, &g) == 0);
  TVMFFIAny args2[2] = {int_any(0), int_any(0)};
  res = tvmffi_c_none();
  CHECK(TVMFFIFunctionCall(g, args2, 2, &res) == 0);
  printf("call with self: %lld\n", (long long)res.v_int64);

  TVMFFIByteArray name = ba("test.add_one");
  printf("set global: %d\n", TVMFFIFunctionSetGlobal(&name, f, 0));
  printf("set again without override: %d\n", TVMFFIFunctionSetGlobal(&name, g, 0));
  print_raised("  error");
  TVMFFIObjectHandle h = NULL;
  CHECK(TVMFFIFunctionGetGlobal(&name, &h) == 0);
  printf("get global: same=%d strong=%u\n", h == f, tvmffi_rt_strong_count(f));
  TVMFFIObjectDecRef(h);
  printf("set with override: %d\n", TVMFFIFunctionSetGlobal(&name, g, 1));
  CHECK(TVMFFIFunctionGetGlobal(&name, &h) == 0);
  r = tvmffi_c_none();
  CHECK(TVMFFIFunctionCall(h, args2, 1, &r) == 0);
  printf("get after override: is_g=%d call=%lld\n", h == g, (long long)r.v_int64);
  TVMFFIObjectDecRef(h);
  TVMFFIByteArray missing = ba("test.no_such_function");
  h = (void*)1;
  rc = TVMFFIFunctionGetGlobal(&missing, &h);
  printf("get missing: rc=%d out=%p\n", rc, h);
  TVMFFIAny notfn;
  TVMFFIByteArray long_str = ba("not a function at all");
  CHECK(TVMFFIStringFromByteArray(&long_str, &notfn) == 0);
  printf("set non-function: %d\n", TVMFFIFunctionSetGlobal(&name, notfn.v_obj, 1));
  print_raised("  error");
  TVMFFIObjectDecRef(notfn.v_obj);

  TVMFFIMethodInfo mi;
  memset(&mi, 0, sizeof(mi));
  mi.name = ba("test.from_method_info");
  mi.doc = ba("doc");
  mi.method.type_index = kTVMFFIFunction;
  mi.method.v_obj = (TVMFFIObject*)f;
  printf("set from method info: %d\n", TVMFFIFunctionSetGlobalFromMethodInfo(&mi, 0));
  mi.method = int_any(1);
  printf("method info without function: %d\n", TVMFFIFunctionSetGlobalFromMethodInfo(&mi, 1));
  print_raised("  error");

  /* registry globals */
  TVMFFIByteArray n2 = ba("ffi.FunctionRemoveGlobal");
  TVMFFIObjectHandle rm;
  CHECK(TVMFFIFunctionGetGlobal(&n2, &rm) == 0 && rm);
  r = call1(rm, tvmffi_c_raw_str("test.from_method_info"), &rc);
  printf("remove existing: rc=%d type=%d v=%lld\n", rc, r.type_index, (long long)r.v_int64);
  r = call1(rm, tvmffi_c_raw_str("test.from_method_info"), &rc);
  printf("remove again: v=%lld\n", (long long)r.v_int64);
  h = (void*)1;
  TVMFFIByteArray n3 = ba("test.from_method_info");
  TVMFFIFunctionGetGlobal(&n3, &h);
  printf("get removed: %p\n", h);
  printf("re-add removed: %d\n", TVMFFIFunctionSetGlobal(&n3, f, 0));
  TVMFFIObjectDecRef(rm);

  TVMFFIByteArray n4 = ba("ffi.FunctionListGlobalNamesFunctor");
  TVMFFIObjectHandle lf;
  CHECK(TVMFFIFunctionGetGlobal(&n4, &lf) == 0 && lf);
  TVMFFIAny functor = tvmffi_c_none();
  CHECK(TVMFFIFunctionCall(lf, NULL, 0, &functor) == 0);
  r = call1(functor.v_obj, int_any(-1), &rc);
  int64_t count = r.v_int64;
  int seen = 0, sorted = 1;
  char prev[256] = "";
  for (int64_t i = 0; i < count; ++i) {
    TVMFFIAny s = call1(functor.v_obj, int_any(i), &rc);
    TVMFFIByteArray b = tvmffi_c_any_bytes(&s);
    char cur[256];
    snprintf(cur, sizeof(cur), "%.*s", (int)b.size, b.data);
    if (strcmp(prev, cur) > 0) sorted = 0;
    snprintf(prev, sizeof(prev), "%s", cur);
    if (strcmp(cur, "test.add_one") == 0 || strcmp(cur, "ffi.String") == 0) seen++;
    if (s.type_index >= kTVMFFIStaticObjectBegin) TVMFFIObjectDecRef(s.v_obj);
  }
  printf("names functor: count>5=%d seen=%d sorted=%d\n", count > 5, seen, sorted);
  r = call1(functor.v_obj, int_any(count), &rc);
  TVMFFIObjectHandle oor = NULL;
  TVMFFIErrorMoveFromRaised(&oor);
  printf("names functor out of range: rc=%d kind=%s\n", rc,
         oor ? tvmffi_c_error_cell(oor)->kind.data : "none");
  if (oor) TVMFFIObjectDecRef(oor);
  TVMFFIObjectDecRef(functor.v_obj);
  TVMFFIObjectDecRef(lf);

  TVMFFIByteArray n5 = ba("ffi.String");
  TVMFFIObjectHandle sf;
  CHECK(TVMFFIFunctionGetGlobal(&n5, &sf) == 0 && sf);
  r = call1(sf, tvmffi_c_raw_str("hello world!"), &rc);
  print_any_str("ffi.String(raw)", &r);
  TVMFFIObjectDecRef(r.v_obj);
  r = call1(sf, int_any(1), &rc);
  printf("ffi.String(1): rc=%d\n", rc);
  print_raised("  error");
  TVMFFIObjectDecRef(sf);
  TVMFFIByteArray n6 = ba("ffi.Bytes");
  CHECK(TVMFFIFunctionGetGlobal(&n6, &sf) == 0 && sf);
  TVMFFIByteArray bb = ba("xy");
  TVMFFIAny bv = tvmffi_c_none();
  bv.type_index = kTVMFFIByteArrayPtr;
  bv.v_ptr = &bb;
  r = call1(sf, bv, &rc);
  print_any_str("ffi.Bytes(bytearray)", &r);
  TVMFFIObjectDecRef(sf);

  TVMFFIObjectDecRef(f);
  TVMFFIObjectDecRef(g);
  printf("self deleter after last ref (registry holds g): %d\n", self_deleted);
}

/* ---- errors ---- */
static void test_errors(void) {
  printf("pending initially: %d\n", tvmffi_rt_error_pending());
  TVMFFIErrorSetRaisedFromCStr("ValueError", "bad value");
  printf("pending after raise: %d\n", tvmffi_rt_error_pending());
  TVMFFIObjectHandle e = NULL;
  TVMFFIErrorMoveFromRaised(&e);
  TVMFFIErrorCell* c = tvmffi_c_error_cell(e);
  printf("moved: type=%d kind=%s message=%s bt_len=%zu strong=%u pending=%d\n",
         tvmffi_c_type_index(e), c->kind.data, c->message.data, c->backtrace.size,
         tvmffi_rt_strong_count(e), tvmffi_rt_error_pending());
  TVMFFIObjectDecRef(e);
  e = (void*)1;
  TVMFFIErrorMoveFromRaised(&e);
  printf("move with nothing raised: %p\n", e);

  const char* parts[] = {"Argument ", NULL, "1", " mismatch in `f(x)`"};
  TVMFFIErrorSetRaisedFromCStrParts("TypeError", parts, 4);
  print_raised("parts");

  TVMFFIByteArray kind = ba("RuntimeError"), msg = ba("inner"), bt = ba("  File \"a.c\", line 1, in f\n");
  TVMFFIObjectHandle inner;
  CHECK(TVMFFIErrorCreate(&kind, &msg, &bt, &inner) == 0);
  c = tvmffi_c_error_cell(inner);
  printf("created: kind=%s message=%s backtrace=%.*s", c->kind.data, c->message.data,
         (int)c->backtrace.size, c->backtrace.data);
  TVMFFIByteArray more = ba("  File \"b.c\", line 2, in g\n");
  c->update_backtrace(inner, &more, kTVMFFIBacktraceUpdateModeAppend);
  printf("appended: %.*s", (int)c->backtrace.size, c->backtrace.data);
  c->update_backtrace(inner, &more, kTVMFFIBacktraceUpdateModeReplace);
  printf("replaced: %.*s", (int)c->backtrace.size, c->backtrace.data);

  TVMFFIObjectHandle ctx_obj;
  TVMFFIAny sv;
  TVMFFIByteArray ctxs = ba("extra context text");
  CHECK(TVMFFIStringFromByteArray(&ctxs, &sv) == 0);
  ctx_obj = sv.v_obj;
  TVMFFIByteArray k2 = ba("ValueError"), m2 = ba("outer");
  TVMFFIObjectHandle outer;
  CHECK(TVMFFIErrorCreateWithCauseAndExtraContext(&k2, &m2, NULL, inner, ctx_obj, &outer) == 0);
  c = tvmffi_c_error_cell(outer);
  printf("with cause: cause_is_inner=%d extra_is_ctx=%d inner.strong=%u ctx.strong=%u bt_len=%zu\n",
         c->cause_chain == inner, c->extra_context == ctx_obj, tvmffi_rt_strong_count(inner),
         tvmffi_rt_strong_count(ctx_obj), c->backtrace.size);
  TVMFFIErrorSetRaised(outer);
  printf("set raised: outer.strong=%u\n", tvmffi_rt_strong_count(outer));
  TVMFFIObjectDecRef(outer);
  TVMFFIErrorSetRaisedFromCStr("KeyError", "replaces the previous");
  printf("after replace: inner.strong=%u ctx.strong=%u\n", tvmffi_rt_strong_count(inner),
         tvmffi_rt_strong_count(ctx_obj));
  print_raised("replaced");
  TVMFFIObjectDecRef(inner);
  TVMFFIObjectDecRef(ctx_obj);

  const TVMFFIByteArray* b = TVMFFIBacktrace("file.c", 12, "myfn", 0);
  printf("backtrace: %.*s", (int)b->size, b->data);
  b = TVMFFIBacktrace(NULL, 0, NULL, 0);
  printf("backtrace empty: %zu\n", b->size);
  TVMFFIErrorSetRaisedFromCStr(NULL, NULL);
  print_raised("null kind");
}

/* ---- environment ---- */
static int init_calls;
static int my_init(void** result) {
  init_calls++;
  *result = &init_calls;
  return 0;
}
static int failing_init(void** result) {
  (void)result;
  TVMFFIErrorSetRaisedFromCStr("RuntimeError", "init failed");
  return -1;
}
static int deinit_calls;
static int my_deinit(void* h) {
  (void)h;
  deinit_calls++;
  return 0;
}

static size_t custom_allocs, custom_frees;
typedef struct {
  void* raw;
  TVMFFIObjectAllocHeader hdr;
} my_prefix;
static void my_delete_space(void* body) {
  custom_frees++;
  free(((my_prefix*)body - 1)->raw);
}
static void* my_allocate(size_t size, size_t alignment, int32_t type_index, void* ctx) {
  (void)alignment;
  (void)type_index;
  (void)ctx;
  my_prefix* p = (my_prefix*)malloc(sizeof(my_prefix) + size);
  p->raw = p;
  p->hdr.delete_space = my_delete_space;
  custom_allocs++;
  return p + 1;
}

static int my_tensor_alloc(DLTensor* proto, DLManagedTensorVersioned** out, void* ctx,
                           void (*set_error)(void*, const char*, const char*)) {
  (void)proto;
  (void)out;
  set_error(ctx, "RuntimeError", "unused");
  return -1;
}

static void test_env(void) {
  TVMFFIVersion v;
  TVMFFIGetVersion(&v);
  printf("version %u.%u.%u\n", v.major, v.minor, v.patch);
  printf("stream unset: %p\n", TVMFFIEnvGetStream(kDLCUDA, 0));
  TVMFFIStreamHandle old = (void*)1;
  CHECK(TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x10, &old) == 0);
  printf("set stream: old=%p now=%p other_dev=%p\n", old, TVMFFIEnvGetStream(kDLCUDA, 0),
         TVMFFIEnvGetStream(kDLCUDA, 1));
  CHECK(TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x20, &old) == 0);
  printf("set again: old=%p now=%p\n", old, TVMFFIEnvGetStream(kDLCUDA, 0));
  CHECK(TVMFFIEnvSetStream(kDLCUDA, 0, NULL, NULL) == 0);
  printf("cleared: %p\n", TVMFFIEnvGetStream(kDLCUDA, 0));
  printf("check signals: %d\n", TVMFFIEnvCheckSignals());
  printf("register capi: %d ctx: %d syslib: %d\n", TVMFFIEnvRegisterCAPI("MyCAPI", (void*)0x1),
         TVMFFIEnvModRegisterContextSymbol("__TVMFFIMyCtx", (void*)0x2),
         TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_sys_f", (void*)0x3));

  void* handle = NULL;
  int rc = TVMFFIHandleInitOnce(&handle, my_init);
  printf("init once: rc=%d calls=%d set=%d\n", rc, init_calls, handle == &init_calls);
  rc = TVMFFIHandleInitOnce(&handle, my_init);
  printf("init once again: rc=%d calls=%d\n", rc, init_calls);
  rc = TVMFFIHandleDeinitOnce(&handle, my_deinit);
  printf("deinit once: rc=%d calls=%d null=%d\n", rc, deinit_calls, handle == NULL);
  rc = TVMFFIHandleDeinitOnce(&handle, my_deinit);
  printf("deinit again: rc=%d calls=%d\n", rc, deinit_calls);
  void* h2 = NULL;
  rc = TVMFFIHandleInitOnce(&h2, failing_init);
  printf("failing init: rc=%d still_null=%d\n", rc, h2 == NULL);
  print_raised("  error");

  TVMFFICustomAllocator* def = TVMFFIGetCustomAllocator();
  printf("default allocator present: %d\n", def != NULL && def->allocate != NULL);
  static TVMFFICustomAllocator mine = {my_allocate, NULL};
  CHECK(TVMFFISetCustomAllocator(&mine) == 0);
  printf("custom installed: %d\n", TVMFFIGetCustomAllocator() == &mine);
  TVMFFIByteArray s = ba("a heap string via custom allocator");
  TVMFFIAny out;
  CHECK(TVMFFIStringFromByteArray(&s, &out) == 0);
  printf("custom: allocs=%zu frees=%zu\n", custom_allocs, custom_frees);
  TVMFFIObjectDecRef(out.v_obj);
  printf("custom after release: allocs=%zu frees=%zu\n", custom_allocs, custom_frees);
  CHECK(TVMFFISetCustomAllocator(NULL) == 0);
  printf("restored default: %d\n", TVMFFIGetCustomAllocator() == def);

  DLPackManagedTensorAllocator a0 = TVMFFIEnvGetDLPackManagedTensorAllocator();
  printf("default tensor allocator present: %d\n", a0 != NULL);
  DLPackManagedTensorAllocator prev = (DLPackManagedTensorAllocator)1;
  CHECK(TVMFFIEnvSetDLPackManagedTensorAllocator(my_tensor_alloc, 0, &prev) == 0);
  printf("set tls allocator: prev_null=%d now_mine=%d\n", prev == NULL,
         TVMFFIEnvGetDLPackManagedTensorAllocator() == my_tensor_alloc);
  CHECK(TVMFFIEnvSetDLPackManagedTensorAllocator(NULL, 0, &prev) == 0);
  printf("unset: prev_mine=%d back_to_default=%d\n", prev == my_tensor_alloc,
         TVMFFIEnvGetDLPackManagedTensorAllocator() == a0);
}

/* ---- instrumentation ---- */
static void test_instrumentation(void) {
  tvmffi_rt_set_checking(1);
  int64_t v0 = tvmffi_rt_violation_count();
  TVMFFIObjectHandle o;
  CHECK(TVMFFIObjectCreateOpaque(NULL, kTVMFFIOpaquePyObject, NULL, &o) == 0);
  TVMFFIObjectDecRef(o);
  TVMFFIObjectDecRef(o); /* misuse: already dead (kept readable by the quarantine) */
  TVMFFIObjectIncRef(o); /* misuse: IncRef from zero */
  printf("violations: %lld\n", (long long)(tvmffi_rt_violation_count() - v0));
  TVMFFIAny js;
  CHECK(tvmffi_rt_violations(&js) == 0);
  TVMFFIByteArray b = tvmffi_c_any_bytes(&js);
  printf("json starts=%d has_decref=%d has_incref=%d\n", b.size > 0 && b.data[0] == '[',
         strstr(b.data, "\"kind\": \"decref_dead\"") != NULL,
         strstr(b.data, "\"kind\": \"incref_dead\"") != NULL);
  TVMFFIObjectDecRef(js.v_obj);
  tvmffi_rt_set_checking(0);

  TVMFFIObjectHandle f;
  CHECK(TVMFFIFunctionCreate(NULL, add_one, NULL, &f) == 0);
  TVMFFIAny arg = int_any(1);
  int64_t ns[3] = {-1, -1, -1};
  printf("time_calls: rc=%d\n", tvmffi_rt_time_calls(f, &arg, 1, 1000, 3, ns));
  printf("time_calls rounds positive: %d\n", ns[0] > 0 && ns[1] > 0 && ns[2] > 0);
  TVMFFIAny bad = tvmffi_c_raw_str("x");
  printf("time_calls failing: rc=%d\n", tvmffi_rt_time_calls(f, &bad, 1, 10, 1, ns));
  print_raised("  error");
  printf("time_calls bad args: rc=%d\n", tvmffi_rt_time_calls(f, &arg, 1, 0, 1, ns));
  print_raised("  error");
  TVMFFIObjectDecRef(f);

  TVMFFIAny names;
  int rc = tvmffi_rt_list_globals(&names);
  printf("list_globals: rc=%d type=%d\n", rc, rc == 0 ? names.type_index : -1);
  if (rc == 0) TVMFFIObjectDecRef(names.v_obj);
  else print_raised("  error");
}

int main(void) {
  setvbuf(stdout, NULL, _IONBF, 0);
  test_env();
  test_objects();
  test_types();
  test_strings();
  test_functions();
  test_errors();
  test_instrumentation();
  printf("pending at end: %d\n", tvmffi_rt_error_pending());
  return 0;
}
