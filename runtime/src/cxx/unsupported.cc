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

class TVMFFI_CXX_API StructuralEqual {
 public:
  static bool Equal(const Any& lhs, const Any& rhs, bool map_free_vars, bool skip_tensor_content);
  static Optional<Any> GetFirstMismatch(const Any& lhs, const Any& rhs, bool map_free_vars,
                                        bool skip_tensor_content);
};

class TVMFFI_CXX_API StructuralHash {
 public:
  static uint64_t Hash(const Any& value, bool map_free_vars, bool skip_tensor_content);
};


bool StructuralEqual::Equal(const Any&, const Any&, bool, bool) {
  unavailable("tvm::ffi::StructuralEqual::Equal");
}
Optional<Any> StructuralEqual::GetFirstMismatch(const Any&, const Any&, bool, bool) {
  unavailable("tvm::ffi::StructuralEqual::GetFirstMismatch");
}
uint64_t StructuralHash::Hash(const Any&, bool, bool) {
  unavailable("tvm::ffi::StructuralHash::Hash");
}

}  // namespace ffi
}  // namespace tvm
