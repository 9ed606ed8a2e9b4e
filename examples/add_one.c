/* A small kernel library in plain C against the TVM-FFI stable C ABI:
 * the shape of what a DSL compiler emits. Build it with run.sh. */
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

/* mul3(a, b, c) -> a * b * c on integers. */
TVM_FFI_DLL_EXPORT int __tvm_ffi_mul3(void* handle, const TVMFFIAny* args, int32_t num_args,
                                      TVMFFIAny* result) {
  (void)handle;
  if (num_args != 3) {
    TVMFFIErrorSetRaisedFromCStr("TypeError", "mul3 expects 3 arguments");
    return -1;
  }
  int64_t p = 1;
  for (int i = 0; i < 3; ++i) {
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
GETTER(__tvm_ffi__metadata_mul3, SCHEMA(T("int"), T("int") "," T("int") "," T("int")))
GETTER(__tvm_ffi__doc_mul3, "Multiply three integers.")
