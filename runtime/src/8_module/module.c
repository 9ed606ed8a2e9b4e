/* Library loading and Module objects (kTVMFFIModule).
 *
 * tvmffi_rt_library_load dlopens a library (RTLD_LAZY | RTLD_LOCAL; this
 * runtime is already loaded RTLD_GLOBAL, so the library binds to it whether
 * or not it names libtvm_ffi.so), fills its __TVMFFI<name> context
 * symbols, stores the module in __tvm_ffi__library_ctx and decodes
 * __tvm_ffi__library_bin into an import tree. Unlike the reference, a module
 * kind without a registered loader does not make the library unusable: it
 * becomes a placeholder import and is reported in missing_loaders.
 *
 * Libraries are never dlclosed: globals and types they registered while
 * loading point into their code for the rest of the process. */
#include <dlfcn.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "container_internal.h"
#include "cxx/bridge.h"

/* ------------------------------------------------------------------ */
/* module objects                                                     */
/* ------------------------------------------------------------------ */

typedef struct {
  char** items;
  size_t n, cap;
} strlist;

enum { MOD_LIBRARY = 1, MOD_PLACEHOLDER = 2 };

/* Allocated by rt_cxx_module_alloc (cxx/module_obj.cc) as a C++ ModuleObj:
 * a vtable pointer precedes the header, and the first two fields are where
 * ModuleObj keeps imports_ (an Array mirroring `imports`) and its lookup
 * cache, so C++ code in libraries can use our modules directly. */
typedef struct {
  TVMFFIObject header;
  void* imports_arr; /* Array of the imports (ModuleObj::imports_) */
  void* icache;      /* Map: name -> Function (TVMFFIEnvModLookupFromImports) */
  int32_t mod_kind;  /* MOD_LIBRARY or MOD_PLACEHOLDER */
  int32_t has_bin;   /* __tvm_ffi__library_bin was present */
  char* kind;        /* "library" or the module kind without a loader */
  char* path;        /* library path (MOD_LIBRARY) */
  void* dl;          /* dlopen handle (MOD_LIBRARY) */
  char* sys_prefix;  /* system library (ffi.SystemLib): its symbol prefix; dl is NULL */
  uint64_t nbytes;   /* payload size (MOD_PLACEHOLDER) */
  TVMFFIAny* imports; /* owned Module references */
  size_t n_imports, cap_imports;
  void* fcache;      /* Map: name -> Function (own exports) */
  strlist missing;   /* kinds without a loader */
  strlist ctx_syms;  /* context symbols filled */
  strlist errors;    /* problems met while loading */
} rt_module;

/* One lock for module caches and import lists; recursive because lookups
 * walk imports and loaders may load further libraries. */
static pthread_mutex_t mod_lock;
static pthread_once_t mod_lock_once = PTHREAD_ONCE_INIT;
static void mod_lock_init(void) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  pthread_mutex_init(&mod_lock, &a);
  pthread_mutexattr_destroy(&a);
}
static void lock(void) {
  pthread_once(&mod_lock_once, mod_lock_init);
  pthread_mutex_lock(&mod_lock);
}
static void unlock(void) { pthread_mutex_unlock(&mod_lock); }

static char* dup_n(const char* s, size_t n) {
  char* r = (char*)malloc(n + 1);
  if (r) {
    memcpy(r, s, n);
    r[n] = 0;
  }
  return r;
}

static void strlist_add(strlist* l, const char* s) {
  if (l->n == l->cap) {
    size_t nc = l->cap ? l->cap * 2 : 4;
    char** ni = (char**)realloc(l->items, nc * sizeof(char*));
    if (ni == NULL) return;
    l->items = ni;
    l->cap = nc;
  }
  char* c = dup_n(s, strlen(s));
  if (c) l->items[l->n++] = c;
}

static void strlist_free(strlist* l) {
  for (size_t i = 0; i < l->n; ++i) free(l->items[i]);
  free(l->items);
  l->items = NULL;
  l->n = l->cap = 0;
}

static void module_deleter(void* self, int flags) {
  rt_module* m = (rt_module*)self;
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    for (size_t i = 0; i < m->n_imports; ++i) rt_any_release(&m->imports[i]);
    free(m->imports);
    m->imports = NULL;
    m->n_imports = 0;
    rt_decref(m->fcache);
    rt_decref(m->icache);
    rt_decref(m->imports_arr);
    m->fcache = m->icache = m->imports_arr = NULL;
    free(m->kind);
    free(m->path);
    free(m->sys_prefix);
    strlist_free(&m->missing);
    strlist_free(&m->ctx_syms);
    strlist_free(&m->errors);
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_cxx_module_free(self);
}

/* A module object of ours (not one a loader made some other way). */
static rt_module* our_module(void* obj) {
  if (obj == NULL) return NULL;
  TVMFFIObject* o = (TVMFFIObject*)obj;
  if (o->type_index != kTVMFFIModule || o->deleter != module_deleter) return NULL;
  return (rt_module*)obj;
}

static rt_module* module_new(int mod_kind, const char* kind) {
  rt_module* m = (rt_module*)rt_cxx_module_alloc(sizeof(rt_module), module_deleter);
  if (m == NULL) return NULL;
  m->mod_kind = mod_kind;
  m->kind = dup_n(kind, strlen(kind));
  m->fcache = rt_map_new();
  m->icache = rt_map_new();
  m->imports_arr = rt_array_new(0);
  if (m->kind == NULL || m->fcache == NULL || m->icache == NULL || m->imports_arr == NULL) {
    rt_decref(m);
    rt_raise("MemoryError", "out of memory creating a Module");
    return NULL;
  }
  return m;
}

/* 1 if `target` is reachable from `from` through imports (from included).
 * Walks ModuleObj::imports_, which every module (ours or C++) has. */
static int reaches(void* from, void* target, int depth) {
  if (from == target) return 1;
  void* arr = from ? ((rt_module*)from)->imports_arr : NULL;
  if (arr == NULL || depth > 10000) return 0;
  int64_t n;
  const TVMFFIAny* items = rt_seq_items(arr, &n);
  for (int64_t i = 0; i < n; ++i) {
    if (items[i].type_index == kTVMFFIModule && reaches(items[i].v_obj, target, depth + 1)) return 1;
  }
  return 0;
}

/* Rebuilds imports_arr from `imports` (under the lock). */
static int sync_imports(rt_module* m) {
  TVMFFIAny arr;
  if (rt_array_from_anys(m->imports, (int64_t)m->n_imports, &arr) != 0) return -1;
  rt_decref(m->imports_arr);
  m->imports_arr = arr.v_obj;
  return 0;
}

/* Adds `child` (a Module object, retained) to m's imports; refuses cycles. */
static int module_import(rt_module* m, void* child) {
  lock();
  if (reaches(child, m, 0)) {
    unlock();
    return rt_raise("RuntimeError", "Cyclic dependency detected during import");
  }
  if (m->n_imports == m->cap_imports) {
    size_t nc = m->cap_imports ? m->cap_imports * 2 : 4;
    TVMFFIAny* ni = (TVMFFIAny*)realloc(m->imports, nc * sizeof(TVMFFIAny));
    if (ni == NULL) {
      unlock();
      return rt_raise("MemoryError", "out of memory importing a module");
    }
    m->imports = ni;
    m->cap_imports = nc;
  }
  rt_incref(child);
  rt_any_set_obj(&m->imports[m->n_imports++], child);
  if (sync_imports(m) != 0) {
    rt_any_release(&m->imports[--m->n_imports]);
    unlock();
    return -1;
  }
  /* a new import can change what name lookups resolve to */
  void* fresh = rt_map_new();
  if (fresh != NULL) {
    rt_decref(m->icache);
    m->icache = fresh;
  }
  unlock();
  return 0;
}

/* ------------------------------------------------------------------ */
/* functions exported by a library                                    */
/* ------------------------------------------------------------------ */

/* A symbol registered with TVMFFIEnvModRegisterSystemLibSymbol, looked up
 * as the official system library does: a + sys_prefix + b first, then a + b. */
static void* system_symbol(rt_module* m, const char* a, const char* b, size_t bn) {
  size_t an = strlen(a), pn = strlen(m->sys_prefix);
  if (memchr(b, 0, bn)) return NULL;
  char* buf = (char*)malloc(an + pn + bn + 1);
  if (buf == NULL) return NULL;
  memcpy(buf, a, an);
  memcpy(buf + an, m->sys_prefix, pn);
  memcpy(buf + an + pn, b, bn);
  buf[an + pn + bn] = 0;
  void* sym = rt_env_system_lib_symbol_lookup(buf);
  if (sym == NULL) {
    memmove(buf + an, buf + an + pn, bn + 1);
    sym = rt_env_system_lib_symbol_lookup(buf);
  }
  free(buf);
  return sym;
}

static void* symbol_with_prefix(rt_module* m, const char* prefix, const char* name, size_t n) {
  if (m->sys_prefix != NULL) {
    /* functions: "__tvm_ffi_" + sys_prefix + name; other symbols: sys_prefix + whole name */
    if (strcmp(prefix, "__tvm_ffi_") == 0) return system_symbol(m, prefix, name, n);
    size_t pn0 = strlen(prefix);
    char* whole = (char*)malloc(pn0 + n + 1);
    if (whole == NULL) return NULL;
    memcpy(whole, prefix, pn0);
    memcpy(whole + pn0, name, n);
    whole[pn0 + n] = 0;
    void* sym = system_symbol(m, "", whole, pn0 + n);
    free(whole);
    return sym;
  }
  size_t pn = strlen(prefix);
  char stack[256];
  char* buf = pn + n + 1 <= sizeof(stack) ? stack : (char*)malloc(pn + n + 1);
  if (buf == NULL) return NULL;
  memcpy(buf, prefix, pn);
  memcpy(buf + pn, name, n);
  buf[pn + n] = 0;
  void* sym = memchr(name, 0, n) ? NULL : dlsym(m->dl, buf);
  if (buf != stack) free(buf);
  return sym;
}

/* Own export `name` of module m as a new Function reference, or NULL. */
static int module_own_function(rt_module* m, const char* name, size_t n, void** out) {
  *out = NULL;
  if (m->mod_kind != MOD_LIBRARY) return 0;
  TVMFFIAny key;
  if (rt_string_to_any(name, n, &key) != 0) return -1;
  lock();
  const TVMFFIAny* hit = NULL;
  if (rt_map_find(m->fcache, &key, &hit) != 0) {
    unlock();
    rt_any_release(&key);
    return -1;
  }
  if (hit != NULL) {
    *out = hit->v_obj;
    rt_incref(*out);
    unlock();
    rt_any_release(&key);
    return 0;
  }
  void* sym = symbol_with_prefix(m, "__tvm_ffi_", name, n);
  int rc = 0;
  if (sym != NULL) {
    TVMFFIObjectHandle f = NULL;
    /* self = NULL: exports get a NULL handle, as the reference passes. No
     * reference to the module is kept: libraries are never unloaded, and a
     * reference would form a cycle through the module's cache. */
    rc = TVMFFIFunctionCreate(NULL, (TVMFFISafeCallType)sym, NULL, &f);
    if (rc == 0) {
      TVMFFIAny fv;
      rt_any_set_obj(&fv, f);
      rc = rt_map_set(&m->fcache, &key, &fv); /* the cache takes a copy */
      if (rc != 0) rt_decref(f);
      else *out = f;
    }
  }
  unlock();
  rt_any_release(&key);
  return rc;
}

static int module_find_function(void* mod, const char* name, size_t n, int query_imports,
                                void** out) {
  *out = NULL;
  rt_module* m = our_module(mod);
  if (m == NULL) return rt_cxx_module_find(mod, name, n, query_imports, out);
  if (module_own_function(m, name, n, out) != 0) return -1;
  if (*out != NULL || !query_imports) return 0;
  lock();
  for (size_t i = 0; i < m->n_imports && *out == NULL; ++i) {
    if (module_find_function(m->imports[i].v_obj, name, n, 1, out) != 0) {
      unlock();
      return -1;
    }
  }
  unlock();
  return 0;
}

int tvmffi_rt_module_get_function(TVMFFIObjectHandle mod, const TVMFFIByteArray* name,
                                  int query_imports, TVMFFIObjectHandle* out) {
  if (out == NULL || name == NULL) return rt_raise("ValueError", "tvmffi_rt_module_get_function: NULL argument");
  *out = NULL;
  if (our_module(mod) == NULL) return rt_raise("TypeError", "tvmffi_rt_module_get_function: not a Module of this runtime");
  return module_find_function(mod, name->data, name->size, query_imports, out);
}

int TVMFFIEnvModLookupFromImports(TVMFFIObjectHandle library_ctx, const char* func_name,
                                  TVMFFIObjectHandle* out) {
  if (func_name == NULL || out == NULL) return rt_raise("ValueError", "TVMFFIEnvModLookupFromImports: NULL argument");
  *out = NULL;
  rt_module* m = our_module(library_ctx);
  size_t n = strlen(func_name);
  TVMFFIAny key;
  if (rt_string_to_any(func_name, n, &key) != 0) return -1;
  void* f = NULL;
  lock();
  const TVMFFIAny* hit = NULL;
  if (m != NULL && rt_map_find(m->icache, &key, &hit) != 0) goto fail;
  if (hit != NULL) {
    *out = hit->v_obj; /* borrowed: the module's cache keeps it alive */
    unlock();
    rt_any_release(&key);
    return 0;
  }
  for (size_t i = 0; m != NULL && i < m->n_imports && f == NULL; ++i) {
    if (module_find_function(m->imports[i].v_obj, func_name, n, 1, &f) != 0) goto fail;
  }
  if (f == NULL) f = rt_get_global(func_name);
  if (f == NULL) {
    rt_raise("RuntimeError", "Cannot find function %s in the imported modules or global registry.",
             func_name);
    goto fail;
  }
  if (m != NULL) {
    TVMFFIAny fv;
    rt_any_set_obj(&fv, f);
    int rc = rt_map_set(&m->icache, &key, &fv);
    rt_decref(f); /* the cache holds it now */
    if (rc != 0) goto fail;
  } else {
    /* no module to cache in: a global stays alive in the registry */
    rt_decref(f);
  }
  *out = f;
  unlock();
  rt_any_release(&key);
  return 0;
fail:
  unlock();
  rt_any_release(&key);
  return -1;
}

/* ------------------------------------------------------------------ */
/* loading                                                            */
/* ------------------------------------------------------------------ */

/* The C API entry points we write into __TVMFFI<name> context symbols. */
typedef struct {
  const char* name;
  void* fn;
} capi_entry;

#define E(f) {#f, (void*)f}
static const capi_entry kCAPI[] = {
    E(TVMFFIAnyViewToOwnedAny), E(TVMFFIBacktrace), E(TVMFFIBigIntFromByteArray),
    E(TVMFFIBigIntGetContentByteArray), E(TVMFFIBytesFromByteArray), E(TVMFFIDataTypeFromString),
    E(TVMFFIDataTypeToString), E(TVMFFIEnvCheckSignals), E(TVMFFIEnvGetDLPackManagedTensorAllocator),
    E(TVMFFIEnvGetStream), E(TVMFFIEnvModLookupFromImports), E(TVMFFIEnvModRegisterContextSymbol),
    E(TVMFFIEnvModRegisterSystemLibSymbol), E(TVMFFIEnvRegisterCAPI),
    E(TVMFFIEnvSetDLPackManagedTensorAllocator), E(TVMFFIEnvSetStream), E(TVMFFIEnvTensorAlloc),
    E(TVMFFIErrorCreate), E(TVMFFIErrorCreateWithCauseAndExtraContext), E(TVMFFIErrorMoveFromRaised),
    E(TVMFFIErrorSetRaised), E(TVMFFIErrorSetRaisedFromCStr), E(TVMFFIErrorSetRaisedFromCStrParts),
    E(TVMFFIFunctionCall), E(TVMFFIFunctionCreate), E(TVMFFIFunctionGetGlobal),
    E(TVMFFIFunctionSetGlobal), E(TVMFFIFunctionSetGlobalFromMethodInfo), E(TVMFFIGetCustomAllocator),
    E(TVMFFIGetTypeAttrColumn), E(TVMFFIGetTypeInfo), E(TVMFFIGetVersion), E(TVMFFIHandleDeinitOnce),
    E(TVMFFIHandleInitOnce), E(TVMFFIObjectCreateOpaque), E(TVMFFIObjectDecRef), E(TVMFFIObjectIncRef),
    E(TVMFFISetCustomAllocator), E(TVMFFIStringFromByteArray), E(TVMFFITensorCreateUnsafeView),
    E(TVMFFITensorFromDLPack), E(TVMFFITensorFromDLPackVersioned), E(TVMFFITensorToDLPack),
    E(TVMFFITensorToDLPackVersioned), E(TVMFFITypeGetOrAllocIndex), E(TVMFFITypeKeyToIndex),
    E(TVMFFITypeRegisterAttr), E(TVMFFITypeRegisterField), E(TVMFFITypeRegisterMetadata),
    E(TVMFFITypeRegisterMethod)};
#undef E
_Static_assert(sizeof(kCAPI) / sizeof(kCAPI[0]) == 50, "the 50 C API functions");

/* Host entry points that TVMFFIEnvRegisterCAPI may provide. */
static const char* const kHostCAPI[] = {"PyErr_CheckSignals", "PyGILState_Ensure",
                                        "PyGILState_Release"};

/* Address and size of a data symbol defined by the library itself (not by
 * one of its dependencies, which dlsym on the handle would also search). */
static void* own_symbol(rt_module* m, const char* name, size_t* size) {
  if (m->sys_prefix != NULL) {
    if (size != NULL) *size = 0; /* unknown: registered symbols carry no size */
    return system_symbol(m, "", name, strlen(name));
  }
  void* addr = dlsym(m->dl, name);
  if (addr == NULL) return NULL;
  struct link_map* want = NULL;
  struct link_map* got = NULL;
  Dl_info info;
  if (dlinfo(m->dl, RTLD_DI_LINKMAP, &want) != 0 ||
      dladdr1(addr, &info, (void**)&got, RTLD_DL_LINKMAP) == 0 || got != want) {
    return NULL;
  }
  if (size != NULL) {
    const ElfW(Sym)* sym = NULL;
    *size = 0;
    if (dladdr1(addr, &info, (void**)&sym, RTLD_DL_SYMENT) != 0 && sym != NULL &&
        info.dli_saddr == addr) {
      *size = (size_t)sym->st_size;
    }
  }
  return addr;
}

/* Writes `value` into the library's pointer variable `symbol` if it has one. */
static void fill_context_symbol(rt_module* m, const char* symbol, void* value) {
  size_t size = 0;
  void** slot = (void**)own_symbol(m, symbol, &size);
  if (slot == NULL) return;
  if (size != 0 && size < sizeof(void*)) {
    char msg[320];
    snprintf(msg, sizeof(msg), "context symbol %s is %zu bytes, not a pointer", symbol, size);
    strlist_add(&m->errors, msg);
    return;
  }
  *slot = value;
  strlist_add(&m->ctx_syms, symbol);
}

static void fill_registered_ctx(const char* name, void* sym, void* ctx) {
  fill_context_symbol((rt_module*)ctx, name, sym);
}

static void fill_context_symbols(rt_module* m) {
  char buf[128];
  for (size_t i = 0; i < sizeof(kCAPI) / sizeof(kCAPI[0]); ++i) {
    snprintf(buf, sizeof(buf), "__%s", kCAPI[i].name);
    fill_context_symbol(m, buf, kCAPI[i].fn);
  }
  for (size_t i = 0; i < sizeof(kHostCAPI) / sizeof(kHostCAPI[0]); ++i) {
    void* f = rt_env_capi_lookup(kHostCAPI[i]);
    if (f == NULL) continue;
    snprintf(buf, sizeof(buf), "__TVMFFI%s", kHostCAPI[i]);
    fill_context_symbol(m, buf, f);
  }
  /* names given to TVMFFIEnvModRegisterContextSymbol are full symbol names;
   * collect first: the registry lock is held during the walk */
  rt_env_context_symbols_foreach(fill_registered_ctx, m);
}

/* Bounded little-endian reader over the library_bin payload. */
typedef struct {
  const unsigned char* p;
  size_t left;
} reader;

static int rd_u64(reader* r, uint64_t* v) {
  if (r->left < 8) return 0;
  uint64_t x = 0;
  for (int i = 7; i >= 0; --i) x = (x << 8) | r->p[i];
  r->p += 8;
  r->left -= 8;
  *v = x;
  return 1;
}

/* A length-prefixed blob; borrowed pointer into the payload. */
static int rd_blob(reader* r, const char** data, size_t* n) {
  uint64_t len;
  if (!rd_u64(r, &len) || len > r->left) return 0;
  *data = (const char*)r->p;
  *n = (size_t)len;
  r->p += len;
  r->left -= (size_t)len;
  return 1;
}

static int rd_vec(reader* r, uint64_t** out, size_t* n) {
  uint64_t count;
  if (!rd_u64(r, &count) || count > r->left / 8) return 0; /* bounded by real bytes */
  uint64_t* v = (uint64_t*)malloc((size_t)(count ? count : 1) * sizeof(uint64_t));
  if (v == NULL) return 0;
  for (uint64_t i = 0; i < count; ++i) rd_u64(r, &v[i]);
  *out = v;
  *n = (size_t)count;
  return 1;
}

static void add_error(rt_module* m, const char* fmt, const char* a, const char* b) {
  char msg[512];
  snprintf(msg, sizeof(msg), fmt, a ? a : "", b ? b : "");
  strlist_add(&m->errors, msg);
}

/* Moves the raised error's message into m's error list. */
static void take_raised_error(rt_module* m, const char* what) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  char msg[512];
  if (err != NULL) {
    TVMFFIErrorCell* c = (TVMFFIErrorCell*)rt_cell(err);
    snprintf(msg, sizeof(msg), "%s: %.*s: %.*s", what, (int)(c->kind.size > 64 ? 64 : c->kind.size),
             c->kind.data, (int)(c->message.size > 400 ? 400 : c->message.size), c->message.data);
    rt_decref(err);
  } else {
    snprintf(msg, sizeof(msg), "%s failed", what);
  }
  strlist_add(&m->errors, msg);
}

/* Builds one non-_lib module: through its loader when registered, else a
 * placeholder. Returns a new reference (NULL only on out-of-memory). */
static void* load_blob_module(rt_module* lib, const char* kind, size_t kind_len, const char* data,
                              size_t n) {
  char* k = dup_n(kind, kind_len);
  if (k == NULL) return NULL;
  char loader_name[300];
  snprintf(loader_name, sizeof(loader_name), "ffi.Module.load_from_bytes.%.*s",
           (int)(kind_len > 200 ? 200 : kind_len), k);
  void* loader = kind_len <= 200 && !memchr(kind, 0, kind_len) ? rt_get_global(loader_name) : NULL;
  void* result = NULL;
  if (loader != NULL) {
    TVMFFIAny arg, ret;
    rt_any_set_none(&ret);
    if (rt_bytes_to_any(data, n, &arg) != 0) {
      take_raised_error(lib, loader_name);
    } else {
      if (TVMFFIFunctionCall(loader, &arg, 1, &ret) != 0) {
        take_raised_error(lib, loader_name);
      } else if (ret.type_index == kTVMFFIModule && ret.v_obj != NULL) {
        result = ret.v_obj; /* ownership taken */
        rt_any_set_none(&ret);
      } else {
        add_error(lib, "%s returned something other than a Module%s", loader_name, NULL);
      }
      rt_any_release(&ret);
      rt_any_release(&arg);
    }
    rt_decref(loader);
  } else {
    strlist_add(&lib->missing, k);
  }
  if (result == NULL) {
    rt_module* ph = module_new(MOD_PLACEHOLDER, k);
    if (ph == NULL) {
      take_raised_error(lib, "placeholder module");
    } else {
      ph->nbytes = n;
      result = ph;
    }
  }
  free(k);
  return result;
}

/* Decodes __tvm_ffi__library_bin (bounded by the symbol size) into modules
 * and their import edges; the library module takes the `_lib` slot. */
static void process_library_bin(rt_module* lib, const unsigned char* bin, size_t sym_size) {
  lib->has_bin = 1;
  if (sym_size < 8) {
    add_error(lib, "__tvm_ffi__library_bin: symbol size %s is too small or unknown%s",
              sym_size ? "" : "(none)", NULL);
    return;
  }
  reader r0 = {bin, sym_size};
  uint64_t nbytes = 0;
  rd_u64(&r0, &nbytes);
  reader r = {bin + 8, sym_size - 8};
  if (nbytes < r.left) r.left = (size_t)nbytes; /* a smaller claim narrows the bound */
  else if (nbytes > r.left) {
    char num[64];
    snprintf(num, sizeof(num), "%llu", (unsigned long long)nbytes);
    add_error(lib, "__tvm_ffi__library_bin: nbytes %s exceeds the symbol size; read within the symbol%s",
              num, NULL);
  }
  uint64_t *indptr = NULL, *child = NULL;
  size_t n_indptr = 0, n_child = 0;
  void** mods = NULL;
  size_t n_mods = 0;
  if (!rd_vec(&r, &indptr, &n_indptr) || !rd_vec(&r, &child, &n_child) || n_indptr == 0) {
    add_error(lib, "__tvm_ffi__library_bin: truncated or malformed import tree%s%s", NULL, NULL);
    goto done;
  }
  size_t want = n_indptr - 1;
  mods = (void**)calloc(want ? want : 1, sizeof(void*));
  if (mods == NULL) goto done;
  long lib_index = -1;
  for (; n_mods < want; ++n_mods) {
    const char* kind;
    size_t klen;
    if (!rd_blob(&r, &kind, &klen)) {
      add_error(lib, "__tvm_ffi__library_bin: truncated at a module kind%s%s", NULL, NULL);
      break;
    }
    if (klen == 4 && memcmp(kind, "_lib", 4) == 0) {
      if (lib_index >= 0) {
        add_error(lib, "__tvm_ffi__library_bin: more than one _lib entry%s%s", NULL, NULL);
      }
      lib_index = (long)n_mods;
      mods[n_mods] = lib;
      rt_incref(lib);
      continue;
    }
    const char* data;
    size_t dn;
    if (!rd_blob(&r, &data, &dn)) {
      char k[80];
      snprintf(k, sizeof(k), "%.*s", (int)(klen > 64 ? 64 : klen), kind);
      add_error(lib, "__tvm_ffi__library_bin: truncated in the payload of module kind %s%s", k, NULL);
      break;
    }
    mods[n_mods] = load_blob_module(lib, kind, klen, data, dn);
    if (mods[n_mods] == NULL) break;
  }
  /* import edges, checked against what was actually decoded */
  for (size_t i = 0; i < n_mods; ++i) {
    uint64_t b = indptr[i], e = indptr[i + 1];
    if (b > e || e > n_child) {
      add_error(lib, "__tvm_ffi__library_bin: bad import tree row%s%s", NULL, NULL);
      continue;
    }
    for (uint64_t j = b; j < e; ++j) {
      uint64_t c = child[j];
      rt_module* parent = our_module(mods[i]);
      if (c >= n_mods || parent == NULL) {
        add_error(lib, "__tvm_ffi__library_bin: import edge to a module that is not available%s%s",
                  NULL, NULL);
        continue;
      }
      if (module_import(parent, mods[c]) != 0) take_raised_error(lib, "__tvm_ffi__library_bin import");
    }
  }
  /* If the library is not the root, what the root would have offered must
   * still be reachable from the module we return. */
  if (lib_index != 0 && n_mods > 0 && mods[0] != lib && !reaches(mods[0], lib, 0)) {
    if (module_import(lib, mods[0]) != 0) take_raised_error(lib, "__tvm_ffi__library_bin root");
  }
done:
  for (size_t i = 0; i < n_mods; ++i) rt_decref(mods[i]);
  free(mods);
  free(indptr);
  free(child);
}

int tvmffi_rt_library_load(const char* path, TVMFFIObjectHandle* out_module) {
  if (path == NULL || out_module == NULL) return rt_raise("ValueError", "tvmffi_rt_library_load: NULL argument");
  *out_module = NULL;
  void* dl = dlopen(path, RTLD_LAZY | RTLD_LOCAL);
  if (dl == NULL) {
    const char* e = dlerror();
    return rt_raise("RuntimeError", "Failed to load dynamic shared library %s %s", path, e ? e : "");
  }
  rt_module* m = module_new(MOD_LIBRARY, "library");
  if (m == NULL) return -1; /* never dlclose: constructors may have registered globals */
  m->dl = dl;
  m->path = dup_n(path, strlen(path));
  fill_context_symbols(m);
  size_t bin_size = 0;
  const unsigned char* bin = (const unsigned char*)own_symbol(m, "__tvm_ffi__library_bin", &bin_size);
  if (bin != NULL) process_library_bin(m, bin, bin_size);
  size_t ctx_size = 0;
  void** ctx = (void**)own_symbol(m, "__tvm_ffi__library_ctx", &ctx_size);
  if (ctx != NULL && (ctx_size == 0 || ctx_size >= sizeof(void*))) *ctx = m;
  *out_module = m;
  return 0;
}

/* The system library of `prefix` (a new module every call; callers keep
 * one per prefix): its functions are the symbols registered with
 * TVMFFIEnvModRegisterSystemLibSymbol, looked up with the prefix first. */
int rt_module_system_lib(const char* prefix, size_t n, TVMFFIObjectHandle* out) {
  *out = NULL;
  rt_module* m = module_new(MOD_LIBRARY, "library");
  if (m == NULL) return -1;
  m->sys_prefix = dup_n(prefix, n);
  if (m->sys_prefix == NULL) {
    rt_decref(m);
    return rt_raise("MemoryError", "out of memory creating a system library");
  }
  fill_context_symbols(m);
  size_t bin_size = 0;
  const unsigned char* bin = (const unsigned char*)own_symbol(m, "__tvm_ffi__library_bin", &bin_size);
  if (bin != NULL) process_library_bin(m, bin, bin_size);
  void** ctx = (void**)own_symbol(m, "__tvm_ffi__library_ctx", NULL);
  if (ctx != NULL) *ctx = m;
  *out = m;
  return 0;
}

/* ------------------------------------------------------------------ */
/* describe                                                           */
/* ------------------------------------------------------------------ */

static void json_strlist(rt_sbuf* b, const strlist* l) {
  rt_sb_puts(b, "[");
  for (size_t i = 0; i < l->n; ++i) {
    if (i) rt_sb_puts(b, ", ");
    rt_sb_json_str(b, l->items[i], strlen(l->items[i]));
  }
  rt_sb_puts(b, "]");
}

static void describe_into(rt_sbuf* b, void* obj, int depth) {
  rt_module* m = our_module(obj);
  if (m == NULL) {
    rt_sb_puts(b, "{\"kind\": \"foreign\"}");
    return;
  }
  rt_sb_puts(b, "{\"kind\": ");
  rt_sb_json_str(b, m->kind, strlen(m->kind));
  if (m->mod_kind == MOD_LIBRARY) {
    rt_sb_puts(b, ", \"path\": ");
    rt_sb_json_str(b, m->path ? m->path : "", m->path ? strlen(m->path) : 0);
  } else {
    rt_sb_printf(b, ", \"loaded\": false, \"nbytes\": %llu", (unsigned long long)m->nbytes);
  }
  rt_sb_puts(b, ", \"imports\": [");
  for (size_t i = 0; i < m->n_imports; ++i) {
    if (i) rt_sb_puts(b, ", ");
    if (depth < 64) describe_into(b, m->imports[i].v_obj, depth + 1);
    else rt_sb_puts(b, "{\"kind\": \"...\"}");
  }
  rt_sb_puts(b, "]");
  if (m->mod_kind == MOD_LIBRARY) {
    rt_sb_puts(b, ", \"missing_loaders\": ");
    json_strlist(b, &m->missing);
    rt_sb_puts(b, ", \"context_symbols\": ");
    json_strlist(b, &m->ctx_syms);
    rt_sb_printf(b, ", \"library_bin\": %s, \"errors\": ", m->has_bin ? "true" : "false");
    json_strlist(b, &m->errors);
  }
  rt_sb_puts(b, "}");
}

int tvmffi_rt_module_describe(TVMFFIObjectHandle mod, TVMFFIAny* out) {
  if (out == NULL) return rt_raise("ValueError", "tvmffi_rt_module_describe: NULL argument");
  if (our_module(mod) == NULL) return rt_raise("TypeError", "tvmffi_rt_module_describe: not a Module of this runtime");
  rt_sbuf b;
  rt_sb_init(&b);
  lock();
  describe_into(&b, mod, 0);
  unlock();
  return rt_sb_to_string_any(&b, out);
}

/* ------------------------------------------------------------------ */
/* global functions                                                   */
/* ------------------------------------------------------------------ */

static int arg_module(const TVMFFIAny* args, int32_t i, const char* sig, rt_module** out) {
  void* obj = NULL;
  if (rt_b_arg_obj(args, i, sig, kTVMFFIModule, "ffi.Module", &obj) != 0) return -1;
  *out = our_module(obj);
  if (*out == NULL) return rt_raise("TypeError", "`%s`: the Module was not made by this runtime", sig);
  return 0;
}

static int g_load_so(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.Module.load_from_file.so(0: str, 1: str) -> ffi.Module";
  TVMFFIByteArray p;
  if (nargs < 1 || nargs > 2) return rt_b_check_nargs(sig, nargs, 2);
  if (rt_b_arg_str(args, 0, sig, &p) != 0) return -1;
  char* path = dup_n(p.data, p.size);
  if (path == NULL) return rt_raise("MemoryError", "out of memory");
  TVMFFIObjectHandle m;
  int rc = tvmffi_rt_library_load(path, &m);
  free(path);
  if (rc != 0) return -1;
  rt_any_set_obj(ret, m);
  return 0;
}

static int g_load_from_file(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.ModuleLoadFromFile(0: str) -> ffi.Module";
  TVMFFIByteArray p;
  if (rt_b_check_nargs(sig, nargs, 1) || rt_b_arg_str(args, 0, sig, &p)) return -1;
  size_t dot = p.size;
  while (dot > 0 && p.data[dot - 1] != '.') --dot;
  if (dot == 0) return rt_raise("RuntimeError", "Failed to get file format from %.*s", (int)p.size, p.data);
  const char* fmt = p.data + dot;
  size_t fn = p.size - dot;
  if ((fn == 3 && (!memcmp(fmt, "dll", 3) || !memcmp(fmt, "dso", 3))) || (fn == 5 && !memcmp(fmt, "dylib", 5))) {
    fmt = "so";
    fn = 2;
  }
  char name[128];
  snprintf(name, sizeof(name), "ffi.Module.load_from_file.%.*s", (int)(fn > 64 ? 64 : fn), fmt);
  void* loader = rt_get_global(name);
  if (loader == NULL) {
    return rt_raise("RuntimeError", "Loader for `.%.*s` files is not registered, resolved to (%s) in the global registry.",
                    (int)(fn > 64 ? 64 : fn), fmt, name);
  }
  TVMFFIAny a[2];
  a[0] = args[0];
  a[1].type_index = kTVMFFIRawStr;
  a[1].zero_padding = 0;
  char fmtbuf[72];
  snprintf(fmtbuf, sizeof(fmtbuf), "%.*s", (int)(fn > 64 ? 64 : fn), fmt);
  a[1].v_c_str = fmtbuf;
  rt_any_set_none(ret);
  int rc = TVMFFIFunctionCall(loader, a, 2, ret);
  rt_decref(loader);
  return rc;
}

static int g_get_function(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] =
      "ffi.ModuleGetFunction(0: ffi.Module, 1: str, 2: bool) -> Optional<ffi.Function>";
  rt_module* m;
  TVMFFIByteArray name;
  int q = 1;
  if (nargs < 2 || nargs > 3) return rt_b_check_nargs(sig, nargs, 3);
  if (arg_module(args, 0, sig, &m) || rt_b_arg_str(args, 1, sig, &name)) return -1;
  if (nargs == 3 && rt_b_arg_bool(args, 2, sig, &q)) return -1;
  void* f = NULL;
  if (module_find_function(m, name.data, name.size, q, &f) != 0) return -1;
  if (f) rt_any_set_obj(ret, f);
  else rt_any_set_none(ret);
  return 0;
}

static int g_implements(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.ModuleImplementsFunction(0: ffi.Module, 1: str, 2: bool) -> bool";
  rt_module* m;
  TVMFFIByteArray name;
  int q = 1;
  if (nargs < 2 || nargs > 3) return rt_b_check_nargs(sig, nargs, 3);
  if (arg_module(args, 0, sig, &m) || rt_b_arg_str(args, 1, sig, &name)) return -1;
  if (nargs == 3 && rt_b_arg_bool(args, 2, sig, &q)) return -1;
  void* f = NULL;
  if (module_find_function(m, name.data, name.size, q, &f) != 0) return -1;
  rt_any_set_bool(ret, f != NULL);
  rt_decref(f);
  return 0;
}

static int g_get_kind(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.ModuleGetKind(0: ffi.Module) -> str";
  rt_module* m;
  if (rt_b_check_nargs(sig, nargs, 1) || arg_module(args, 0, sig, &m)) return -1;
  return rt_string_to_any(m->kind, strlen(m->kind), ret);
}

static int g_import(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.ModuleImportModule(0: ffi.Module, 1: ffi.Module) -> None";
  rt_module* m;
  void* other = NULL;
  if (rt_b_check_nargs(sig, nargs, 2) || arg_module(args, 0, sig, &m) ||
      rt_b_arg_obj(args, 1, sig, kTVMFFIModule, "ffi.Module", &other)) {
    return -1;
  }
  if (module_import(m, other) != 0) return -1;
  rt_any_set_none(ret);
  return 0;
}

static int g_clear_imports(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.ModuleClearImports(0: ffi.Module) -> None";
  rt_module* m;
  if (rt_b_check_nargs(sig, nargs, 1) || arg_module(args, 0, sig, &m)) return -1;
  lock();
  int rc = rt_cmod_clear_imports(m);
  unlock();
  if (rc != 0) return -1;
  rt_any_set_none(ret);
  return 0;
}

/* Calls the `__tvm_ffi__<what>_<name>` getter of m (or an import) and
 * returns its str result, or None when no module has one. */
static int getter_lookup(rt_module* m, const char* prefix, const char* name, size_t n, int q,
                         TVMFFIAny* ret, int depth) {
  if (m->mod_kind == MOD_LIBRARY) {
    void* sym = symbol_with_prefix(m, prefix, name, n);
    if (sym != NULL) {
      rt_any_set_none(ret);
      return ((TVMFFISafeCallType)sym)(NULL, NULL, 0, ret);
    }
  }
  if (q && depth < 64) {
    for (size_t i = 0; i < m->n_imports; ++i) {
      rt_module* c = our_module(m->imports[i].v_obj);
      rt_any_set_none(ret);
      if (c == NULL) {
        if (rt_cxx_module_getter(m->imports[i].v_obj, prefix, name, n, ret) != 0) return -1;
        if (ret->type_index != kTVMFFINone) return 0;
        continue;
      }
      if (getter_lookup(c, prefix, name, n, q, ret, depth + 1) != 0) return -1;
      if (ret->type_index != kTVMFFINone) return 0;
    }
  }
  rt_any_set_none(ret);
  return 0;
}

static int getter_global(const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret, const char* sig,
                         const char* prefix) {
  rt_module* m;
  TVMFFIByteArray name;
  int q = 1;
  if (nargs < 2 || nargs > 3) return rt_b_check_nargs(sig, nargs, 3);
  if (arg_module(args, 0, sig, &m) || rt_b_arg_str(args, 1, sig, &name)) return -1;
  if (nargs == 3 && rt_b_arg_bool(args, 2, sig, &q)) return -1;
  lock();
  int rc = getter_lookup(m, prefix, name.data, name.size, q, ret, 0);
  unlock();
  return rc;
}

static int g_metadata(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  return getter_global(args, nargs, ret,
                       "ffi.ModuleGetFunctionMetadata(0: ffi.Module, 1: str, 2: bool) -> Optional<str>",
                       "__tvm_ffi__metadata_");
}

static int g_doc(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  return getter_global(args, nargs, ret,
                       "ffi.ModuleGetFunctionDoc(0: ffi.Module, 1: str, 2: bool) -> Optional<str>",
                       "__tvm_ffi__doc_");
}

/* ---- the reflected field ffi.Module.imports_ (the official registers it) ---- */
static rt_module* module_of_field(void* field) {
  return (rt_module*)((char*)field - offsetof(rt_module, imports_arr));
}

static int imports_get(void* field, TVMFFIAny* out) {
  lock();
  void* arr = *(void**)field;
  if (arr) rt_incref(arr);
  unlock();
  if (arr) rt_any_set_obj(out, arr);
  else rt_any_set_none(out);
  return 0;
}

/* Replaces the imports with the modules of an Array (cycles refused, as by
 * ffi.ModuleImportModule); our own list stays the source of truth. */
static int imports_set(void* field, const TVMFFIAny* v) {
  rt_module* m = module_of_field(field);
  if (v->type_index != kTVMFFIArray) {
    size_t n;
    const char* k = rt_type_key(v->type_index, &n);
    return rt_raise("TypeError", "Cannot convert from type `%.*s` to `Array<Any>`", (int)n, k);
  }
  int64_t n = 0;
  const TVMFFIAny* items = rt_seq_items(v->v_obj, &n);
  for (int64_t i = 0; i < n; ++i)
    if (items[i].type_index != kTVMFFIModule)
      return rt_raise("TypeError", "ffi.Module.imports_: element %lld is not a Module", (long long)i);
  if (our_module(m) == NULL) { /* a C++ ModuleObj: imports_ is all it has */
    void* old = *(void**)field;
    rt_incref(v->v_obj);
    *(void**)field = v->v_obj;
    rt_decref(old);
    return 0;
  }
  rt_incref(v->v_obj); /* the array may be our own imports_arr */
  int rc = rt_cmod_clear_imports(m);
  for (int64_t i = 0; rc == 0 && i < n; ++i) rc = module_import(m, items[i].v_obj);
  rt_decref(v->v_obj);
  return rc;
}

static void register_imports_field(void) {
  static const char name[] = "imports_";
  static const char meta[] =
      "{\"type_schema\":\"{\\\"type\\\":\\\"ffi.Array\\\",\\\"args\\\":"
      "[{\\\"type\\\":\\\"Any\\\"}]}\"}";
  TVMFFIFieldInfo f;
  memset(&f, 0, sizeof(f));
  f.name.data = name;
  f.name.size = sizeof(name) - 1;
  f.metadata.data = meta;
  f.metadata.size = sizeof(meta) - 1;
  f.size = 8;
  f.alignment = 8;
  f.offset = (int64_t)offsetof(rt_module, imports_arr);
  f.getter = imports_get;
  f.setter = (void*)imports_set;
  f.field_static_type_index = kTVMFFIArray;
  rt_any_set_none(&f.default_value_or_factory);
  (void)TVMFFITypeRegisterField(kTVMFFIModule, &f);
}

RT_INIT(module_init) {
  register_imports_field();
  rt_register_global("ffi.Module.load_from_file.so", g_load_so);
  rt_register_global("ffi.ModuleLoadFromFile", g_load_from_file);
  rt_register_global("ffi.ModuleGetFunction", g_get_function);
  rt_register_global("ffi.ModuleImplementsFunction", g_implements);
  rt_register_global("ffi.ModuleGetKind", g_get_kind);
  rt_register_global("ffi.ModuleImportModule", g_import);
  rt_register_global("ffi.ModuleClearImports", g_clear_imports);
  rt_register_global("ffi.ModuleGetFunctionMetadata", g_metadata);
  rt_register_global("ffi.ModuleGetFunctionDoc", g_doc);
}

/* ------------------------------------------------------------------ */
/* for the C++ surface (cxx/module_obj.cc): our modules seen as ModuleObj */
/* ------------------------------------------------------------------ */

int rt_cmod_is_ours(void* obj) { return our_module(obj) != NULL; }

const char* rt_cmod_kind(void* obj) { return ((rt_module*)obj)->kind; }

int rt_cmod_own_function(void* obj, const char* name, size_t n, void** out) {
  return module_own_function((rt_module*)obj, name, n, out);
}

int rt_cmod_own_getter(void* obj, const char* prefix, const char* name, size_t n, TVMFFIAny* ret) {
  lock();
  int rc = getter_lookup((rt_module*)obj, prefix, name, n, 0, ret, 0);
  unlock();
  return rc;
}

int rt_cmod_import(void* obj, void* child) { return module_import((rt_module*)obj, child); }

int rt_cmod_clear_imports(void* obj) {
  rt_module* m = (rt_module*)obj;
  lock();
  for (size_t i = 0; i < m->n_imports; ++i) rt_any_release(&m->imports[i]);
  m->n_imports = 0;
  int rc = sync_imports(m);
  unlock();
  return rc;
}
