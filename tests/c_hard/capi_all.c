/* Calls every one of the 50 C API functions of our runtime at least once
 * (plus tensor allocation, containers through the ffi.* globals and loading
 * a fixture library), releasing everything it owns, so that valgrind
 * memcheck and the sanitizers can see each path. Prints one "FAIL" line per
 * unexpected result and a final summary; tests/test_hardening_valgrind.py
 * runs it under valgrind and checks coverage with nm.
 *
 * usage: capi_all LIBRARY.so   (a library exporting __tvm_ffi_add_int) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvmffi/rt.h>

static int failures, checks;
#define CHECK(cond)                                               \
  do {                                                            \
    checks++;                                                     \
    if (!(cond)) {                                                \
      failures++;                                                 \
      printf("FAIL line %d: %s\n", __LINE__, #cond);              \
      TVMFFIObjectHandle e_ = NULL;                               \
      TVMFFIErrorMoveFromRaised(&e_);                             \
      if (e_) {                                                   \
        TVMFFIErrorCell* c_ = (TVMFFIErrorCell*)((TVMFFIObject*)e_ + 1); \
        printf("  raised: %.*s: %.*s\n", (int)c_->kind.size, c_->kind.data, \
               (int)c_->message.size, c_->message.data);          \
        TVMFFIObjectDecRef(e_);                                   \
      }                                                           \
    }                                                             \
  } while (0)

static TVMFFIByteArray ba(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}

static TVMFFIAny none(void) {
  TVMFFIAny a;
  memset(&a, 0, sizeof(a));
  return a;
}
static TVMFFIAny i64(int64_t v) {
  TVMFFIAny a = none();
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}
static TVMFFIAny cstr(const char* s) {
  TVMFFIAny a = none();
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}
static TVMFFIAny obj(TVMFFIObjectHandle h) {
  TVMFFIAny a = none();
  a.type_index = ((TVMFFIObject*)h)->type_index;
  a.v_obj = (TVMFFIObject*)h;
  return a;
}
static void release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj) TVMFFIObjectDecRef(a->v_obj);
  *a = none();
}
static const TVMFFIByteArray* str_of(const TVMFFIAny* a) {
  static TVMFFIByteArray small;
  if (a->type_index == kTVMFFISmallStr || a->type_index == kTVMFFISmallBytes) {
    small.data = a->v_bytes;
    small.size = a->small_str_len;
    return &small;
  }
  return (const TVMFFIByteArray*)((TVMFFIObject*)a->v_obj + 1);
}
static int str_is(const TVMFFIAny* a, const char* s) {
  const TVMFFIByteArray* b = str_of(a);
  return b->size == strlen(s) && memcmp(b->data, s, b->size) == 0;
}

/* Calls global `name`; the result is owned by the caller. */
static int callg(const char* name, TVMFFIAny* args, int n, TVMFFIAny* out) {
  TVMFFIByteArray b = ba(name);
  TVMFFIObjectHandle f = NULL;
  *out = none();
  if (TVMFFIFunctionGetGlobal(&b, &f) != 0 || f == NULL) return -1;
  int rc = TVMFFIFunctionCall(f, args, n, out);
  TVMFFIObjectDecRef(f);
  return rc;
}

/* ---------------------------------------------------------------- */
static int deleted_opaque;
static void opaque_deleter(void* h) { deleted_opaque += (int)(intptr_t)h; }

static int self_deleted;
static void fn_self_deleter(void* self) { self_deleted += (int)(intptr_t)self; }
static int add(void* self, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)self;
  if (n != 2 || args[0].type_index != kTVMFFIInt || args[1].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add expects two ints");
    return -1;
  }
  *ret = i64(args[0].v_int64 + args[1].v_int64);
  return 0;
}

static void objects_and_functions(void) {
  TVMFFIVersion v;
  TVMFFIGetVersion(&v);
  CHECK(v.major == 0 && v.minor == 1);

  TVMFFIObjectHandle o = NULL;
  CHECK(TVMFFIObjectCreateOpaque((void*)(intptr_t)5, kTVMFFIOpaquePyObject, opaque_deleter, &o) == 0);
  CHECK(TVMFFIObjectIncRef(o) == 0);
  CHECK(tvmffi_rt_strong_count(o) == 2);
  CHECK(TVMFFIObjectDecRef(o) == 0);
  CHECK(TVMFFIObjectDecRef(o) == 0);
  CHECK(deleted_opaque == 5);

  TVMFFIObjectHandle f = NULL;
  CHECK(TVMFFIFunctionCreate((void*)(intptr_t)3, add, fn_self_deleter, &f) == 0);
  TVMFFIAny args[2] = {i64(40), i64(2)}, r = none();
  CHECK(TVMFFIFunctionCall(f, args, 2, &r) == 0 && r.v_int64 == 42);
  TVMFFIByteArray name = ba("capi_all.add");
  CHECK(TVMFFIFunctionSetGlobal(&name, f, 0) == 0);
  TVMFFIObjectHandle g = NULL;
  CHECK(TVMFFIFunctionGetGlobal(&name, &g) == 0 && g == f);
  TVMFFIObjectDecRef(g);
  TVMFFIMethodInfo mi;
  memset(&mi, 0, sizeof(mi));
  mi.name = ba("capi_all.add_from_info");
  mi.method = obj(f);
  CHECK(TVMFFIFunctionSetGlobalFromMethodInfo(&mi, 0) == 0);
  /* take both out of the registry again so the deleter must run */
  TVMFFIAny rm = cstr("capi_all.add"), out = none();
  CHECK(callg("ffi.FunctionRemoveGlobal", &rm, 1, &out) == 0 && out.v_int64 == 1);
  rm = cstr("capi_all.add_from_info");
  CHECK(callg("ffi.FunctionRemoveGlobal", &rm, 1, &out) == 0 && out.v_int64 == 1);
  /* a removed global stays alive (the registry retires it: readers may
   * still hold the bare pointer), so the deleter is checked on another one */
  TVMFFIObjectDecRef(f);
  TVMFFIObjectHandle f2 = NULL;
  CHECK(TVMFFIFunctionCreate((void*)(intptr_t)3, add, fn_self_deleter, &f2) == 0);
  TVMFFIObjectDecRef(f2);
  CHECK(self_deleted == 3);

  /* owned copies of views */
  TVMFFIAny view = cstr("a raw string that is longer than seven"), owned = none();
  CHECK(TVMFFIAnyViewToOwnedAny(&view, &owned) == 0 && owned.type_index == kTVMFFIStr);
  CHECK(str_is(&owned, "a raw string that is longer than seven"));
  release(&owned);
}

static void errors(void) {
  TVMFFIErrorSetRaisedFromCStr("ValueError", "first");
  TVMFFIObjectHandle e = NULL;
  TVMFFIErrorMoveFromRaised(&e);
  CHECK(e != NULL);
  TVMFFIErrorSetRaised(e); /* takes its own reference */
  TVMFFIObjectDecRef(e);
  TVMFFIObjectHandle again = NULL;
  TVMFFIErrorMoveFromRaised(&again);
  CHECK(again == e);
  TVMFFIObjectDecRef(again);

  const char* parts[] = {"one ", NULL, "two"};
  TVMFFIErrorSetRaisedFromCStrParts("KeyError", parts, 3);
  TVMFFIErrorMoveFromRaised(&e);
  TVMFFIErrorCell* c = (TVMFFIErrorCell*)((TVMFFIObject*)e + 1);
  CHECK(c->message.size == 7 && memcmp(c->message.data, "one two", 7) == 0);

  TVMFFIByteArray k = ba("RuntimeError"), m = ba("outer message"), bt = ba("  File \"x.c\"\n");
  TVMFFIObjectHandle plain = NULL, chained = NULL;
  CHECK(TVMFFIErrorCreate(&k, &m, &bt, &plain) == 0);
  CHECK(TVMFFIErrorCreateWithCauseAndExtraContext(&k, &m, &bt, e, plain, &chained) == 0);
  TVMFFIObjectDecRef(e);
  TVMFFIObjectDecRef(plain);
  c = (TVMFFIErrorCell*)((TVMFFIObject*)chained + 1);
  TVMFFIByteArray more = ba("  File \"y.c\"\n");
  c->update_backtrace(chained, &more, kTVMFFIBacktraceUpdateModeAppend);
  CHECK(c->backtrace.size == bt.size + more.size);
  TVMFFIObjectDecRef(chained); /* frees cause and context too */

  const TVMFFIByteArray* b = TVMFFIBacktrace("file.c", 7, "fn", 0);
  CHECK(b != NULL);
}

static void strings_bigint_dtype(void) {
  TVMFFIByteArray s = ba("a heap string of some length"), shortb = ba("ab\0c");
  shortb.size = 4;
  TVMFFIAny a = none();
  CHECK(TVMFFIStringFromByteArray(&s, &a) == 0 && a.type_index == kTVMFFIStr);
  release(&a);
  CHECK(TVMFFIBytesFromByteArray(&shortb, &a) == 0 && a.type_index == kTVMFFISmallBytes);
  release(&a);
  int64_t words[3] = {0, 0, 1}; /* 2^128 */
  TVMFFIByteArray wb = {(const char*)words, sizeof(words)};
  CHECK(TVMFFIBigIntFromByteArray(&wb, &a) == 0 && a.type_index == kTVMFFIBigInt);
  TVMFFIByteArray content = TVMFFIBigIntGetContentByteArray(&a);
  CHECK(content.size == 24);
  release(&a);

  DLDataType dt;
  TVMFFIByteArray ds = ba("float32x4");
  CHECK(TVMFFIDataTypeFromString(&ds, &dt) == 0 && dt.code == kDLFloat && dt.bits == 32 &&
        dt.lanes == 4);
  CHECK(TVMFFIDataTypeToString(&dt, &a) == 0 && str_is(&a, "float32x4"));
  release(&a);
}

static int getter_int(void* field, TVMFFIAny* out) {
  *out = i64(*(int64_t*)field);
  return 0;
}
static int creator(TVMFFIObjectHandle* out) {
  *out = NULL;
  return 0;
}
static int init_calls, deinit_calls;
static int init_fn(void** out) {
  init_calls++;
  *out = malloc(16);
  return 0;
}
static int deinit_fn(void* h) {
  deinit_calls++;
  free(h);
  return 0;
}

static void types(void) {
  TVMFFIByteArray key = ba("capi_all.Thing");
  int32_t t = TVMFFITypeGetOrAllocIndex(&key, -1, 1, 0, 0, kTVMFFIObject);
  CHECK(t >= kTVMFFIDynObjectBegin);
  int32_t found = -1;
  CHECK(TVMFFITypeKeyToIndex(&key, &found) == 0 && found == t);
  TVMFFIFieldInfo fi;
  memset(&fi, 0, sizeof(fi));
  fi.name = ba("value");
  fi.size = fi.alignment = 8;
  fi.offset = sizeof(TVMFFIObject);
  fi.getter = getter_int;
  fi.field_static_type_index = kTVMFFIInt;
  fi.default_value_or_factory = cstr("a default text longer than seven");
  CHECK(TVMFFITypeRegisterField(t, &fi) == 0);
  TVMFFIObjectHandle f = NULL;
  TVMFFIFunctionCreate(NULL, add, NULL, &f);
  TVMFFIMethodInfo mi;
  memset(&mi, 0, sizeof(mi));
  mi.name = ba("add");
  mi.method = obj(f);
  CHECK(TVMFFITypeRegisterMethod(t, &mi) == 0);
  TVMFFIObjectDecRef(f);
  TVMFFITypeMetadata md;
  memset(&md, 0, sizeof(md));
  md.doc = ba("a thing");
  md.creator = creator;
  md.total_size = (int32_t)(sizeof(TVMFFIObject) + 8);
  CHECK(TVMFFITypeRegisterMetadata(t, &md) == 0);
  TVMFFIByteArray attr = ba("capi_all.attr");
  TVMFFIAny av = cstr("an attribute value longer than seven");
  CHECK(TVMFFITypeRegisterAttr(t, &attr, &av) == 0);
  const TVMFFITypeAttrColumn* col = TVMFFIGetTypeAttrColumn(&attr);
  CHECK(col != NULL && t >= col->begin_index && t < col->begin_index + col->size);
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(t);
  CHECK(info != NULL && info->num_fields == 1 && info->num_methods == 1 && info->metadata);

  void* handle = NULL;
  CHECK(TVMFFIHandleInitOnce(&handle, init_fn) == 0 && handle != NULL);
  CHECK(TVMFFIHandleInitOnce(&handle, init_fn) == 0 && init_calls == 1);
  CHECK(TVMFFIHandleDeinitOnce(&handle, deinit_fn) == 0 && handle == NULL);
  CHECK(TVMFFIHandleDeinitOnce(&handle, deinit_fn) == 0 && deinit_calls == 1);
}

/* A custom object allocator that counts, then is uninstalled. */
static int custom_allocs, custom_frees;
typedef struct {
  void* raw;
  TVMFFIObjectAllocHeader hdr;
} prefix_t;
static void my_delete_space(void* body) {
  custom_frees++;
  free(((prefix_t*)body - 1)->raw);
}
static void* my_allocate(size_t size, size_t alignment, int32_t type_index, void* ctx) {
  (void)alignment;
  (void)type_index;
  (void)ctx;
  prefix_t* p = (prefix_t*)malloc(sizeof(prefix_t) + size);
  p->raw = p;
  p->hdr.delete_space = my_delete_space;
  custom_allocs++;
  return p + 1;
}

static void env(const char* lib) {
  TVMFFICustomAllocator* def = TVMFFIGetCustomAllocator();
  CHECK(def != NULL);
  static TVMFFICustomAllocator mine = {my_allocate, NULL};
  CHECK(TVMFFISetCustomAllocator(&mine) == 0);
  TVMFFIByteArray s = ba("allocated through the custom allocator");
  TVMFFIAny a = none();
  CHECK(TVMFFIStringFromByteArray(&s, &a) == 0);
  release(&a);
  CHECK(TVMFFISetCustomAllocator(NULL) == 0);
  CHECK(custom_allocs == 1 && custom_frees == 1);

  TVMFFIStreamHandle old = NULL;
  CHECK(TVMFFIEnvSetStream(kDLCUDA, 0, (void*)0x10, &old) == 0 && old == NULL);
  CHECK(TVMFFIEnvGetStream(kDLCUDA, 0) == (void*)0x10);
  CHECK(TVMFFIEnvSetStream(kDLCUDA, 0, NULL, NULL) == 0);
  CHECK(TVMFFIEnvCheckSignals() == 0);
  CHECK(TVMFFIEnvRegisterCAPI("capi_all.capi", (void*)0x1) == 0);
  CHECK(TVMFFIEnvModRegisterContextSymbol("__capi_all_ctx", (void*)0x2) == 0);
  CHECK(TVMFFIEnvModRegisterSystemLibSymbol("__tvm_ffi_capi_all_sys", (void*)0x3) == 0);

  DLPackManagedTensorAllocator cur = TVMFFIEnvGetDLPackManagedTensorAllocator();
  CHECK(cur != NULL);
  DLPackManagedTensorAllocator prev = NULL;
  CHECK(TVMFFIEnvSetDLPackManagedTensorAllocator(cur, 0, &prev) == 0);

  /* library loading: a fixture through ffi.ModuleLoadFromFile */
  TVMFFIAny path = cstr(lib), mod = none();
  CHECK(callg("ffi.ModuleLoadFromFile", &path, 1, &mod) == 0 && mod.type_index == kTVMFFIModule);
  if (mod.type_index == kTVMFFIModule) {
    TVMFFIAny ga[3] = {mod, cstr("add_int"), none()}, fn = none();
    ga[2].type_index = kTVMFFIBool;
    CHECK(callg("ffi.ModuleGetFunction", ga, 3, &fn) == 0 && fn.type_index == kTVMFFIFunction);
    if (fn.type_index == kTVMFFIFunction) {
      TVMFFIAny args[2] = {i64(40), i64(2)}, r = none();
      CHECK(TVMFFIFunctionCall(fn.v_obj, args, 2, &r) == 0 && r.v_int64 == 42);
      release(&fn);
    }
    /* a global found through the module's lookup (borrowed, cached) */
    TVMFFIObjectHandle found = NULL;
    CHECK(TVMFFIEnvModLookupFromImports(mod.v_obj, "ffi.ArraySize", &found) == 0 && found);
    release(&mod);
  }
}

static int external_deleted;
static void managed_deleter(DLManagedTensor* self) {
  external_deleted++;
  free(self->dl_tensor.data);
  free(self->dl_tensor.shape);
  free(self);
}
static void versioned_deleter(DLManagedTensorVersioned* self) {
  external_deleted++;
  free(self->dl_tensor.data);
  free(self->dl_tensor.shape);
  free(self);
}

static void tensors(void) {
  int64_t shape[2] = {3, 4};
  DLTensor proto;
  memset(&proto, 0, sizeof(proto));
  proto.device.device_type = kDLCPU;
  proto.ndim = 2;
  proto.dtype.code = kDLFloat;
  proto.dtype.bits = 32;
  proto.dtype.lanes = 1;
  proto.shape = shape;
  TVMFFIObjectHandle t = NULL;
  CHECK(TVMFFIEnvTensorAlloc(&proto, &t) == 0 && t != NULL);
  DLTensor* dl = (DLTensor*)((TVMFFIObject*)t + 1);
  for (int i = 0; i < 12; ++i) ((float*)dl->data)[i] = (float)i;

  /* a view of row 1 (4 floats) */
  int64_t vshape[1] = {4};
  DLTensor vp = *dl;
  vp.ndim = 1;
  vp.shape = vshape;
  vp.strides = NULL;
  vp.byte_offset = 4 * sizeof(float);
  TVMFFIObjectHandle view = NULL;
  CHECK(TVMFFITensorCreateUnsafeView(t, &vp, &view) == 0);
  DLTensor* vdl = (DLTensor*)((TVMFFIObject*)view + 1);
  CHECK(((float*)((char*)vdl->data + vdl->byte_offset))[0] == 4.0f);

  DLManagedTensor* m = NULL;
  CHECK(TVMFFITensorToDLPack(t, &m) == 0 && m != NULL);
  if (m) m->deleter(m);
  DLManagedTensorVersioned* mv = NULL;
  CHECK(TVMFFITensorToDLPackVersioned(view, &mv) == 0 && mv != NULL);
  if (mv) mv->deleter(mv);
  TVMFFIObjectDecRef(view);
  TVMFFIObjectDecRef(t);

  /* tensors owned by someone else, imported and released */
  DLManagedTensor* ext = (DLManagedTensor*)calloc(1, sizeof(*ext));
  ext->dl_tensor = proto;
  ext->dl_tensor.shape = (int64_t*)malloc(sizeof(shape));
  memcpy(ext->dl_tensor.shape, shape, sizeof(shape));
  ext->dl_tensor.data = calloc(12, sizeof(float));
  ext->deleter = managed_deleter;
  TVMFFIObjectHandle imp = NULL;
  CHECK(TVMFFITensorFromDLPack(ext, 0, 1, &imp) == 0);
  TVMFFIObjectDecRef(imp);
  DLManagedTensorVersioned* extv = (DLManagedTensorVersioned*)calloc(1, sizeof(*extv));
  extv->version.major = 1;
  extv->dl_tensor = proto;
  extv->dl_tensor.shape = (int64_t*)malloc(sizeof(shape));
  memcpy(extv->dl_tensor.shape, shape, sizeof(shape));
  extv->dl_tensor.data = calloc(12, sizeof(float));
  extv->deleter = versioned_deleter;
  CHECK(TVMFFITensorFromDLPackVersioned(extv, 0, 1, &imp) == 0);
  TVMFFIObjectDecRef(imp);
  CHECK(external_deleted == 2);
}

static void containers(void) {
  TVMFFIAny items[3] = {i64(1), cstr("a string longer than seven"), cstr("short")}, arr = none();
  CHECK(callg("ffi.Array", items, 3, &arr) == 0 && arr.type_index == kTVMFFIArray);
  TVMFFIAny r = none(), a2[2] = {arr, i64(1)};
  CHECK(callg("ffi.ArrayGetItem", a2, 2, &r) == 0 && str_is(&r, "a string longer than seven"));
  release(&r);
  CHECK(callg("ffi.ArraySize", &arr, 1, &r) == 0 && r.v_int64 == 3);
  a2[1] = i64(99);
  CHECK(callg("ffi.ArrayGetItem", a2, 2, &r) != 0); /* IndexError, fetched and dropped */
  TVMFFIObjectHandle e = NULL;
  TVMFFIErrorMoveFromRaised(&e);
  CHECK(e != NULL);
  if (e) TVMFFIObjectDecRef(e);

  /* a map big enough to be dense, holding the array as a value */
  TVMFFIAny kv[40];
  char keys[20][32];
  for (int i = 0; i < 20; ++i) {
    snprintf(keys[i], sizeof(keys[i]), i % 2 ? "key-number-%d-long" : "k%d", i);
    kv[2 * i] = cstr(keys[i]);
    kv[2 * i + 1] = i == 7 ? arr : i64(i);
  }
  TVMFFIAny map = none();
  CHECK(callg("ffi.Map", kv, 40, &map) == 0 && map.type_index == kTVMFFIMap);
  TVMFFIAny mk[2] = {map, cstr("key-number-7-long")};
  CHECK(callg("ffi.MapGetItem", mk, 2, &r) == 0 && r.type_index == kTVMFFIArray);
  release(&r);
  CHECK(callg("ffi.MapSize", &map, 1, &r) == 0 && r.v_int64 == 20);
  TVMFFIAny it = none();
  CHECK(callg("ffi.MapForwardIterFunctor", &map, 1, &it) == 0 && it.type_index == kTVMFFIFunction);
  release(&it);
  release(&map);
  release(&arr);

  int64_t dims[3] = {2, 3, 4};
  TVMFFIAny sa[3] = {i64(dims[0]), i64(dims[1]), i64(dims[2])}, shape = none();
  CHECK(callg("ffi.Shape", sa, 3, &shape) == 0 && shape.type_index == kTVMFFIShape);
  release(&shape);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s LIBRARY.so\n", argv[0]);
    return 2;
  }
  int64_t live0 = tvmffi_rt_live_objects();
  objects_and_functions();
  errors();
  strings_bigint_dtype();
  types();
  tensors();
  containers();
  int64_t before_env = tvmffi_rt_live_objects();
  env(argv[1]);
  int64_t after_env = tvmffi_rt_live_objects();
  printf("live objects: core=%+lld env=%+lld\n", (long long)(before_env - live0),
         (long long)(after_env - before_env));
  printf("capi_all: checks=%d failures=%d\n", checks, failures);
  return failures ? 1 : 0;
}
