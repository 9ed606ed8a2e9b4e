/* Between the C core and the C++ surface (runtime/src/cxx/). C linkage,
 * hidden. Functions returning int return 0, or -1 with an error raised. */
#ifndef TVMFFI_RT_CXX_BRIDGE_H_
#define TVMFFI_RT_CXX_BRIDGE_H_

#include <stddef.h>

#include <tvm/ffi/c_api.h>

#ifdef __cplusplus
extern "C" {
#endif

#define RT_BRIDGE __attribute__((visibility("hidden")))

/* ---- implemented in C++ (cxx/module_obj.cc) ---- */
/* Zeroed storage for a module object of `size` bytes (header included)
 * that is also a C++ tvm::ffi::ModuleObj: a vtable pointer sits right
 * before the returned header, whose virtual functions call the rt_cmod_*
 * functions below. Header set like rt_object_alloc (type kTVMFFIModule). */
RT_BRIDGE void* rt_cxx_module_alloc(size_t size, void (*deleter)(void* self, int flags));
/* Releases storage made by rt_cxx_module_alloc (from the deleter). */
RT_BRIDGE void rt_cxx_module_free(void* obj);
/* Function `name` of a module some library made in C++ (its virtual
 * GetFunction, then its imports when query_imports); *out NULL if absent. */
RT_BRIDGE int rt_cxx_module_find(void* mod, const char* name, size_t n, int query_imports,
                                 void** out);
/* Doc (prefix "__tvm_ffi__doc_") or metadata of such a module, or None. */
RT_BRIDGE int rt_cxx_module_getter(void* mod, const char* prefix, const char* name, size_t n,
                                   TVMFFIAny* ret);

/* ---- implemented in C (module.c) for our own modules ---- */
RT_BRIDGE int rt_cmod_is_ours(void* obj);
RT_BRIDGE const char* rt_cmod_kind(void* obj);
RT_BRIDGE int rt_cmod_own_function(void* obj, const char* name, size_t n, void** out);
RT_BRIDGE int rt_cmod_own_getter(void* obj, const char* prefix, const char* name, size_t n,
                                 TVMFFIAny* ret);
RT_BRIDGE int rt_cmod_import(void* obj, void* child);
RT_BRIDGE int rt_cmod_clear_imports(void* obj);

#ifdef __cplusplus
}
#endif

#endif /* TVMFFI_RT_CXX_BRIDGE_H_ */
