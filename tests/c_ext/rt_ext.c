/* Tests of runtime part B against our header and runtime: tensors and
 * DLPack, environment allocation, big integers, library loading and
 * modules, and container interop with a C++ library built against the
 * official headers. Each sub-command prints facts the Python test compares
 * exactly and checks invariants itself ("FAIL ..." lines, exit status 1).
 *
 *   rt_ext tensor | bigint
 *   rt_ext load LIBBIN CTORLIB [loader]
 *   rt_ext cxx CXXLIB */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tvm/ffi/c_api.h>
#include <tvm/ffi/extra/c_env_api.h>
#include <tvmffi/rt.h>

static int failures = 0;
#define CHECK(cond)                                                  \
  do {                                                               \
    if (!(cond)) {                                                   \
      printf("FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond);         \
      ++failures;                                                    \
    }                                                                \
  } while (0)

static void print_error(const char* what) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) {
    printf("%s: ERR <none>\n", what);
    return;
  }
  TVMFFIErrorCell* c = tvmffi_c_error_cell(err);
  printf("%s: ERR %.*s: %.*s\n", what, (int)c->kind.size, c->kind.data, (int)c->message.size,
         c->message.data);
  TVMFFIObjectDecRef(err);
}

static TVMFFIAny obj_any(void* obj) {
  TVMFFIAny a = tvmffi_c_none();
  a.type_index = tvmffi_c_type_index(obj);
  a.v_obj = (TVMFFIObject*)obj;
  return a;
}

static void release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj) TVMFFIObjectDecRef(a->v_obj);
  *a = tvmffi_c_none();
}

static void print_value(const TVMFFIAny* a) {
  TVMFFIByteArray b = tvmffi_c_any_bytes(a);
  switch (a->type_index) {
    case kTVMFFINone: printf("None"); break;
    case kTVMFFIInt: printf("%lld", (long long)a->v_int64); break;
    case kTVMFFIBool: printf("%s", a->v_int64 ? "True" : "False"); break;
    case kTVMFFIFloat: printf("%g", a->v_float64); break;
    case kTVMFFISmallStr:
    case kTVMFFIStr: printf("'%.*s'", (int)b.size, b.data); break;
    default: printf("<type %d>", (int)a->type_index);
  }
}

static void* global(const char* name) {
  TVMFFIByteArray n = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionGetGlobal(&n, &f) != 0 || f == NULL) {
    printf("FAIL no global %s\n", name);
    exit(3);
  }
  return f;
}

/* Calls f; on failure prints `what`'s error and returns -1. */
static int callf(void* f, TVMFFIAny* args, int n, TVMFFIAny* out, const char* what) {
  *out = tvmffi_c_none();
  if (TVMFFIFunctionCall(f, args, n, out) != 0) {
    print_error(what);
    return -1;
  }
  return 0;
}
static int callg(const char* name, TVMFFIAny* args, int n, TVMFFIAny* out) {
  void* f = global(name);
  int rc = callf(f, args, n, out, name);
  TVMFFIObjectDecRef(f);
  return rc;
}

/* ------------------------------------------------------------------ */
/* tensors                                                            */
/* ------------------------------------------------------------------ */

static int legacy_deleted = 0, versioned_deleted = 0;
static void legacy_deleter(DLManagedTensor* self) {
  (void)self;
  ++legacy_deleted;
}
static void versioned_deleter(DLManagedTensorVersioned* self) {
  (void)self;
  ++versioned_deleted;
}

static int cmd_tensor(void) {
  int64_t base = tvmffi_rt_live_objects();
  _Alignas(64) static float buf[16];
  for (int i = 0; i < 16; ++i) buf[i] = (float)i;
  int64_t shape[2] = {2, 3};
  DLManagedTensor legacy;
  memset(&legacy, 0, sizeof(legacy));
  legacy.dl_tensor.data = buf;
  legacy.dl_tensor.device.device_type = kDLCPU;
  legacy.dl_tensor.ndim = 2;
  legacy.dl_tensor.dtype.code = kDLFloat;
  legacy.dl_tensor.dtype.bits = 32;
  legacy.dl_tensor.dtype.lanes = 1;
  legacy.dl_tensor.shape = shape;
  legacy.deleter = legacy_deleter;

  /* legacy import: compact strides are filled in, shape is the producer's */
  TVMFFIObjectHandle t = NULL;
  CHECK(TVMFFITensorFromDLPack(&legacy, 64, 1, &t) == 0);
  DLTensor* dl = tvmffi_c_tensor(t);
  printf("legacy: type=%d ndim=%d shape=[%lld,%lld] strides=[%lld,%lld] same_shape_ptr=%d\n",
         tvmffi_c_type_index(t), dl->ndim, (long long)dl->shape[0], (long long)dl->shape[1],
         (long long)dl->strides[0], (long long)dl->strides[1], dl->shape == shape);
  CHECK(dl->data == buf);
  CHECK(tvmffi_rt_live_objects_of_type(kTVMFFITensor) >= 1);

  /* export keeps the tensor alive until the consumer's deleter runs */
  DLManagedTensor* out = NULL;
  CHECK(TVMFFITensorToDLPack(t, &out) == 0);
  printf("to_dlpack: strong=%u same_data=%d\n", tvmffi_rt_strong_count(t), out->dl_tensor.data == buf);
  TVMFFIObjectDecRef(t);
  CHECK(legacy_deleted == 0);
  out->deleter(out);
  printf("legacy deleter calls after release: %d\n", legacy_deleted);

  /* alignment and contiguity failures, with the producer keeping ownership */
  legacy_deleted = 0;
  legacy.dl_tensor.data = (char*)buf + 4;
  CHECK(TVMFFITensorFromDLPack(&legacy, 64, 0, &t) != 0);
  print_error("misaligned(64)");
  CHECK(TVMFFITensorFromDLPack(&legacy, 4, 0, &t) == 0);
  TVMFFIObjectDecRef(t);
  legacy.dl_tensor.data = buf;
  legacy.dl_tensor.byte_offset = 8;
  CHECK(TVMFFITensorFromDLPack(&legacy, 16, 0, &t) != 0);
  print_error("byte_offset 8 (16)");
  legacy.dl_tensor.byte_offset = 0;
  int64_t fstrides[2] = {1, 2}; /* column-major: not row-major contiguous */
  legacy.dl_tensor.strides = fstrides;
  CHECK(TVMFFITensorFromDLPack(&legacy, 0, 1, &t) != 0);
  print_error("column-major contiguous");
  CHECK(TVMFFITensorFromDLPack(&legacy, 0, 0, &t) == 0);
  printf("strided import keeps strides=[%lld,%lld]\n", (long long)tvmffi_c_tensor(t)->strides[0],
         (long long)tvmffi_c_tensor(t)->strides[1]);
  TVMFFIObjectDecRef(t);
  int64_t unit_shape[2] = {1, 3}, odd_strides[2] = {99, 1}; /* unit dims ignore strides */
  legacy.dl_tensor.shape = unit_shape;
  legacy.dl_tensor.strides = odd_strides;
  CHECK(TVMFFITensorFromDLPack(&legacy, 0, 1, &t) == 0);
  TVMFFIObjectDecRef(t);
  printf("legacy deleter calls (3 successful imports): %d\n", legacy_deleted);
  CHECK(TVMFFITensorFromDLPack(NULL, 0, 0, &t) != 0);
  print_error("null");

  /* versioned import and export */
  DLManagedTensorVersioned v;
  memset(&v, 0, sizeof(v));
  v.version.major = 1;
  v.dl_tensor = legacy.dl_tensor;
  v.dl_tensor.shape = shape;
  v.dl_tensor.strides = NULL;
  v.deleter = versioned_deleter;
  v.flags = DLPACK_FLAG_BITMASK_IS_SUBBYTE_TYPE_PADDED;
  CHECK(TVMFFITensorFromDLPackVersioned(&v, 0, 0, &t) != 0);
  print_error("subbyte padded");
  v.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
  CHECK(TVMFFITensorFromDLPackVersioned(&v, 0, 1, &t) == 0);
  DLManagedTensorVersioned* vo = NULL;
  CHECK(TVMFFITensorToDLPackVersioned(t, &vo) == 0);
  printf("versioned export: version=%u.%u flags=%llu strides=[%lld,%lld]\n", vo->version.major,
         vo->version.minor, (unsigned long long)vo->flags, (long long)vo->dl_tensor.strides[0],
         (long long)vo->dl_tensor.strides[1]);
  TVMFFIObjectDecRef(t);
  vo->deleter(vo);
  printf("versioned deleter calls: %d\n", versioned_deleted);

  /* a non-tensor cannot be exported */
  TVMFFIAny shp;
  TVMFFIAny dims[1] = {tvmffi_c_int(3)};
  CHECK(callg("ffi.Shape", dims, 1, &shp) == 0);
  CHECK(TVMFFITensorToDLPack(shp.v_obj, &out) != 0);
  print_error("export shape");
  release(&shp);

  /* unsafe view: shares and keeps alive the source's memory */
  legacy_deleted = 0;
  legacy.dl_tensor.shape = shape;
  legacy.dl_tensor.strides = NULL;
  CHECK(TVMFFITensorFromDLPack(&legacy, 0, 0, &t) == 0);
  int64_t vshape[1] = {3}, vstrides[1] = {2};
  DLTensor proto = *tvmffi_c_tensor(t);
  proto.data = buf + 1;
  proto.ndim = 1;
  proto.shape = vshape;
  proto.strides = vstrides;
  TVMFFIObjectHandle view = NULL;
  CHECK(TVMFFITensorCreateUnsafeView(t, &proto, &view) == 0);
  TVMFFIObjectDecRef(t); /* the view holds the source */
  DLTensor* vd = tvmffi_c_tensor(view);
  CHECK(vd->shape != vshape && vd->strides != vstrides); /* copied */
  const float* vp = (const float*)vd->data;
  printf("view: [%g %g %g] source_alive=%d\n", vp[0], vp[vd->strides[0]], vp[2 * vd->strides[0]],
         legacy_deleted == 0);
  TVMFFIObjectDecRef(view);
  printf("view released: source deleter calls=%d\n", legacy_deleted);
  proto.strides = NULL;
  CHECK(TVMFFITensorFromDLPack(&legacy, 0, 0, &t) == 0);
  CHECK(TVMFFITensorCreateUnsafeView(t, &proto, &view) == 0);
  printf("view without strides gets strides=[%lld]\n", (long long)tvmffi_c_tensor(view)->strides[0]);
  TVMFFIObjectDecRef(view);
  TVMFFIObjectDecRef(t);

  /* environment allocation: the default CPU allocator */
  CHECK(TVMFFIEnvGetDLPackManagedTensorAllocator() != NULL);
  int64_t ashape[2] = {4, 5};
  DLTensor ap;
  memset(&ap, 0, sizeof(ap));
  ap.device.device_type = kDLCPU;
  ap.ndim = 2;
  ap.shape = ashape;
  ap.dtype.code = kDLFloat;
  ap.dtype.bits = 32;
  ap.dtype.lanes = 1;
  CHECK(TVMFFIEnvTensorAlloc(&ap, &t) == 0);
  DLTensor* ad = tvmffi_c_tensor(t);
  float* ptr = (float*)ad->data;
  for (int i = 0; i < 20; ++i) ptr[i] = (float)(i * 2);
  printf("alloc: shape=[%lld,%lld] strides=[%lld,%lld] aligned64=%d last=%g shape_copied=%d\n",
         (long long)ad->shape[0], (long long)ad->shape[1], (long long)ad->strides[0],
         (long long)ad->strides[1], (int)((uintptr_t)ad->data % 64 == 0), ptr[19],
         ad->shape != ashape);
  TVMFFIObjectDecRef(t);
  ap.device.device_type = kDLCUDA;
  CHECK(TVMFFIEnvTensorAlloc(&ap, &t) != 0);
  print_error("alloc cuda");
  ap.device.device_type = kDLCPU;
  ap.ndim = 0;
  CHECK(TVMFFIEnvTensorAlloc(&ap, &t) == 0);
  printf("scalar alloc: ndim=%d data_nonnull=%d\n", tvmffi_c_tensor(t)->ndim,
         tvmffi_c_tensor(t)->data != NULL);
  TVMFFIObjectDecRef(t);
  int64_t neg[1] = {-1};
  ap.ndim = 1;
  ap.shape = neg;
  CHECK(TVMFFIEnvTensorAlloc(&ap, &t) != 0);
  print_error("alloc negative dim");
  CHECK(tvmffi_rt_error_pending() == 0);
  printf("live objects back to start: %d\n", tvmffi_rt_live_objects() == base);
  return failures != 0;
}

/* ------------------------------------------------------------------ */
/* big integers                                                       */
/* ------------------------------------------------------------------ */

static void bigint_case(const char* label, const int64_t* words, size_t n) {
  TVMFFIByteArray in = {(const char*)words, n * 8};
  TVMFFIAny v;
  if (TVMFFIBigIntFromByteArray(&in, &v) != 0) {
    print_error(label);
    return;
  }
  TVMFFIByteArray c = TVMFFIBigIntGetContentByteArray(&v);
  printf("%s: type=%d words=%zu [", label, (int)v.type_index, c.size / 8);
  for (size_t i = 0; i < c.size / 8; ++i) {
    int64_t w;
    memcpy(&w, c.data + 8 * i, 8);
    printf("%s%lld", i ? " " : "", (long long)w);
  }
  printf("]\n");
  release(&v);
}

static int cmd_bigint(void) {
  int64_t base = tvmffi_rt_live_objects();
  int64_t five[1] = {5};
  bigint_case("five", five, 1);
  bigint_case("empty", NULL, 0);
  int64_t minus_one[3] = {-1, -1, -1};
  bigint_case("minus-one-padded", minus_one, 3);
  int64_t two64[3] = {0, 1, 0};
  bigint_case("2^64-padded", two64, 3);
  int64_t guard[2] = {INT64_MIN, 0}; /* 2^63 needs a zero sign word */
  bigint_case("2^63", guard, 2);
  int64_t neg[2] = {0, -2};
  bigint_case("-2^65", neg, 2);
  int64_t min64[2] = {INT64_MIN, -1}; /* fits int64: becomes an Int */
  bigint_case("int64-min", min64, 2);
  TVMFFIByteArray odd = {"1234567", 7};
  TVMFFIAny v;
  CHECK(TVMFFIBigIntFromByteArray(&odd, &v) != 0);
  print_error("7 bytes");
  TVMFFIAny s = tvmffi_c_float(1.5);
  TVMFFIByteArray c = TVMFFIBigIntGetContentByteArray(&s);
  printf("content of a float: size=%zu\n", c.size);
  printf("live objects back to start: %d\n", tvmffi_rt_live_objects() == base);
  return failures != 0;
}

/* ------------------------------------------------------------------ */
/* library loading                                                    */
/* ------------------------------------------------------------------ */

static void* loaded_sub = NULL;
static const char* sub_path = NULL;

/* ffi.Module.load_from_bytes.testkind: checks the payload, hands back the
 * module of another library. */
static int testkind_loader(void* h, const TVMFFIAny* args, int32_t n, TVMFFIAny* ret) {
  (void)h;
  TVMFFIByteArray b = tvmffi_c_any_bytes(&args[0]);
  if (n != 1 || args[0].type_index == kTVMFFIStr || b.size != 5 || memcmp(b.data, "hello", 5) != 0) {
    TVMFFIErrorSetRaisedFromCStr("ValueError", "testkind loader got an unexpected payload");
    return -1;
  }
  TVMFFIObjectHandle m = NULL;
  if (tvmffi_rt_library_load(sub_path, &m) != 0) return -1;
  loaded_sub = m;
  *ret = obj_any(m);
  return 0;
}

static void print_describe(void* mod) {
  TVMFFIAny d;
  if (tvmffi_rt_module_describe(mod, &d) != 0) {
    print_error("describe");
    return;
  }
  TVMFFIByteArray b = tvmffi_c_any_bytes(&d);
  printf("describe: %.*s\n", (int)b.size, b.data);
  release(&d);
}

static int custom_ctx_target = 42;

static int cmd_load(const char* libbin, const char* ctorlib, int with_loader) {
  sub_path = ctorlib;
  if (with_loader) {
    TVMFFIObjectHandle f = NULL;
    CHECK(TVMFFIFunctionCreate(NULL, testkind_loader, NULL, &f) == 0);
    TVMFFIByteArray nm = {"ffi.Module.load_from_bytes.testkind",
                          strlen("ffi.Module.load_from_bytes.testkind")};
    CHECK(TVMFFIFunctionSetGlobal(&nm, f, 0) == 0);
    TVMFFIObjectDecRef(f);
  }
  CHECK(TVMFFIEnvModRegisterContextSymbol("__fixture_custom_ctx", &custom_ctx_target) == 0);
  TVMFFIObjectHandle mod = NULL;
  if (tvmffi_rt_library_load(libbin, &mod) != 0) {
    print_error("load");
    return 1;
  }
  printf("module type=%d\n", tvmffi_c_type_index(mod));
  print_describe(mod);

  TVMFFIByteArray name = {"add", 3};
  TVMFFIObjectHandle add = NULL, add2 = NULL;
  CHECK(tvmffi_rt_module_get_function(mod, &name, 0, &add) == 0 && add != NULL);
  CHECK(tvmffi_rt_module_get_function(mod, &name, 0, &add2) == 0 && add2 == add); /* cached */
  TVMFFIAny args[2] = {tvmffi_c_int(40), tvmffi_c_int(2)}, r;
  if (callf(add, args, 2, &r, "add") == 0) printf("add(40, 2) = %lld\n", (long long)r.v_int64);
  args[1] = tvmffi_c_float(2.0);
  callf(add, args, 2, &r, "add(40, 2.0)");
  TVMFFIObjectDecRef(add);
  TVMFFIObjectDecRef(add2);

  TVMFFIByteArray missing = {"nope", 4};
  TVMFFIObjectHandle none = (TVMFFIObjectHandle)1;
  CHECK(tvmffi_rt_module_get_function(mod, &missing, 1, &none) == 0);
  printf("missing function -> %s\n", none == NULL ? "NULL" : "non-NULL");

  TVMFFIByteArray bits_name = {"ctx_bits", 8};
  TVMFFIObjectHandle bits = NULL;
  CHECK(tvmffi_rt_module_get_function(mod, &bits_name, 0, &bits) == 0 && bits != NULL);
  if (bits && callf(bits, NULL, 0, &r, "ctx_bits") == 0) printf("ctx_bits = %lld\n", (long long)r.v_int64);
  if (bits) TVMFFIObjectDecRef(bits);

  /* sub_fn lives in the library the testkind loader returned */
  TVMFFIByteArray sub = {"sub_fn", 6};
  TVMFFIObjectHandle subf = NULL;
  CHECK(tvmffi_rt_module_get_function(mod, &sub, 0, &subf) == 0);
  printf("sub_fn without imports -> %s\n", subf ? "found" : "NULL");
  CHECK(tvmffi_rt_module_get_function(mod, &sub, 1, &subf) == 0);
  printf("sub_fn with imports -> %s\n", subf ? "found" : "NULL");
  if (subf) {
    TVMFFIAny a = tvmffi_c_int(7);
    if (callf(subf, &a, 1, &r, "sub_fn") == 0) printf("sub_fn(7) = %lld\n", (long long)r.v_int64);
    TVMFFIObjectDecRef(subf);
  }

  /* the library resolves names through its context: imports, then globals */
  TVMFFIByteArray ci = {"call_import", 11};
  TVMFFIObjectHandle call_import = NULL;
  CHECK(tvmffi_rt_module_get_function(mod, &ci, 0, &call_import) == 0 && call_import != NULL);
  const char* targets[3] = {"sub_fn", "fixture.ctor.triple", "no.such.function"};
  for (int i = 0; i < 3; ++i) {
    TVMFFIAny a[2] = {tvmffi_c_raw_str(targets[i]), tvmffi_c_int(5)};
    if (callf(call_import, a, 2, &r, targets[i]) == 0) {
      printf("call_import(%s, 5) = ", targets[i]);
      print_value(&r);
      printf("\n");
    }
  }
  TVMFFIObjectDecRef(call_import);

  /* globals of the contract on the module */
  TVMFFIAny ma = obj_any(mod), s;
  if (callg("ffi.ModuleGetKind", &ma, 1, &s) == 0) {
    printf("ModuleGetKind = ");
    print_value(&s);
    printf("\n");
    release(&s);
  }
  TVMFFIAny ga[3] = {ma, tvmffi_c_raw_str("add"), tvmffi_c_none()};
  ga[2].type_index = kTVMFFIBool;
  ga[2].v_int64 = 1;
  if (callg("ffi.ModuleGetFunction", ga, 3, &s) == 0) {
    printf("ModuleGetFunction(add) type=%d\n", (int)s.type_index);
    release(&s);
  }
  ga[1] = tvmffi_c_raw_str("nope");
  if (callg("ffi.ModuleGetFunction", ga, 3, &s) == 0) printf("ModuleGetFunction(nope) type=%d\n", (int)s.type_index);
  ga[1] = tvmffi_c_raw_str("add");
  if (callg("ffi.ModuleGetFunctionDoc", ga, 3, &s) == 0) {
    printf("ModuleGetFunctionDoc(add) = ");
    print_value(&s);
    printf("\n");
    release(&s);
  }
  if (callg("ffi.ModuleGetFunctionMetadata", ga, 3, &s) == 0) printf("ModuleGetFunctionMetadata(add) type=%d\n", (int)s.type_index);
  TVMFFIAny ki = tvmffi_c_int(1);
  callg("ffi.ModuleGetKind", &ki, 1, &s);
  /* importing a module into itself (a cycle) is refused */
  TVMFFIAny ia[2] = {ma, ma};
  callg("ffi.ModuleImportModule", ia, 2, &s);

  /* ffi.ModuleLoadFromFile dispatches on the extension */
  TVMFFIAny pa = tvmffi_c_raw_str(ctorlib);
  if (callg("ffi.ModuleLoadFromFile", &pa, 1, &s) == 0) {
    printf("ModuleLoadFromFile(.so) type=%d\n", (int)s.type_index);
    release(&s);
  }
  /* the constructor's global and type are visible */
  TVMFFIAny targ = tvmffi_c_int(14);
  if (callg("fixture.ctor.triple", &targ, 1, &r) == 0) printf("fixture.ctor.triple(14) = %lld\n", (long long)r.v_int64);
  int32_t ti = -1;
  TVMFFIByteArray key = {"fixture.CtorType", strlen("fixture.CtorType")};
  printf("fixture.CtorType registered=%d\n", TVMFFITypeKeyToIndex(&key, &ti) == 0 && ti >= kTVMFFIDynObjectBegin);

  pa = tvmffi_c_raw_str("lib.weird");
  callg("ffi.ModuleLoadFromFile", &pa, 1, &s);
  pa = tvmffi_c_raw_str("/nonexistent/lib.so");
  if (callg("ffi.ModuleLoadFromFile", &pa, 1, &s) == 0) release(&s);

  TVMFFIObjectDecRef(mod);
  return failures != 0;
}

/* ------------------------------------------------------------------ */
/* C++ library built against the official headers                     */
/* ------------------------------------------------------------------ */

static void* fn(void* mod, const char* name) {
  TVMFFIByteArray n = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  if (tvmffi_rt_module_get_function(mod, &n, 0, &f) != 0 || f == NULL) {
    printf("FAIL no function %s\n", name);
    exit(3);
  }
  return f;
}

static void call_print(void* mod, const char* name, TVMFFIAny* args, int n, TVMFFIAny* keep) {
  void* f = fn(mod, name);
  TVMFFIAny r;
  if (callf(f, args, n, &r, name) == 0) {
    printf("%s -> ", name);
    print_value(&r);
    printf("\n");
    if (keep) *keep = r;
    else release(&r);
  }
  TVMFFIObjectDecRef(f);
}

/* Builds ffi.Map("k0", 0, "k1", 1, ...) with n entries. */
static TVMFFIAny our_map(int n) {
  static char names[64][16];
  TVMFFIAny kv[128], m;
  for (int i = 0; i < n; ++i) {
    snprintf(names[i], sizeof(names[i]), i % 2 ? "key-number-%d" : "k%d", i);
    kv[2 * i] = tvmffi_c_raw_str(names[i]);
    kv[2 * i + 1] = tvmffi_c_int(i);
  }
  if (callg("ffi.Map", kv, 2 * n, &m) != 0) exit(3);
  return m;
}

static void print_map(const char* label, TVMFFIAny* m) {
  TVMFFIAny it, sz;
  callg("ffi.MapSize", m, 1, &sz);
  callg("ffi.MapForwardIterFunctor", m, 1, &it);
  printf("%s: size=%lld", label, (long long)sz.v_int64);
  for (int64_t i = 0; i < sz.v_int64; ++i) {
    TVMFFIAny c0 = tvmffi_c_int(0), c1 = tvmffi_c_int(1), c2 = tvmffi_c_int(2), k, v, more;
    TVMFFIFunctionCall(it.v_obj, &c0, 1, &k);
    TVMFFIFunctionCall(it.v_obj, &c1, 1, &v);
    printf(" ");
    print_value(&k);
    printf(":");
    print_value(&v);
    release(&k);
    release(&v);
    TVMFFIFunctionCall(it.v_obj, &c2, 1, &more);
  }
  printf("\n");
  release(&it);
}

static int cmd_cxx(const char* path) {
  int64_t base = tvmffi_rt_live_objects();
  TVMFFIObjectHandle mod = NULL;
  if (tvmffi_rt_library_load(path, &mod) != 0) {
    print_error("load");
    return 1;
  }
  /* Array made here, read there; extended there, read here */
  TVMFFIAny items[4] = {tvmffi_c_int(1), tvmffi_c_int(20), tvmffi_c_int(300), tvmffi_c_int(4000)}, arr, ext;
  callg("ffi.Array", items, 4, &arr);
  call_print(mod, "sum_array", &arr, 1, NULL);
  TVMFFIAny ea[2] = {arr, tvmffi_c_raw_str("tail")};
  call_print(mod, "extend", ea, 2, &ext);
  TVMFFISeqCell* cell = (TVMFFISeqCell*)tvmffi_c_object_cell(ext.v_obj);
  printf("extended array: size=%lld", (long long)cell->size);
  for (int64_t i = 0; i < cell->size; ++i) {
    printf(" ");
    print_value((TVMFFIAny*)cell->data + i);
  }
  printf("\n");
  TVMFFIAny gi[2] = {ext, tvmffi_c_int(5)}, r;
  if (callg("ffi.ArrayGetItem", gi, 2, &r) == 0) {
    printf("ArrayGetItem(ext, 5) = ");
    print_value(&r);
    printf("\n");
    release(&r);
  }
  release(&ext);
  TVMFFIAny bad[1] = {tvmffi_c_raw_str("x")};
  TVMFFIAny badarr;
  callg("ffi.Array", bad, 1, &badarr);
  call_print(mod, "sum_array", &badarr, 1, NULL);
  release(&badarr);
  release(&arr);

  /* Maps: small (3) and dense (11) made here, iterated and searched there */
  int sizes[2] = {3, 11};
  for (int s = 0; s < 2; ++s) {
    TVMFFIAny m = our_map(sizes[s]);
    call_print(mod, "map_join", &m, 1, NULL);
    TVMFFIAny ga[2] = {m, tvmffi_c_raw_str("key-number-1")};
    call_print(mod, "map_get", ga, 2, NULL);
    ga[1] = tvmffi_c_raw_str("k2");
    call_print(mod, "map_get", ga, 2, NULL);
    ga[1] = tvmffi_c_raw_str("absent");
    call_print(mod, "map_get", ga, 2, NULL);
    TVMFFIAny sa[3] = {m, tvmffi_c_raw_str("new-key-from-c"), tvmffi_c_int(99)}, m2;
    call_print(mod, "map_set", sa, 3, &m2);
    print_map("  map_set result", &m2);
    release(&m2);
    release(&m);
  }
  /* Maps made there, read here (small and dense) */
  int made[3] = {2, 4, 9};
  for (int s = 0; s < 3; ++s) {
    TVMFFIAny n = tvmffi_c_int(made[s]), m;
    void* f = fn(mod, "make_map");
    if (callf(f, &n, 1, &m, "make_map") == 0) {
      char label[32];
      snprintf(label, sizeof(label), "make_map(%d)", made[s]);
      print_map(label, &m);
      TVMFFIAny ga[2] = {m, tvmffi_c_raw_str("c1")}, v;
      if (callg("ffi.MapGetItem", ga, 2, &v) == 0) printf("  MapGetItem(c1) = %lld\n", (long long)v.v_int64);
      release(&m);
    }
    TVMFFIObjectDecRef(f);
  }

  /* Shape both ways */
  TVMFFIAny dims[3] = {tvmffi_c_int(2), tvmffi_c_int(3), tvmffi_c_int(7)}, shp;
  callg("ffi.Shape", dims, 3, &shp);
  call_print(mod, "shape_prod", &shp, 1, NULL);
  release(&shp);
  TVMFFIAny three = tvmffi_c_int(3);
  void* ms = fn(mod, "make_shape");
  if (callf(ms, &three, 1, &shp, "make_shape") == 0) {
    TVMFFIShapeCell* c = tvmffi_c_shape_cell(shp.v_obj);
    printf("make_shape(3): type=%d size=%zu dims=[%lld,%lld,%lld]\n", (int)shp.type_index, c->size,
           (long long)c->data[0], (long long)c->data[1], (long long)c->data[2]);
    release(&shp);
  }
  TVMFFIObjectDecRef(ms);

  /* Tensors: one we allocated, a strided DLPack import, one allocated there */
  int64_t ashape[2] = {3, 4};
  DLTensor proto;
  memset(&proto, 0, sizeof(proto));
  proto.device.device_type = kDLCPU;
  proto.ndim = 2;
  proto.shape = ashape;
  proto.dtype.code = kDLFloat;
  proto.dtype.bits = 32;
  proto.dtype.lanes = 1;
  TVMFFIObjectHandle t = NULL;
  CHECK(TVMFFIEnvTensorAlloc(&proto, &t) == 0);
  float* p = (float*)tvmffi_c_tensor(t)->data;
  for (int i = 0; i < 12; ++i) p[i] = (float)(i + 1);
  TVMFFIAny ta = obj_any(t);
  call_print(mod, "tensor_sum", &ta, 1, NULL);
  call_print(mod, "tensor_info", &ta, 1, NULL);
  /* transposed view (4x3, strides 1,4) of the same memory */
  int64_t tshape[2] = {4, 3}, tstrides[2] = {1, 4};
  DLTensor vp = *tvmffi_c_tensor(t);
  vp.shape = tshape;
  vp.strides = tstrides;
  TVMFFIObjectHandle view = NULL;
  CHECK(TVMFFITensorCreateUnsafeView(t, &vp, &view) == 0);
  TVMFFIObjectDecRef(t);
  TVMFFIAny va = obj_any(view);
  call_print(mod, "tensor_sum", &va, 1, NULL);
  call_print(mod, "tensor_info", &va, 1, NULL);
  TVMFFIObjectDecRef(view);
  TVMFFIAny rc[2] = {tvmffi_c_int(2), tvmffi_c_int(5)}, made_t;
  void* mt = fn(mod, "make_tensor");
  if (callf(mt, rc, 2, &made_t, "make_tensor") == 0) {
    DLTensor* d = tvmffi_c_tensor(made_t.v_obj);
    const float* q = (const float*)d->data;
    printf("make_tensor(2,5): type=%d shape=[%lld,%lld] strides=[%lld,%lld] q[9]=%g\n",
           (int)made_t.type_index, (long long)d->shape[0], (long long)d->shape[1],
           (long long)d->strides[0], (long long)d->strides[1], q[9]);
    call_print(mod, "tensor_sum", &made_t, 1, NULL);
    DLManagedTensorVersioned* out = NULL;
    CHECK(TVMFFITensorToDLPackVersioned(made_t.v_obj, &out) == 0);
    release(&made_t);
    printf("exported tensor still readable: %g\n", ((const float*)out->dl_tensor.data)[9]);
    out->deleter(out);
  }
  TVMFFIObjectDecRef(mt);
  TVMFFIObjectDecRef(mod);
  /* The library module stays referenced by __tvm_ffi__library_ctx users? No:
   * only our own objects count; everything made above must be gone except
   * the globals' cached values. */
  printf("live objects delta: %lld\n", (long long)(tvmffi_rt_live_objects() - base));
  return failures != 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, NULL, _IOLBF, 0);
  if (argc >= 2 && strcmp(argv[1], "tensor") == 0) return cmd_tensor();
  if (argc >= 2 && strcmp(argv[1], "bigint") == 0) return cmd_bigint();
  if (argc >= 4 && strcmp(argv[1], "load") == 0) {
    return cmd_load(argv[2], argv[3], argc >= 5 && strcmp(argv[4], "loader") == 0);
  }
  if (argc >= 3 && strcmp(argv[1], "cxx") == 0) return cmd_cxx(argv[2]);
  fprintf(stderr, "usage: rt_ext tensor|bigint|load LIBBIN CTORLIB [loader]|cxx LIB\n");
  return 2;
}
