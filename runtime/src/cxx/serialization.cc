// tvm::ffi::ToJSONGraph / FromJSONGraph for libraries built with the
// official headers: both call the globals ffi.ToJSONGraph / ffi.FromJSONGraph
// (10_extra/serialization.c) through the C ABI and throw their errors.
#include <string>

#include "ffi_abi.h"

namespace tvm {
namespace ffi {

TVMFFI_CXX_API Any ToJSONGraph(const Any& value, const Any& metadata);
TVMFFI_CXX_API Any FromJSONGraph(const Any& value);

namespace {

Any CallGlobal(const char* name, const TVMFFIAny* args, int32_t nargs) {
  TVMFFIByteArray n{name, std::char_traits<char>::length(name)};
  TVMFFIObjectHandle f = nullptr;
  if (TVMFFIFunctionGetGlobal(&n, &f) != 0) rt::throw_raised();
  if (f == nullptr) rt::throw_error("RuntimeError", std::string(name) + " is not registered");
  TVMFFIAny ret;
  rt::any_none(&ret);
  int rc = TVMFFIFunctionCall(f, const_cast<TVMFFIAny*>(args), nargs, &ret);
  TVMFFIObjectDecRef(f);
  if (rc != 0) rt::throw_raised();
  return Any(ret);
}

}  // namespace

Any ToJSONGraph(const Any& value, const Any& metadata) {
  TVMFFIAny args[2] = {value.raw(), metadata.raw()};
  return CallGlobal("ffi.ToJSONGraph", args, 2);
}

Any FromJSONGraph(const Any& value) { return CallGlobal("ffi.FromJSONGraph", &value.raw(), 1); }

}  // namespace ffi
}  // namespace tvm
