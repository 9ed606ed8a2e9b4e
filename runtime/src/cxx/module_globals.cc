// The ffi.Module* globals of module.c handle our own module objects. A
// module that library C++ code made (a subclass of ModuleObj with its own
// vtable) is answered here, through its virtual functions; every other call
// goes on to the C implementation unchanged.
#include <cstring>

#include "ffi_abi.h"

extern "C" {
#include "../container_internal.h"
#include "bridge.h"
}

namespace tvm {
namespace ffi {
namespace {

enum Op { kGetFunction, kImplements, kGetKind, kImport, kClearImports, kMetadata, kDoc };

struct Wrapped {
  const char* name;
  const char* sig;
  Op op;
  void* original;  // the C implementation (a Function, kept for good)
};

Wrapped wrapped[] = {
    {"ffi.ModuleGetFunction",
     "ffi.ModuleGetFunction(0: ffi.Module, 1: str, 2: bool) -> Optional<ffi.Function>",
     kGetFunction, nullptr},
    {"ffi.ModuleImplementsFunction",
     "ffi.ModuleImplementsFunction(0: ffi.Module, 1: str, 2: bool) -> bool", kImplements, nullptr},
    {"ffi.ModuleGetKind", "ffi.ModuleGetKind(0: ffi.Module) -> str", kGetKind, nullptr},
    {"ffi.ModuleImportModule", "ffi.ModuleImportModule(0: ffi.Module, 1: ffi.Module) -> None",
     kImport, nullptr},
    {"ffi.ModuleClearImports", "ffi.ModuleClearImports(0: ffi.Module) -> None", kClearImports,
     nullptr},
    {"ffi.ModuleGetFunctionMetadata",
     "ffi.ModuleGetFunctionMetadata(0: ffi.Module, 1: str, 2: bool) -> Optional<str>", kMetadata,
     nullptr},
    {"ffi.ModuleGetFunctionDoc",
     "ffi.ModuleGetFunctionDoc(0: ffi.Module, 1: str, 2: bool) -> Optional<str>", kDoc, nullptr},
};

int name_and_flag(const Wrapped& w, const TVMFFIAny* args, int32_t nargs, TVMFFIByteArray* name,
                  int* q) {
  if (nargs < 2 || nargs > 3) return rt_b_check_nargs(w.sig, nargs, 3);
  if (rt_b_arg_str(args, 1, w.sig, name) != 0) return -1;
  *q = 1;
  if (nargs == 3 && rt_b_arg_bool(args, 2, w.sig, q) != 0) return -1;
  return 0;
}

int foreign(const Wrapped& w, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  ModuleObj* m = ModuleObj::FromHandle(args[0].v_obj);
  TVMFFIByteArray name;
  int q = 1;
  switch (w.op) {
    case kGetKind:
      if (rt_b_check_nargs(w.sig, nargs, 1) != 0) return -1;
      return rt::guard([&] {
        const char* k = m->kind();
        String s(k, std::strlen(k));
        *ret = s.take();
      });
    case kClearImports:
      if (rt_b_check_nargs(w.sig, nargs, 1) != 0) return -1;
      return rt::guard([&] { m->ClearImports(); });
    case kImport: {
      void* other = nullptr;
      if (rt_b_check_nargs(w.sig, nargs, 2) != 0 ||
          rt_b_arg_obj(args, 1, w.sig, kTVMFFIModule, "ffi.Module", &other) != 0) {
        return -1;
      }
      return rt::guard([&] {
        TVMFFIObjectIncRef(other);
        Module ref(static_cast<TVMFFIObject*>(other));
        m->ImportModule(ref);
      });
    }
    default:
      break;
  }
  if (name_and_flag(w, args, nargs, &name, &q) != 0) return -1;
  return rt::guard([&] {
    String s(name.data, name.size);
    switch (w.op) {
      case kGetFunction: {
        Optional<Function> f = m->GetFunction(s, q != 0);
        TVMFFIObject* h = f.release();
        if (h) {
          ret->type_index = kTVMFFIFunction;
          ret->zero_padding = 0;
          ret->v_obj = h;
        }
        break;
      }
      case kImplements:
        ret->type_index = kTVMFFIBool;
        ret->zero_padding = 0;
        ret->v_int64 = m->ImplementsFunction(s, q != 0) ? 1 : 0;
        break;
      default: {
        Optional<String> r =
            w.op == kDoc ? m->GetFunctionDoc(s, q != 0) : m->GetFunctionMetadata(s, q != 0);
        *ret = r.raw();
        rt::retain(*ret);
        break;
      }
    }
  });
}

int dispatch(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  const Wrapped& w = *static_cast<const Wrapped*>(self);
  rt::any_none(ret);
  if (nargs >= 1 && args[0].type_index == kTVMFFIModule && args[0].v_obj != nullptr &&
      !rt_cmod_is_ours(args[0].v_obj)) {
    return foreign(w, args, nargs, ret);
  }
  return TVMFFIFunctionCall(w.original, const_cast<TVMFFIAny*>(args), nargs, ret);
}

// ---- globals answered through the vtable, for every module ----
ModuleObj* module_arg(const TVMFFIAny* args, int32_t i, const char* sig) {
  void* obj = nullptr;
  if (rt_b_arg_obj(args, i, sig, kTVMFFIModule, "ffi.Module", &obj) != 0) return nullptr;
  return ModuleObj::FromHandle(obj);
}

int g_property_mask(void*, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  static const char sig[] = "ffi.ModuleGetPropertyMask(0: ffi.Module) -> int";
  ModuleObj* m;
  if (rt_b_check_nargs(sig, nargs, 1) != 0 || (m = module_arg(args, 0, sig)) == nullptr) return -1;
  return rt::guard([&] {
    ret->type_index = kTVMFFIInt;
    ret->zero_padding = 0;
    ret->v_int64 = m->GetPropertyMask();
  });
}

int g_inspect_source(void*, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  static const char sig[] = "ffi.ModuleInspectSource(0: ffi.Module, 1: str) -> str";
  ModuleObj* m;
  TVMFFIByteArray fmt;
  if (rt_b_check_nargs(sig, nargs, 2) != 0 || (m = module_arg(args, 0, sig)) == nullptr ||
      rt_b_arg_str(args, 1, sig, &fmt) != 0) {
    return -1;
  }
  return rt::guard([&] { *ret = m->InspectSource(String(fmt.data, fmt.size)).take(); });
}

int g_write_formats(void*, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  static const char sig[] = "ffi.ModuleGetWriteFormats(0: ffi.Module) -> Array<str>";
  ModuleObj* m;
  if (rt_b_check_nargs(sig, nargs, 1) != 0 || (m = module_arg(args, 0, sig)) == nullptr) return -1;
  return rt::guard([&] {
    Array<String> a = m->GetWriteFormats();
    TVMFFIObject* h = a.release();
    ret->type_index = h ? h->type_index : kTVMFFINone;
    ret->zero_padding = 0;
    ret->v_obj = h;
  });
}

int g_write_to_file(void*, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  static const char sig[] = "ffi.ModuleWriteToFile(0: ffi.Module, 1: str, 2: str) -> void";
  ModuleObj* m;
  TVMFFIByteArray file, fmt;
  if (rt_b_check_nargs(sig, nargs, 3) != 0 || (m = module_arg(args, 0, sig)) == nullptr ||
      rt_b_arg_str(args, 1, sig, &file) != 0 || rt_b_arg_str(args, 2, sig, &fmt) != 0) {
    return -1;
  }
  (void)ret;
  return rt::guard(
      [&] { m->WriteToFile(String(file.data, file.size), String(fmt.data, fmt.size)); });
}

// After module.c registered its globals (constructor priority 200).
__attribute__((constructor(300))) void wrap_module_globals() {
  for (Wrapped& w : wrapped) {
    w.original = rt_get_global(w.name);
    if (w.original != nullptr) rt_register_global_with_handle(w.name, dispatch, &w);
  }
  struct {
    const char* name;
    TVMFFISafeCallType fn;
  } added[] = {{"ffi.ModuleGetPropertyMask", g_property_mask},
               {"ffi.ModuleInspectSource", g_inspect_source},
               {"ffi.ModuleGetWriteFormats", g_write_formats},
               {"ffi.ModuleWriteToFile", g_write_to_file}};
  for (const auto& g : added) {
    void* have = rt_get_global(g.name);  // the core may have them one day
    if (have != nullptr) {
      TVMFFIObjectDecRef(have);
      continue;
    }
    rt_register_global(g.name, g.fn);
  }
}

}  // namespace
}  // namespace ffi
}  // namespace tvm
