// tvm::ffi::ModuleObj and tvm::ffi::Module on this runtime.
//
// Two kinds of module objects meet here:
//  - ours (module.c: libraries and placeholders). They are allocated by
//    rt_cxx_module_alloc as a CModuleView, a ModuleObj whose virtual
//    functions call back into module.c, so library C++ code can call
//    mod->GetFunction(...), mod->ImportModule(...) or read mod->imports().
//  - subclasses of ModuleObj that libraries define and create themselves
//    (their vtable, their deleter). The ffi.Module* globals and import
//    lookups of module.c reach them through their virtual functions.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "ffi_abi.h"

extern "C" {
#include "../container_internal.h"
#include "bridge.h"
}

namespace tvm {
namespace ffi {
namespace {

constexpr const char kDocPrefix[] = "__tvm_ffi__doc_";
constexpr const char kMetadataPrefix[] = "__tvm_ffi__metadata_";
// a library module: binary serializable | runnable, as the reference reports
constexpr int kPropertyLibrary = 0b011;

Optional<String> own_getter(TVMFFIObject* h, const char* prefix, const String& name) {
  TVMFFIByteArray b = name.bytes();
  TVMFFIAny ret;
  rt::any_none(&ret);
  if (rt_cmod_own_getter(h, prefix, b.data, b.size, &ret) != 0) rt::throw_raised();
  return Optional<String>(ret);
}

// Our module objects, seen from C++.
class CModuleView final : public ModuleObj {
 public:
  using ModuleObj::GetFunction;
  using ModuleObj::GetFunctionDoc;
  using ModuleObj::GetFunctionMetadata;
  using ModuleObj::ImplementsFunction;

  const char* kind() const override {
    return rt_cmod_kind(const_cast<TVMFFIObject*>(&header_));
  }
  int GetPropertyMask() const override {
    return std::strcmp(kind(), "library") == 0 ? kPropertyLibrary : 0;
  }
  Optional<Function> GetFunction(const String& name) override {
    TVMFFIByteArray b = name.bytes();
    void* f = nullptr;
    if (rt_cmod_own_function(handle(), b.data, b.size, &f) != 0) rt::throw_raised();
    return Optional<Function>(static_cast<TVMFFIObject*>(f));
  }
  Optional<String> GetFunctionDoc(const String& name) override {
    return own_getter(handle(), kDocPrefix, name);
  }
  Optional<String> GetFunctionMetadata(const String& name) override {
    return own_getter(handle(), kMetadataPrefix, name);
  }
  void ImportModule(const Module& other) override {
    if (rt_cmod_import(handle(), other.get()) != 0) rt::throw_raised();
  }
  void ClearImports() override {
    if (rt_cmod_clear_imports(handle()) != 0) rt::throw_raised();
  }
};

// The import list of any module (ModuleObj::imports_), borrowed.
const TVMFFIAny* imports_of(ModuleObj* m, int64_t* n) {
  TVMFFIObject* arr = m->imports_obj();
  if (arr == nullptr) {
    *n = 0;
    return nullptr;
  }
  return rt_seq_items(arr, n);
}

bool reaches(ModuleObj* from, ModuleObj* target, int depth) {
  if (from == target) return true;
  if (depth > 10000) return false;
  int64_t n;
  const TVMFFIAny* items = imports_of(from, &n);
  for (int64_t i = 0; i < n; ++i) {
    if (items[i].type_index == kTVMFFIModule &&
        reaches(ModuleObj::FromHandle(items[i].v_obj), target, depth + 1)) {
      return true;
    }
  }
  return false;
}

// Walks the imports of m (depth first) until fn returns true.
template <typename Fn>
bool any_import(ModuleObj* m, Fn&& fn) {
  // hold references: fn may run library code that changes the imports
  int64_t n;
  const TVMFFIAny* items = imports_of(m, &n);
  std::vector<ObjectRef> held;
  held.reserve(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    if (items[i].type_index != kTVMFFIModule) continue;
    TVMFFIObjectIncRef(items[i].v_obj);
    held.emplace_back(items[i].v_obj);
  }
  for (const ObjectRef& r : held) {
    if (fn(ModuleObj::FromHandle(r.get()))) return true;
  }
  return false;
}

[[noreturn]] void unsupported(const ModuleObj* m, const char* what) {
  rt::throw_error("RuntimeError", std::string("Module[") + m->kind() + "] does not support " + what);
}

}  // namespace

// ---- ModuleObj: default virtual functions ----
int ModuleObj::GetPropertyMask() const { return 0; }
bool ModuleObj::ImplementsFunction(const String& name) { return GetFunction(name).has_value(); }
Optional<String> ModuleObj::GetFunctionDoc(const String&) { return Optional<String>(); }
Optional<String> ModuleObj::GetFunctionMetadata(const String&) { return Optional<String>(); }
void ModuleObj::WriteToFile(const String&, const String&) const { unsupported(this, "WriteToFile"); }
Array<String> ModuleObj::GetWriteFormats() const {
  rt_array* a = rt_array_new(0);
  if (a == nullptr) rt::throw_raised();
  return Array<String>(&a->header);
}
Bytes ModuleObj::SaveToBytes() const { unsupported(this, "SaveToBytes"); }
String ModuleObj::InspectSource(const String&) const { return String(); }

void ModuleObj::ImportModule(const Module& other) {
  if (other.get() == nullptr) rt::throw_error("ValueError", "ImportModule: the module is null");
  if (reaches(FromHandle(other.get()), this, 0)) {
    rt::throw_error("RuntimeError", "Cyclic dependency detected during import");
  }
  int64_t n;
  const TVMFFIAny* items = imports_of(this, &n);
  rt_array* a = rt_array_new(n + 1);
  if (a == nullptr) rt::throw_raised();
  for (int64_t i = 0; i < n; ++i) {
    TVMFFIAny v = items[i];
    rt::retain(v);
    rt_array_push_move(a, &v);
  }
  TVMFFIAny v;
  TVMFFIObjectIncRef(other.get());
  v.type_index = kTVMFFIModule;
  v.zero_padding = 0;
  v.v_obj = other.get();
  rt_array_push_move(a, &v);
  set_imports(&a->header);
}

void ModuleObj::ClearImports() {
  rt_array* a = rt_array_new(0);
  if (a == nullptr) rt::throw_raised();
  set_imports(&a->header);
}

// ---- ModuleObj: lookups through imports ----
Optional<Function> ModuleObj::GetFunction(const String& name, bool query_imports) {
  Optional<Function> f = this->GetFunction(name);
  if (f.has_value() || !query_imports) return f;
  any_import(this, [&](ModuleObj* m) {
    f = m->GetFunction(name, true);
    return f.has_value();
  });
  return f;
}

bool ModuleObj::ImplementsFunction(const String& name, bool query_imports) {
  if (this->ImplementsFunction(name)) return true;
  if (!query_imports) return false;
  return any_import(this, [&](ModuleObj* m) { return m->ImplementsFunction(name, true); });
}

Optional<String> ModuleObj::GetFunctionDoc(const String& name, bool query_imports) {
  Optional<String> r = this->GetFunctionDoc(name);
  if (r.has_value() || !query_imports) return r;
  any_import(this, [&](ModuleObj* m) {
    r = m->GetFunctionDoc(name, true);
    return r.has_value();
  });
  return r;
}

Optional<String> ModuleObj::GetFunctionMetadata(const String& name, bool query_imports) {
  Optional<String> r = this->GetFunctionMetadata(name);
  if (r.has_value() || !query_imports) return r;
  any_import(this, [&](ModuleObj* m) {
    r = m->GetFunctionMetadata(name, true);
    return r.has_value();
  });
  return r;
}

// ---- Module ----
Module Module::LoadFromFile(const String& file_name) {
  void* loader = rt_get_global("ffi.ModuleLoadFromFile");
  if (loader == nullptr) rt::throw_error("RuntimeError", "ffi.ModuleLoadFromFile is not registered");
  ObjectRef hold(static_cast<TVMFFIObject*>(loader));
  TVMFFIAny arg = file_name.raw();  // a view: the call does not take it
  TVMFFIAny ret;
  rt::any_none(&ret);
  if (TVMFFIFunctionCall(loader, &arg, 1, &ret) != 0) rt::throw_raised();
  if (ret.type_index != kTVMFFIModule) {
    rt::release(&ret);
    rt::throw_error("TypeError", "ffi.ModuleLoadFromFile did not return a Module");
  }
  return Module(ret.v_obj);
}

void Module::VisitContextSymbols(const TypedFunction<void(String, void*)>& callback) {
  // collect first: the callback must not run under the registry's lock
  std::vector<std::pair<std::string, void*>> syms;
  rt_env_context_symbols_foreach(
      [](const char* name, void* sym, void* ctx) {
        try {  // no exception may cross the C frames of the registry
          static_cast<std::vector<std::pair<std::string, void*>>*>(ctx)->emplace_back(name, sym);
        } catch (...) {
        }
      },
      &syms);
  for (const auto& s : syms) {
    String name(s.first);
    TVMFFIAny args[2];
    args[0] = name.raw();
    args[1].type_index = s.second ? kTVMFFIOpaquePtr : kTVMFFINone;
    args[1].zero_padding = 0;
    args[1].v_ptr = s.second;
    TVMFFIAny ret;
    rt::any_none(&ret);
    if (TVMFFIFunctionCall(callback.handle(), args, 2, &ret) != 0) rt::throw_raised();
    rt::release(&ret);
  }
}

}  // namespace ffi
}  // namespace tvm

using tvm::ffi::ModuleObj;
namespace rt = tvm::ffi::rt;

// ---- bridge for module.c ----
extern "C" void* rt_cxx_module_alloc(size_t size, void (*deleter)(void* self, int flags)) {
  static_assert(sizeof(tvm::ffi::CModuleView) ==
                    ModuleObj::kHeaderOffset + sizeof(TVMFFIObject) + 2 * sizeof(void*),
                "ModuleObj layout");
  size_t total = ModuleObj::kHeaderOffset + size;
  if (total < sizeof(tvm::ffi::CModuleView)) total = sizeof(tvm::ffi::CModuleView);
  void* raw = std::calloc(1, total);
  if (raw == nullptr) {
    rt_raise("MemoryError", "out of memory creating a Module");
    return nullptr;
  }
  auto* view = new (raw) tvm::ffi::CModuleView();
  TVMFFIObject* h = view->handle();
  h->combined_ref_count = RT_BOTH_ONE;
  h->type_index = kTVMFFIModule;
  h->deleter = deleter;
  rt_count_alloc(kTVMFFIModule);
  return h;
}

extern "C" void rt_cxx_module_free(void* obj) {
  if (obj == nullptr) return;
  rt_count_free(kTVMFFIModule);
  // fields were released by the deleter; the view has nothing else to destroy
  std::free(ModuleObj::FromHandle(obj));
}

extern "C" int rt_cxx_module_find(void* mod, const char* name, size_t n, int query_imports,
                                  void** out) {
  *out = nullptr;
  return rt::guard([&] {
    tvm::ffi::Optional<tvm::ffi::Function> f =
        ModuleObj::FromHandle(mod)->GetFunction(tvm::ffi::String(name, n), query_imports != 0);
    *out = f.release();
  });
}

extern "C" int rt_cxx_module_getter(void* mod, const char* prefix, const char* name, size_t n,
                                    TVMFFIAny* ret) {
  rt::any_none(ret);
  return rt::guard([&] {
    ModuleObj* m = ModuleObj::FromHandle(mod);
    tvm::ffi::String s(name, n);
    bool doc = std::strcmp(prefix, tvm::ffi::kDocPrefix) == 0;
    tvm::ffi::Optional<tvm::ffi::String> r =
        doc ? m->GetFunctionDoc(s, true) : m->GetFunctionMetadata(s, true);
    *ret = r.raw();
    rt::retain(*ret);
  });
}
