// tvm::ffi::DeepCopy, ReprPrint, RecursiveHash and RecursiveEq/Lt/Le/Gt/Ge
// (the official extra/dataclass.h exports): each calls our registered
// global of the same name (runtime/src/10_extra/dataclass_*.c) through the
// C API and throws its error as a tvm::ffi::Error.
#include <cstring>

#include "ffi_abi.h"

namespace tvm {
namespace ffi {
namespace {

// Calls global `name` on views of args; returns the owned result.
TVMFFIAny call_global(const char* name, const TVMFFIAny* args, int32_t n) {
  TVMFFIByteArray b{name, std::strlen(name)};
  TVMFFIObjectHandle f = nullptr;
  if (TVMFFIFunctionGetGlobal(&b, &f) != 0) rt::throw_raised();
  if (f == nullptr) rt::throw_error("RuntimeError", std::string(name) + " is not registered");
  TVMFFIAny views[2];
  for (int32_t i = 0; i < n; ++i) views[i] = args[i];
  TVMFFIAny ret;
  rt::any_none(&ret);
  int rc = TVMFFIFunctionCall(f, views, n, &ret);
  TVMFFIObjectDecRef(f);
  if (rc != 0) rt::throw_raised();
  return ret;
}

bool compare(const char* name, const Any& lhs, const Any& rhs) {
  TVMFFIAny args[2] = {lhs.raw(), rhs.raw()};
  TVMFFIAny r = call_global(name, args, 2);
  return r.v_int64 != 0;
}

}  // namespace

TVMFFI_CXX_API Any DeepCopy(const Any& value);
TVMFFI_CXX_API String ReprPrint(const Any& value);
TVMFFI_CXX_API int64_t RecursiveHash(const Any& value);
TVMFFI_CXX_API bool RecursiveEq(const Any& lhs, const Any& rhs);
TVMFFI_CXX_API bool RecursiveLt(const Any& lhs, const Any& rhs);
TVMFFI_CXX_API bool RecursiveLe(const Any& lhs, const Any& rhs);
TVMFFI_CXX_API bool RecursiveGt(const Any& lhs, const Any& rhs);
TVMFFI_CXX_API bool RecursiveGe(const Any& lhs, const Any& rhs);

Any DeepCopy(const Any& value) { return Any(call_global("ffi.DeepCopy", &value.raw(), 1)); }

String ReprPrint(const Any& value) {
  Any text(call_global("ffi.ReprPrint", &value.raw(), 1));
  TVMFFIAny raw = text.raw();
  TVMFFIByteArray b{"", 0};
  if (raw.type_index == kTVMFFISmallStr) b = TVMFFISmallBytesGetContentByteArray(&raw);
  else if (raw.type_index == kTVMFFIStr) b = *TVMFFIBytesGetByteArrayPtr(raw.v_obj);
  return String(b.data, b.size);
}

int64_t RecursiveHash(const Any& value) {
  return call_global("ffi.RecursiveHash", &value.raw(), 1).v_int64;
}
bool RecursiveEq(const Any& lhs, const Any& rhs) { return compare("ffi.RecursiveEq", lhs, rhs); }
bool RecursiveLt(const Any& lhs, const Any& rhs) { return compare("ffi.RecursiveLt", lhs, rhs); }
bool RecursiveLe(const Any& lhs, const Any& rhs) { return compare("ffi.RecursiveLe", lhs, rhs); }
bool RecursiveGt(const Any& lhs, const Any& rhs) { return compare("ffi.RecursiveGt", lhs, rhs); }
bool RecursiveGe(const Any& lhs, const Any& rhs) { return compare("ffi.RecursiveGe", lhs, rhs); }

}  // namespace ffi
}  // namespace tvm
