// C++ functions of the official runtime that rest on its reflection-driven
// machinery (structural equality and hashing, dataclass printing, copying
// and comparison, JSON graph serialization, access paths). They are
// exported so that libraries importing them load (TVM and TileLang import
// several); calling one raises a RuntimeError that names it.
#include <string>

#include "ffi_abi.h"

namespace tvm {
namespace ffi {
namespace {

[[noreturn]] void unavailable(const char* what) {
  rt::throw_error("RuntimeError", std::string(what) +
                                      " is not implemented by the tvmffi runtime (it needs the "
                                      "reflection machinery of the official libtvm_ffi.so)");
}

}  // namespace

class TVMFFI_CXX_API VisitErrorContext {
 public:
  static Array<Any> FindAccessPaths(const ObjectRef& root, const VisitErrorContext& visit_context,
                                    bool allow_prefix_match);
};

TVMFFI_CXX_API Any DeepCopy(const Any& value);
TVMFFI_CXX_API String ReprPrint(const Any& value);
TVMFFI_CXX_API int64_t RecursiveHash(const Any& value);
TVMFFI_CXX_API bool RecursiveEq(const Any& lhs, const Any& rhs);
TVMFFI_CXX_API bool RecursiveLt(const Any& lhs, const Any& rhs);
TVMFFI_CXX_API bool RecursiveLe(const Any& lhs, const Any& rhs);
TVMFFI_CXX_API bool RecursiveGt(const Any& lhs, const Any& rhs);
TVMFFI_CXX_API bool RecursiveGe(const Any& lhs, const Any& rhs);
TVMFFI_CXX_API Any ToJSONGraph(const Any& value, const Any& metadata);
TVMFFI_CXX_API Any FromJSONGraph(const Any& value);

Array<Any> VisitErrorContext::FindAccessPaths(const ObjectRef&, const VisitErrorContext&, bool) {
  unavailable("tvm::ffi::VisitErrorContext::FindAccessPaths");
}
Any DeepCopy(const Any&) { unavailable("tvm::ffi::DeepCopy"); }
String ReprPrint(const Any&) { unavailable("tvm::ffi::ReprPrint"); }
int64_t RecursiveHash(const Any&) { unavailable("tvm::ffi::RecursiveHash"); }
bool RecursiveEq(const Any&, const Any&) { unavailable("tvm::ffi::RecursiveEq"); }
bool RecursiveLt(const Any&, const Any&) { unavailable("tvm::ffi::RecursiveLt"); }
bool RecursiveLe(const Any&, const Any&) { unavailable("tvm::ffi::RecursiveLe"); }
bool RecursiveGt(const Any&, const Any&) { unavailable("tvm::ffi::RecursiveGt"); }
bool RecursiveGe(const Any&, const Any&) { unavailable("tvm::ffi::RecursiveGe"); }
Any ToJSONGraph(const Any&, const Any&) { unavailable("tvm::ffi::ToJSONGraph"); }
Any FromJSONGraph(const Any&) { unavailable("tvm::ffi::FromJSONGraph"); }

}  // namespace ffi
}  // namespace tvm
