// The C++ surface of libtvm_ffi.so: class shapes that libraries built with
// the official C++ headers link against.
//
// Only facts of the ABI are mirrored here: class and namespace names (they
// make the mangled symbol names), the order of virtual functions (it makes
// the vtable), and the size and placement of data members (they make object
// layouts). Every class is a thin holder of raw C ABI values (TVMFFIAny or
// an object pointer) with helpers of our own; nothing here is the official
// implementation.
//
// Calling conventions follow from the shapes: Any, String and Optional<T>
// for a non-object T hold one TVMFFIAny (16 bytes); ObjectRef and its
// subclasses, Optional<ObjectRef-type>, Array, Map and TypedFunction hold
// one object pointer. All have user-provided destructors, so they are
// returned through a hidden pointer and passed by value as a pointer to a
// temporary, exactly like the official classes.
#ifndef TVMFFI_RT_CXX_FFI_ABI_H_
#define TVMFFI_RT_CXX_FFI_ABI_H_

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

#include <tvm/ffi/c_api.h>

#define TVMFFI_CXX_API __attribute__((visibility("default")))
#define TVMFFI_CXX_HIDDEN __attribute__((visibility("hidden")))

namespace tvm {
namespace ffi {

// ---- raw helpers (ours) ----
namespace rt {
inline bool is_obj(const TVMFFIAny& a) { return a.type_index >= kTVMFFIStaticObjectBegin; }
inline void any_none(TVMFFIAny* a) {
  a->type_index = kTVMFFINone;
  a->zero_padding = 0;
  a->v_int64 = 0;
}
inline void retain(const TVMFFIAny& a) {
  if (is_obj(a) && a.v_obj) TVMFFIObjectIncRef(a.v_obj);
}
inline void release(TVMFFIAny* a) {
  if (is_obj(*a) && a->v_obj) TVMFFIObjectDecRef(a->v_obj);
  any_none(a);
}
// Raises the error pending in this thread as a C++ tvm::ffi::Error.
[[noreturn]] TVMFFI_CXX_HIDDEN void throw_raised();
// Throws a new tvm::ffi::Error of `kind` with `message`.
[[noreturn]] TVMFFI_CXX_HIDDEN void throw_error(const char* kind, const std::string& message);
// Calls f() and turns a C++ exception into a raised error: 0 or -1.
template <typename F>
int guard(F&& f) noexcept;
}  // namespace rt

// ---- objects ----
// Object has no virtual functions: a header and nothing else.
class Object {
 public:
  Object() : header_() {}

 protected:
  TVMFFIObject header_;
};

// One strong reference (or null).
class ObjectRef {
 public:
  ObjectRef() : data_(nullptr) {}
  explicit ObjectRef(TVMFFIObject* owned) : data_(owned) {}
  ObjectRef(const ObjectRef& o) : data_(o.data_) {
    if (data_) TVMFFIObjectIncRef(data_);
  }
  ObjectRef(ObjectRef&& o) noexcept : data_(o.data_) { o.data_ = nullptr; }
  ObjectRef& operator=(ObjectRef o) noexcept {
    TVMFFIObject* t = data_;
    data_ = o.data_;
    o.data_ = t;
    return *this;
  }
  ~ObjectRef() {
    if (data_) TVMFFIObjectDecRef(data_);
  }
  TVMFFIObject* get() const { return data_; }
  TVMFFIObject* release() {
    TVMFFIObject* t = data_;
    data_ = nullptr;
    return t;
  }

 protected:
  TVMFFIObject* data_;
};

// An owned TVMFFIAny.
class Any {
 public:
  Any() { rt::any_none(&data_); }
  // takes ownership of `owned`
  explicit Any(const TVMFFIAny& owned) : data_(owned) {}
  Any(const Any& o) : data_(o.data_) { rt::retain(data_); }
  Any(Any&& o) noexcept : data_(o.data_) { rt::any_none(&o.data_); }
  Any& operator=(Any o) noexcept {
    TVMFFIAny t = data_;
    data_ = o.data_;
    o.data_ = t;
    return *this;
  }
  ~Any() { rt::release(&data_); }
  const TVMFFIAny& raw() const { return data_; }
  TVMFFIAny take() {
    TVMFFIAny t = data_;
    rt::any_none(&data_);
    return t;
  }

 protected:
  TVMFFIAny data_;
};

// A string: small (inline) or a heap String object, in one TVMFFIAny.
class String {
 public:
  // the empty string: a small string of length 0
  String() {
    rt::any_none(&data_);
    data_.type_index = kTVMFFISmallStr;
  }
  String(const char* data, size_t size);
  explicit String(const std::string& s) : String(s.data(), s.size()) {}
  String(const String& o) : data_(o.data_) { rt::retain(data_); }
  String& operator=(String o) noexcept {
    TVMFFIAny t = data_;
    data_ = o.data_;
    o.data_ = t;
    return *this;
  }
  ~String() { rt::release(&data_); }
  TVMFFIByteArray bytes() const;
  std::string str() const {
    TVMFFIByteArray b = bytes();
    return std::string(b.data, b.size);
  }
  const TVMFFIAny& raw() const { return data_; }
  TVMFFIAny take() {
    TVMFFIAny t = data_;
    rt::any_none(&data_);
    return t;
  }

 private:
  TVMFFIAny data_;
};

class Function : public ObjectRef {
 public:
  using ObjectRef::ObjectRef;
};

// Optional<T>: an object pointer for object-reference T, else one TVMFFIAny
// (None = absent).
template <typename T, typename = void>
class Optional {
 public:
  Optional() { rt::any_none(&data_); }
  explicit Optional(const TVMFFIAny& owned) : data_(owned) {}
  Optional(const Optional& o) : data_(o.data_) { rt::retain(data_); }
  Optional& operator=(Optional o) noexcept {
    TVMFFIAny t = data_;
    data_ = o.data_;
    o.data_ = t;
    return *this;
  }
  ~Optional() { rt::release(&data_); }
  bool has_value() const { return data_.type_index != kTVMFFINone; }
  const TVMFFIAny& raw() const { return data_; }

 private:
  TVMFFIAny data_;
};

template <>
class Optional<Function, void> : public ObjectRef {
 public:
  Optional() = default;
  explicit Optional(TVMFFIObject* owned) : ObjectRef(owned) {}
  bool has_value() const { return data_ != nullptr; }
};

// Array<T> and Map<K, V>: one object pointer (never null when made by C++).
template <typename T, typename = void>
class Array : public ObjectRef {
 public:
  using ObjectRef::ObjectRef;
};
template <typename K, typename V, typename = void>
class Map : public ObjectRef {
 public:
  using ObjectRef::ObjectRef;
};

// Bytes: same cell as String.
class Bytes {
 public:
  Bytes() { rt::any_none(&data_); }
  Bytes(const Bytes& o) : data_(o.data_) { rt::retain(data_); }
  Bytes& operator=(const Bytes&) = delete;
  ~Bytes() { rt::release(&data_); }

 private:
  TVMFFIAny data_;
};

// TypedFunction<R(Args...)> holds one Function.
template <typename F>
class TypedFunction;
template <typename R, typename... Args>
class TypedFunction<R(Args...)> {
 public:
  TVMFFIObject* handle() const { return packed_.get(); }

 private:
  Function packed_;
};

class Module : public ObjectRef {
 public:
  using ObjectRef::ObjectRef;
  TVMFFI_CXX_API static Module LoadFromFile(const String& file_name);
  TVMFFI_CXX_API static void VisitContextSymbols(
      const TypedFunction<void(String, void*)>& callback);
};

// ---- modules ----
// The virtual functions in vtable order; no virtual destructor. Layout:
// [vptr][TVMFFIObject header][imports_][import_lookup_cache_], the object
// handle being the address of the header (8 bytes in).
class TVMFFI_CXX_API ModuleObj : public Object {
 public:
  virtual const char* kind() const = 0;
  TVMFFI_CXX_HIDDEN virtual int GetPropertyMask() const;
  virtual Optional<Function> GetFunction(const String& name) = 0;
  TVMFFI_CXX_HIDDEN virtual bool ImplementsFunction(const String& name);
  TVMFFI_CXX_HIDDEN virtual Optional<String> GetFunctionDoc(const String& name);
  TVMFFI_CXX_HIDDEN virtual Optional<String> GetFunctionMetadata(const String& name);
  TVMFFI_CXX_HIDDEN virtual void WriteToFile(const String& file_name, const String& format) const;
  TVMFFI_CXX_HIDDEN virtual Array<String> GetWriteFormats() const;
  TVMFFI_CXX_HIDDEN virtual Bytes SaveToBytes() const;
  TVMFFI_CXX_HIDDEN virtual String InspectSource(const String& format) const;
  virtual void ImportModule(const Module& other);
  virtual void ClearImports();

  Optional<Function> GetFunction(const String& name, bool query_imports);
  bool ImplementsFunction(const String& name, bool query_imports);
  Optional<String> GetFunctionDoc(const String& name, bool query_imports);
  Optional<String> GetFunctionMetadata(const String& name, bool query_imports);

  // ours: the object handle <-> this
  TVMFFIObject* handle() { return &header_; }
  static ModuleObj* FromHandle(void* h) {
    return reinterpret_cast<ModuleObj*>(static_cast<char*>(h) - kHeaderOffset);
  }
  static constexpr size_t kHeaderOffset = sizeof(void*);
  TVMFFIObject* imports_obj() const { return imports_.get(); }
  void set_imports(TVMFFIObject* owned) { imports_ = Array<Any>(owned); }

 protected:
  ModuleObj() = default;
  Array<Any> imports_;

 private:
  Map<String, Function> import_lookup_cache_;
};

// ---- errors ----
// Layout: [vptr (std::exception, the primary base)][ObjectRef data_].
class TVMFFI_CXX_API Error : public ObjectRef, public std::exception {
 public:
  explicit Error(TVMFFIObject* owned_error) : ObjectRef(owned_error) {}
  TVMFFI_CXX_HIDDEN const char* what() const noexcept override;
};

class VisitErrorContext;

namespace rt {
template <typename F>
int guard(F&& f) noexcept {
  try {
    f();
    return 0;
  } catch (const Error& e) {
    TVMFFIErrorSetRaised(e.get());
  } catch (const std::exception& e) {
    TVMFFIErrorSetRaisedFromCStr("InternalError", e.what());
  } catch (...) {
    TVMFFIErrorSetRaisedFromCStr("InternalError", "a C++ exception of unknown type");
  }
  return -1;
}
}  // namespace rt

}  // namespace ffi
}  // namespace tvm

#endif  // TVMFFI_RT_CXX_FFI_ABI_H_
