// tvm::ffi::StructuralEqual and tvm::ffi::StructuralHash of the official
// C++ API, over the C implementation in 10_extra/structural_*.c. Libraries
// built with the official headers call these directly.
#include "10_extra/structural.h"
#include "ffi_abi.h"

namespace tvm {
namespace ffi {

class TVMFFI_CXX_API StructuralEqual {
 public:
  static bool Equal(const Any& lhs, const Any& rhs, bool map_free_vars, bool skip_tensor_content);
  // The official return type is Optional<Tuple<AccessPath, AccessPath>>: one
  // object pointer (null: no mismatch) returned through a hidden pointer,
  // which an ObjectRef reproduces.
  static ObjectRef GetFirstMismatch(const Any& lhs, const Any& rhs, bool map_free_vars,
                                    bool skip_tensor_content);
};

class TVMFFI_CXX_API StructuralHash {
 public:
  static uint64_t Hash(const Any& value, bool map_free_vars, bool skip_tensor_content);
};

bool StructuralEqual::Equal(const Any& lhs, const Any& rhs, bool map_free_vars,
                            bool skip_tensor_content) {
  int eq = 0;
  if (rt_structural_equal(&lhs.raw(), &rhs.raw(), map_free_vars, skip_tensor_content, &eq) != 0)
    rt::throw_raised();
  return eq != 0;
}

ObjectRef StructuralEqual::GetFirstMismatch(const Any& lhs, const Any& rhs, bool map_free_vars,
                                            bool skip_tensor_content) {
  TVMFFIAny out;
  rt::any_none(&out);
  if (rt_structural_first_mismatch(&lhs.raw(), &rhs.raw(), map_free_vars, skip_tensor_content,
                                   &out) != 0)
    rt::throw_raised();
  return ObjectRef(rt::is_obj(out) ? out.v_obj : nullptr);
}

uint64_t StructuralHash::Hash(const Any& value, bool map_free_vars, bool skip_tensor_content) {
  uint64_t h = 0;
  if (rt_structural_hash(&value.raw(), map_free_vars, skip_tensor_content, &h) != 0)
    rt::throw_raised();
  return h;
}

}  // namespace ffi
}  // namespace tvm
