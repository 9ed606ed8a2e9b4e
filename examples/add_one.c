/* A small kernel library in plain C against the TVM-FFI stable C ABI:
 * the shape of what a DSL compiler emits. Build it with run.sh.
 * -DEXAMPLE_V2 builds a "next release" with API changes, for `tvmffi diff`. */
#include <stddef.h>
#include <string.h>
#include <tvm/ffi/c_api.h>

static int get_f32_tensor(const TVMFFIAny* a, DLTensor** out) {
  if (a->type_index == kTVMFFIDLTensorPtr) {
    *out = (DLTensor*)a->v_ptr;
  } else if (a->type_index == kTVMFFITensor) {
    *out = (DLTensor*)((char*)a->v_obj + sizeof(TVMFFIObject));
  } else {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "expected a tensor");
    return -1;
  }
  if ((*out)->dtype.code != kDLFloat || (*out)->dtype.bits != 32 || (*out)->dtype.lanes != 1) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "expected a float32 tensor");
    return -1;
  }
  if ((*out)->device.device_type != kDLCPU) { /* its data is not ours to read */
    TVMFFIErrorSetRaisedFromCStr("ValueError", "expected a CPU tensor");
    return -1;
  }
  /* A view (a slice, a transpose) is refused: the loops below walk memory in order. */
  int64_t want = 1;
  for (int i = (*out)->ndim - 1; i >= 0; want *= (*out)->shape[i--]) {
    if ((*out)->strides && (*out)->shape[i] > 1 && (*out)->strides[i] != want) {
      TVMFFIErrorSetRaisedFromCStr("ValueError", "expected a compact tensor");
      return -1;
    }
  }
  return 0;
}

static int64_t numel(const DLTensor* t) {
  int64_t n = 1;
  for (int i = 0; i < t->ndim; ++i) n *= t->shape[i];
  return n;
}

/* add_one(x): x += 1 in place, for a compact float32 tensor. */
TVM_FFI_DLL_EXPORT int __tvm_ffi_add_one(void* handle, const TVMFFIAny* args, int32_t num_args,
                                         TVMFFIAny* result) {
  (void)handle;
  DLTensor* x;
  if (num_args != 1) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "add_one expects 1 argument");
    return -1;
  }
  if (get_f32_tensor(&args[0], &x) != 0) return -1;
  float* data = (float*)((char*)x->data + x->byte_offset);
  for (int64_t i = 0, n = numel(x); i < n; ++i) data[i] += 1.0f;
  result->type_index = kTVMFFINone;
  result->zero_padding = 0;
  result->v_int64 = 0;
  return 0;
}

#ifdef EXAMPLE_V2
#define MUL_ARGS 2 /* v2: mul3 takes two arguments (an incompatible change) */
#else
#define MUL_ARGS 3
#endif

/* mul3(a, b, c) -> a * b * c on integers. */
TVM_FFI_DLL_EXPORT int __tvm_ffi_mul3(void* handle, const TVMFFIAny* args, int32_t num_args,
                                      TVMFFIAny* result) {
  (void)handle;
  if (num_args != MUL_ARGS) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "mul3 expects 3 arguments");
    return -1;
  }
  int64_t p = 1;
  for (int i = 0; i < MUL_ARGS; ++i) {
    if (args[i].type_index != kTVMFFIInt) {
      TVMFFIErrorSetRaisedFromCStr("TypeError", "mul3 expects integers");
      return -1;
    }
    p *= args[i].v_int64;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = p;
  return 0;
}

/* Metadata and doc getters: what TVM_FFI_DLL_EXPORT_TYPED_FUNC emits for C++
 * code, written by hand. Each returns a String; metadata holds JSON whose
 * "type_schema" member is itself a JSON string describing the signature. */
static int return_string(const char* text, TVMFFIAny* result) {
  TVMFFIByteArray s = {text, strlen(text)};
  return TVMFFIStringFromByteArray(&s, result);
}

#define SCHEMA(ret, params)                                                        \
  "{\"type_schema\": \"{\\\"type\\\":\\\"ffi.Function\\\",\\\"named_args\\\":{"  \
  "\\\"return\\\":[" ret "],\\\"params\\\":[" params "]}}\"}"
#define T(name) "{\\\"type\\\":\\\"" name "\\\"}"

#define GETTER(sym, text)                                                          \
  TVM_FFI_DLL_EXPORT int sym(void* handle, const TVMFFIAny* args, int32_t num_args, \
                             TVMFFIAny* result) {                                   \
    (void)handle;                                                                   \
    (void)args;                                                                     \
    (void)num_args;                                                                 \
    return return_string(text, result);                                             \
  }

GETTER(__tvm_ffi__metadata_add_one, SCHEMA(T("None"), T("DLTensor*")))
GETTER(__tvm_ffi__doc_add_one, "Add 1 to every element of a float32 tensor, in place.")
#ifdef EXAMPLE_V2
GETTER(__tvm_ffi__metadata_mul3, SCHEMA(T("int"), T("int") "," T("int")))
#else
GETTER(__tvm_ffi__metadata_mul3, SCHEMA(T("int"), T("int") "," T("int") "," T("int")))
#endif
GETTER(__tvm_ffi__doc_mul3, "Multiply three integers.")

#ifdef EXAMPLE_V2
/* v2 only: a new export (a compatible addition). */
TVM_FFI_DLL_EXPORT int __tvm_ffi_negate(void* handle, const TVMFFIAny* args, int32_t num_args,
                                        TVMFFIAny* result) {
  (void)handle;
  if (num_args != 1 || args[0].type_index != kTVMFFIInt) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "negate expects one integer");
    return -1;
  }
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = -args[0].v_int64;
  return 0;
}
GETTER(__tvm_ffi__metadata_negate, SCHEMA(T("int"), T("int")))
#endif

/* ---- what C++ libraries register while loading, written by hand ----
 * A global function `example.scale(x, factor) -> float` and an object type
 * `example.Point` with two reflected fields (v2 adds a third). */
static int scale(void* self, const TVMFFIAny* args, int32_t num_args, TVMFFIAny* result) {
  (void)self;
  double v[2];
  if (num_args != 2) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "example.scale expects 2 arguments");
    return -1;
  }
  for (int i = 0; i < 2; ++i) {
    if (args[i].type_index == kTVMFFIFloat) {
      v[i] = args[i].v_float64;
    } else if (args[i].type_index == kTVMFFIInt) {
      v[i] = (double)args[i].v_int64;
    } else {
      TVMFFIErrorSetRaisedFromCStr("TypeError", "example.scale expects numbers");
      return -1;
    }
  }
  result->type_index = kTVMFFIFloat;
  result->zero_padding = 0;
  result->v_float64 = v[0] * v[1];
  return 0;
}

typedef struct {
  TVMFFIObject header;
  int64_t x;
  double y;
  int64_t z;
} Point;

static int get_int(void* field, TVMFFIAny* result) {
  result->type_index = kTVMFFIInt;
  result->zero_padding = 0;
  result->v_int64 = *(int64_t*)field;
  return 0;
}

static int get_float(void* field, TVMFFIAny* result) {
  result->type_index = kTVMFFIFloat;
  result->zero_padding = 0;
  result->v_float64 = *(double*)field;
  return 0;
}

static TVMFFIByteArray bytes(const char* s) {
  TVMFFIByteArray b = {s, strlen(s)};
  return b;
}

static int register_field(int32_t type_index, const char* name, const char* doc, int64_t offset,
                          int is_float) {
  TVMFFIFieldInfo f;
  memset(&f, 0, sizeof(f));
  f.name = bytes(name);
  f.doc = bytes(doc);
  f.metadata = bytes(is_float ? "{\"type_schema\": \"{\\\"type\\\":\\\"float\\\"}\"}"
                              : "{\"type_schema\": \"{\\\"type\\\":\\\"int\\\"}\"}");
  f.size = 8;
  f.alignment = 8;
  f.offset = offset;
  f.getter = is_float ? get_float : get_int;
  f.field_static_type_index = is_float ? kTVMFFIFloat : kTVMFFIInt;
  return TVMFFITypeRegisterField(type_index, &f);
}

__attribute__((constructor)) static void register_example(void) {
  TVMFFIObjectHandle fn = NULL;
  TVMFFIMethodInfo info;
  memset(&info, 0, sizeof(info));
  if (TVMFFIFunctionCreate(NULL, scale, NULL, &fn) == 0) {
    info.name = bytes("example.scale");
    info.doc = bytes("Multiply x by factor.");
    info.metadata = bytes(SCHEMA(T("float"), T("float") "," T("float")));
    info.method.type_index = kTVMFFIFunction;
    info.method.v_obj = (TVMFFIObject*)fn;
    TVMFFIFunctionSetGlobalFromMethodInfo(&info, 1);
    TVMFFIObjectDecRef(fn);
  }
  TVMFFIByteArray key = bytes("example.Point");
  int32_t index = TVMFFITypeGetOrAllocIndex(&key, -1, 1, 0, 0, kTVMFFIObject);
  if (index < 0) return;
  register_field(index, "x", "horizontal position", (int64_t)offsetof(Point, x), 0);
  register_field(index, "y", "vertical position", (int64_t)offsetof(Point, y), 1);
#ifdef EXAMPLE_V2
  register_field(index, "z", "depth", (int64_t)offsetof(Point, z), 0);
#endif
}
