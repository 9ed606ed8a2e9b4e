// tvm::ffi::ToJSONGraph / FromJSONGraph and
// VisitErrorContext::FindAccessPaths for libraries built with the official
// headers: they call the globals ffi.ToJSONGraph / ffi.FromJSONGraph
// (10_extra/serialization.c) and ffi.VisitErrorContext.FindAccessPaths
// (10_extra/visit_error_paths.c) through the C ABI and throw their errors.
#include <string>

#include "ffi_abi.h"

namespace tvm {
namespace ffi {

TVMFFI_CXX_API Any ToJSONGraph(const Any& value, const Any& metadata);
TVMFFI_CXX_API Any FromJSONGraph(const Any& value);

class TVMFFI_CXX_API VisitErrorContext {
 public:
  static Array<Any> FindAccessPaths(const ObjectRef& root, const VisitErrorContext& visit_context,
                                    bool allow_prefix_match);
};

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

namespace {
TVMFFIAny ObjectArg(TVMFFIObject* obj) {
  TVMFFIAny a;
  rt::any_none(&a);
  if (obj != nullptr) {
    a.type_index = obj->type_index;
    a.v_obj = obj;
  }
  return a;
}
}  // namespace

Array<Any> VisitErrorContext::FindAccessPaths(const ObjectRef& root,
                                              const VisitErrorContext& visit_context,
                                              bool allow_prefix_match) {
  // a VisitErrorContext is an ObjectRef: one object pointer
  const ObjectRef& ctx = reinterpret_cast<const ObjectRef&>(visit_context);
  TVMFFIAny args[3] = {ObjectArg(root.get()), ObjectArg(ctx.get()), {}};
  args[2].type_index = kTVMFFIBool;
  args[2].v_int64 = allow_prefix_match ? 1 : 0;
  Any r = CallGlobal("ffi.VisitErrorContext.FindAccessPaths", args, 3);
  TVMFFIAny raw = r.take();
  if (raw.type_index != kTVMFFIArray) {
    rt::release(&raw);
    rt::throw_error("InternalError", "FindAccessPaths did not return an Array");
  }
  return Array<Any>(raw.v_obj);
}

}  // namespace ffi
}  // namespace tvm
