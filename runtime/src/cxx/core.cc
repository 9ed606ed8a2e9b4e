// Errors and strings of the C++ surface: tvm::ffi::Error is thrown by our
// C++ functions and caught by library code (and the reverse), so its vtable
// and typeinfo are exported under the official names.
#include <cstring>
#include <string>

#include "ffi_abi.h"

namespace tvm {
namespace ffi {

const char* Error::what() const noexcept {
  // The message of the error object (TVMFFIErrorCell follows the header).
  if (data_ == nullptr) return "tvm::ffi::Error";
  const TVMFFIErrorCell* cell = reinterpret_cast<const TVMFFIErrorCell*>(data_ + 1);
  return cell->message.data ? cell->message.data : "";
}

String::String(const char* data, size_t size) {
  TVMFFIByteArray b{data, size};
  if (TVMFFIStringFromByteArray(&b, &data_) != 0) rt::throw_raised();
}

TVMFFIByteArray String::bytes() const {
  switch (data_.type_index) {
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
      return TVMFFISmallBytesGetContentByteArray(&data_);
    case kTVMFFIStr:
    case kTVMFFIBytes:
      return *TVMFFIBytesGetByteArrayPtr(data_.v_obj);
    case kTVMFFIRawStr:
      return TVMFFIByteArray{data_.v_c_str, std::strlen(data_.v_c_str)};
    default:
      return TVMFFIByteArray{"", 0};
  }
}

namespace rt {

void throw_raised() {
  TVMFFIObjectHandle err = nullptr;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == nullptr) throw_error("InternalError", "an FFI call failed without raising an error");
  throw Error(static_cast<TVMFFIObject*>(err));
}

void throw_error(const char* kind, const std::string& message) {
  TVMFFIByteArray k{kind, std::strlen(kind)};
  TVMFFIByteArray m{message.data(), message.size()};
  TVMFFIByteArray bt{"", 0};
  TVMFFIObjectHandle err = nullptr;
  if (TVMFFIErrorCreate(&k, &m, &bt, &err) != 0 || err == nullptr) throw std::bad_alloc();
  throw Error(static_cast<TVMFFIObject*>(err));
}

}  // namespace rt
}  // namespace ffi
}  // namespace tvm
