/* tvmffi: the TVM-FFI stable C ABI (version 0.1.16), declared from its
 * specification. Type names, enum values, struct layouts and function
 * signatures are those of the ABI so binaries built against any conforming
 * header interoperate; the text of this file is tvmffi's own.
 *
 * Usable from C11 and C++. C users additionally get small static inline
 * accessors (see the end of the file); define TVMFFI_NO_C_HELPERS to omit them. */
#ifndef TVM_FFI_C_API_H_
#define TVM_FFI_C_API_H_

#include <dlpack/dlpack.h>
#include <stddef.h>
#include <stdint.h>

#ifdef _MSC_VER
#define TVM_FFI_WEAK __declspec(selectany)
#else
#define TVM_FFI_WEAK __attribute__((weak))
#endif

/* TVM_FFI_DLL marks the C API (export when building the runtime, import
 * otherwise on Windows); TVM_FFI_DLL_EXPORT always exports. */
#if !defined(TVM_FFI_DLL) && defined(__EMSCRIPTEN__)
#include <emscripten/emscripten.h>
#define TVM_FFI_DLL EMSCRIPTEN_KEEPALIVE
#define TVM_FFI_DLL_EXPORT EMSCRIPTEN_KEEPALIVE
#endif
#if !defined(TVM_FFI_DLL) && defined(_MSC_VER)
#ifdef TVM_FFI_EXPORTS
#define TVM_FFI_DLL __declspec(dllexport)
#else
#define TVM_FFI_DLL __declspec(dllimport)
#endif
#define TVM_FFI_DLL_EXPORT __declspec(dllexport)
#endif
#ifndef TVM_FFI_DLL
#define TVM_FFI_DLL __attribute__((visibility("default")))
#define TVM_FFI_DLL_EXPORT __attribute__((visibility("default")))
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TVM_FFI_ATTRIBUTE_PURE __attribute__((__pure__))
#else
#define TVM_FFI_ATTRIBUTE_PURE
#endif

#define TVM_FFI_VERSION_MAJOR 0
#define TVM_FFI_VERSION_MINOR 1
#define TVM_FFI_VERSION_PATCH 16

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  uint32_t major;
  uint32_t minor;
  uint32_t patch;
} TVMFFIVersion;

/* Type indices. [0, 64): values held directly in a TVMFFIAny.
 * [64, 128): objects known to every runtime. >= 128: allocated at run time. */
#ifdef __cplusplus
enum TVMFFITypeIndex : int32_t {
#else
typedef enum {
#endif
  kTVMFFIAny = -1, /* only in annotations, never in a value */
  kTVMFFINone = 0,
  kTVMFFIInt = 1,
  kTVMFFIBool = 2,
  kTVMFFIFloat = 3,
  kTVMFFIOpaquePtr = 4,
  kTVMFFIDataType = 5,
  kTVMFFIDevice = 6,
  kTVMFFIDLTensorPtr = 7,
  kTVMFFIRawStr = 8,        /* borrowed NUL-terminated char*; views only */
  kTVMFFIByteArrayPtr = 9,  /* borrowed TVMFFIByteArray*; views only */
  kTVMFFIObjectRValueRef = 10,
  kTVMFFISmallStr = 11,     /* up to 7 bytes inline in v_bytes */
  kTVMFFISmallBytes = 12,
  kTVMFFIUnchanged = 13,
  kTVMFFIStaticObjectBegin = 64,
  kTVMFFIObject = 64,
  kTVMFFIStr = 65,          /* header + TVMFFIByteArray */
  kTVMFFIBytes = 66,        /* header + TVMFFIByteArray */
  kTVMFFIError = 67,        /* header + TVMFFIErrorCell */
  kTVMFFIFunction = 68,     /* header + TVMFFIFunctionCell */
  kTVMFFIShape = 69,        /* header + TVMFFIShapeCell */
  kTVMFFITensor = 70,       /* header + DLTensor */
  kTVMFFIArray = 71,
  kTVMFFIMap = 72,
  kTVMFFIModule = 73,
  kTVMFFIOpaquePyObject = 74, /* header + TVMFFIOpaqueObjectCell */
  kTVMFFIList = 75,
  kTVMFFIDict = 76,
  kTVMFFIVisitInterrupt = 77,
  kTVMFFIBigInt = 78,       /* header + word count + int64 words */
  kTVMFFIStaticObjectEnd,
  kTVMFFIDynObjectBegin = 128
#ifdef __cplusplus
};
#else
} TVMFFITypeIndex;
#endif

typedef void* TVMFFIObjectHandle;

/* What a deleter is asked to do: run the destructor (strong count reached
 * zero), release the memory (weak count reached zero), or both at once. */
#ifdef __cplusplus
enum TVMFFIObjectDeleterFlagBitMask : int32_t {
#else
typedef enum {
#endif
  kTVMFFIObjectDeleterFlagBitMaskStrong = 1 << 0,
  kTVMFFIObjectDeleterFlagBitMaskWeak = 1 << 1,
  kTVMFFIObjectDeleterFlagBitMaskBoth =
      (kTVMFFIObjectDeleterFlagBitMaskStrong | kTVMFFIObjectDeleterFlagBitMaskWeak),
#ifdef __cplusplus
};
#else
} TVMFFIObjectDeleterFlagBitMask;
#endif

/* The 24-byte header that starts every heap object. The low 32 bits of
 * combined_ref_count are the strong count, the high 32 bits the weak count,
 * so one 64-bit atomic covers both. */
typedef struct {
  uint64_t combined_ref_count;
  int32_t type_index;
  uint32_t __padding;
  union {
    void (*deleter)(void* self, int flags);
    int64_t __ensure_align;
  };
} TVMFFIObject;

/* A 16-byte tagged value. zero_padding must be 0 except for small
 * strings/bytes, where the same 4 bytes hold the length. */
typedef struct {
  int32_t type_index;
  union {
    uint32_t zero_padding;
    uint32_t small_str_len;
  };
  union {
    int64_t v_int64;
    double v_float64;
    void* v_ptr;
    const char* v_c_str;
    TVMFFIObject* v_obj;
    DLDataType v_dtype;
    DLDevice v_device;
    char v_bytes[8];
    uint64_t v_uint64;
  };
} TVMFFIAny;

/* Pointer + length; the cell of String and Bytes objects. */
typedef struct {
  const char* data;
  size_t size;
} TVMFFIByteArray;

typedef struct {
  const int64_t* data;
  size_t size;
} TVMFFIShapeCell;

/* Cell shared by sequence containers. data_deleter == NULL means the
 * elements live inside the object's own allocation. */
#ifdef __cplusplus
struct TVMFFISeqCell {
#else
typedef struct {
#endif
  void* data;
  int64_t size;
  int64_t capacity;
  void (*data_deleter)(void*);
#ifdef __cplusplus
};
#else
} TVMFFISeqCell;
#endif

#ifdef __cplusplus
enum TVMFFIBacktraceUpdateMode : int32_t {
#else
typedef enum {
#endif
  kTVMFFIBacktraceUpdateModeReplace = 0,
  kTVMFFIBacktraceUpdateModeAppend = 1,
#ifdef __cplusplus
};
#else
} TVMFFIBacktraceUpdateMode;
#endif

/* Cell of Error objects. The backtrace lists the most recent frame first.
 * cause_chain and extra_context are owned references (may be NULL). */
typedef struct {
  TVMFFIByteArray kind;
  TVMFFIByteArray message;
  TVMFFIByteArray backtrace;
  void (*update_backtrace)(TVMFFIObjectHandle self, const TVMFFIByteArray* backtrace,
                           int32_t update_mode);
  TVMFFIObjectHandle cause_chain;
  TVMFFIObjectHandle extra_context;
} TVMFFIErrorCell;

/* The calling convention of every function: returns 0, or nonzero with the
 * error left in the thread's raised-error slot. The caller sets
 * result->type_index to kTVMFFINone (or another non-object index) first. */
typedef int (*TVMFFISafeCallType)(void* handle, const TVMFFIAny* args, int32_t num_args,
                                  TVMFFIAny* result);

/* Cell of Function objects. cpp_call is NULL unless the function was made
 * by C++ code that shares the caller's exception ABI. */
typedef struct {
  TVMFFISafeCallType safe_call;
  void* cpp_call;
} TVMFFIFunctionCell;

typedef struct {
  void* handle;
} TVMFFIOpaqueObjectCell;

/* ---- version ---- */
TVM_FFI_DLL void TVMFFIGetVersion(TVMFFIVersion* out_version);

/* ---- objects ---- */
TVM_FFI_DLL int TVMFFIObjectIncRef(TVMFFIObjectHandle obj);
TVM_FFI_DLL int TVMFFIObjectDecRef(TVMFFIObjectHandle obj);
/* Wraps `handle` in an object of `type_index`; `deleter(handle)` runs when the
 * last reference goes. */
TVM_FFI_DLL int TVMFFIObjectCreateOpaque(void* handle, int32_t type_index,
                                         void (*deleter)(void* handle), TVMFFIObjectHandle* out);

/* ---- object storage ----
 * Every object body is immediately preceded by this header. When the weak
 * lifetime ends the deleter calls delete_space(body) if it is set. */
typedef struct {
  void (*delete_space)(void* ptr);
} TVMFFIObjectAllocHeader;

/* A process-wide allocator for object bodies: allocate returns storage of
 * `size` bytes aligned to `alignment`, preceded by an initialized
 * TVMFFIObjectAllocHeader, or NULL with an error raised. */
typedef struct {
  void* (*allocate)(size_t size, size_t alignment, int32_t type_index, void* context);
  void* context;
} TVMFFICustomAllocator;

/* Never NULL; the built-in allocator unless one was installed. */
TVM_FFI_DLL TVMFFICustomAllocator* TVMFFIGetCustomAllocator(void);
/* NULL restores the built-in allocator. Install once, before concurrent use. */
TVM_FFI_DLL int TVMFFISetCustomAllocator(TVMFFICustomAllocator* allocator);

TVM_FFI_DLL int TVMFFITypeKeyToIndex(const TVMFFIByteArray* type_key, int32_t* out_tindex);

/* ---- functions ---- */
TVM_FFI_DLL int TVMFFIFunctionCreate(void* self, TVMFFISafeCallType safe_call,
                                     void (*deleter)(void* self), TVMFFIObjectHandle* out);
/* *out is a new reference, or NULL when no global has that name. */
TVM_FFI_DLL int TVMFFIFunctionGetGlobal(const TVMFFIByteArray* name, TVMFFIObjectHandle* out);
/* Borrowed view -> owned value: raw strings become String/Bytes, objects
 * gain a reference, plain values are copied. */
TVM_FFI_DLL int TVMFFIAnyViewToOwnedAny(const TVMFFIAny* any_view, TVMFFIAny* out);
TVM_FFI_DLL int TVMFFIFunctionCall(TVMFFIObjectHandle func, TVMFFIAny* args, int32_t num_args,
                                   TVMFFIAny* result);

/* ---- errors (one raised error per thread) ---- */
/* Takes the raised error (NULL if none) and clears the slot. */
TVM_FFI_DLL void TVMFFIErrorMoveFromRaised(TVMFFIObjectHandle* result);
/* Stores a new reference to `error`, replacing any previous one. */
TVM_FFI_DLL void TVMFFIErrorSetRaised(TVMFFIObjectHandle error);
TVM_FFI_DLL void TVMFFIErrorSetRaisedFromCStr(const char* kind, const char* message);
/* The message is the concatenation of the parts; NULL parts are skipped. */
TVM_FFI_DLL void TVMFFIErrorSetRaisedFromCStrParts(const char* kind, const char** message_parts,
                                                   int32_t num_parts);
/* Returns nonzero on allocation failure without raising anything. */
TVM_FFI_DLL int TVMFFIErrorCreate(const TVMFFIByteArray* kind, const TVMFFIByteArray* message,
                                  const TVMFFIByteArray* backtrace, TVMFFIObjectHandle* out);
TVM_FFI_DLL int TVMFFIErrorCreateWithCauseAndExtraContext(
    const TVMFFIByteArray* kind, const TVMFFIByteArray* message, const TVMFFIByteArray* backtrace,
    TVMFFIObjectHandle cause_chain, TVMFFIObjectHandle extra_context, TVMFFIObjectHandle* out);

/* ---- DLPack ---- */
TVM_FFI_DLL int TVMFFITensorFromDLPack(DLManagedTensor* from, int32_t require_alignment,
                                       int32_t require_contiguous, TVMFFIObjectHandle* out);
TVM_FFI_DLL int TVMFFITensorToDLPack(TVMFFIObjectHandle from, DLManagedTensor** out);
TVM_FFI_DLL int TVMFFITensorFromDLPackVersioned(DLManagedTensorVersioned* from,
                                                int32_t require_alignment,
                                                int32_t require_contiguous,
                                                TVMFFIObjectHandle* out);
TVM_FFI_DLL int TVMFFITensorToDLPackVersioned(TVMFFIObjectHandle from,
                                              DLManagedTensorVersioned** out);
/* A tensor described by `prototype` sharing (and keeping alive) `source`'s
 * memory; shape and strides are copied. */
TVM_FFI_DLL int TVMFFITensorCreateUnsafeView(TVMFFIObjectHandle source, const DLTensor* prototype,
                                             TVMFFIObjectHandle* out);

/* ---- strings, bytes, big integers ---- */
/* Small (<= 7 bytes) values are returned inline, longer ones as objects. */
TVM_FFI_DLL int TVMFFIStringFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out);
TVM_FFI_DLL int TVMFFIBytesFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out);
/* Input: native-order int64 words, least significant first, two's complement. */
TVM_FFI_DLL int TVMFFIBigIntFromByteArray(const TVMFFIByteArray* input, TVMFFIAny* out);
TVM_FFI_DLL TVMFFIByteArray TVMFFIBigIntGetContentByteArray(const TVMFFIAny* value);

/* ---- data type strings ---- */
TVM_FFI_DLL int TVMFFIDataTypeFromString(const TVMFFIByteArray* str, DLDataType* out);
TVM_FFI_DLL int TVMFFIDataTypeToString(const DLDataType* dtype, TVMFFIAny* out);

/* ---- reflection ---- */
typedef int (*TVMFFIFieldGetter)(void* field, TVMFFIAny* result);
typedef int (*TVMFFIFieldSetter)(void* field, const TVMFFIAny* value);
typedef int (*TVMFFIObjectCreator)(TVMFFIObjectHandle* result);

#ifdef __cplusplus
enum TVMFFIFieldFlagBitMask : int32_t {
#else
typedef enum {
#endif
  kTVMFFIFieldFlagBitMaskWritable = 1 << 0,
  kTVMFFIFieldFlagBitMaskHasDefault = 1 << 1,
  kTVMFFIFieldFlagBitMaskIsStaticMethod = 1 << 2,
  kTVMFFIFieldFlagBitMaskSEqHashIgnore = 1 << 3,
  kTVMFFIFieldFlagBitMaskSEqHashDefPattern = 1 << 4,
  kTVMFFIFieldFlagBitMaskDefaultFromFactory = 1 << 5,
  kTVMFFIFieldFlagBitMaskReprOff = 1 << 6,
  kTVMFFIFieldFlagBitMaskCompareOff = 1 << 7,
  kTVMFFIFieldFlagBitMaskHashOff = 1 << 8,
  kTVMFFIFieldFlagBitMaskInitOff = 1 << 9,
  kTVMFFIFieldFlagBitMaskKwOnly = 1 << 10,
  kTVMFFIFieldFlagBitSetterIsFunctionObj = 1 << 11,
  kTVMFFIFieldFlagBitMaskSEqHashDefSimple = 1 << 12,
#ifdef __cplusplus
};
#else
} TVMFFIFieldFlagBitMask;
#endif

#ifdef __cplusplus
enum TVMFFISEqHashKind : int32_t {
#else
typedef enum {
#endif
  kTVMFFISEqHashKindUnsupported = 0,
  kTVMFFISEqHashKindTreeNode = 1,
  kTVMFFISEqHashKindFreeVar = 2,
  kTVMFFISEqHashKindDAGNode = 3,
  kTVMFFISEqHashKindConstTreeNode = 4,
  kTVMFFISEqHashKindUniqueInstance = 5,
#ifdef __cplusplus
};
#else
} TVMFFISEqHashKind;
#endif

#ifdef __cplusplus
enum TVMFFIDefRegionKind : int32_t {
#else
typedef enum {
#endif
  kTVMFFIDefRegionKindNone = 0,
  kTVMFFIDefRegionKindPattern = 1,
  kTVMFFIDefRegionKindSimple = 2,
#ifdef __cplusplus
};
#else
} TVMFFIDefRegionKind;
#endif

/* A reflected field: `offset` bytes from the object header; setter is a
 * TVMFFIFieldSetter, or a Function object when
 * kTVMFFIFieldFlagBitSetterIsFunctionObj is in flags. */
typedef struct {
  TVMFFIByteArray name;
  TVMFFIByteArray doc;
  TVMFFIByteArray metadata;
  int64_t flags;
  int64_t size;
  int64_t alignment;
  int64_t offset;
  TVMFFIFieldGetter getter;
  void* setter;
  TVMFFIAny default_value_or_factory;
  int32_t field_static_type_index;
} TVMFFIFieldInfo;

/* A reflected method; `method` is a Function (instance methods take self
 * first). */
typedef struct {
  TVMFFIByteArray name;
  TVMFFIByteArray doc;
  TVMFFIByteArray metadata;
  int64_t flags;
  TVMFFIAny method;
} TVMFFIMethodInfo;

typedef struct {
  TVMFFIByteArray doc;
  TVMFFIObjectCreator creator;
  int32_t total_size;
  TVMFFISEqHashKind structural_eq_hash_kind;
} TVMFFITypeMetadata;

/* One attribute over type indices [begin_index, begin_index + size):
 * entry for index i is data[i - begin_index]; outside the range: absent. */
typedef struct {
  const TVMFFIAny* data;
  int32_t size;
  int32_t begin_index;
} TVMFFITypeAttrColumn;

/* Run-time type information. type_ancestors[d] is the ancestor at depth d
 * for d < type_depth. */
#ifdef __cplusplus
struct TVMFFITypeInfo {
#else
typedef struct TVMFFITypeInfo {
#endif
  int32_t type_index;
  int32_t type_depth;
  TVMFFIByteArray type_key;
  const struct TVMFFITypeInfo** type_ancestors;
  uint64_t type_key_hash;
  int32_t num_fields;
  int32_t num_methods;
  const TVMFFIFieldInfo* fields;
  const TVMFFIMethodInfo* methods;
  const TVMFFITypeMetadata* metadata;
#ifdef __cplusplus
};
#else
} TVMFFITypeInfo;
#endif

TVM_FFI_DLL int TVMFFIFunctionSetGlobal(const TVMFFIByteArray* name, TVMFFIObjectHandle f,
                                        int allow_override);
TVM_FFI_DLL int TVMFFIFunctionSetGlobalFromMethodInfo(const TVMFFIMethodInfo* method_info,
                                                      int allow_override);
TVM_FFI_DLL int TVMFFITypeRegisterField(int32_t type_index, const TVMFFIFieldInfo* info);
TVM_FFI_DLL int TVMFFITypeRegisterMethod(int32_t type_index, const TVMFFIMethodInfo* info);
TVM_FFI_DLL int TVMFFITypeRegisterMetadata(int32_t type_index, const TVMFFITypeMetadata* metadata);
TVM_FFI_DLL int TVMFFITypeRegisterAttr(int32_t type_index, const TVMFFIByteArray* attr_name,
                                       const TVMFFIAny* attr_value);
/* NULL when no type registered that attribute. */
TVM_FFI_DLL const TVMFFITypeAttrColumn* TVMFFIGetTypeAttrColumn(const TVMFFIByteArray* attr_name);

/* ---- start-up helpers (never raise) ---- */
/* A backtrace text, most recent frame first. filename/func may be NULL. */
TVM_FFI_DLL const TVMFFIByteArray* TVMFFIBacktrace(const char* filename, int lineno,
                                                   const char* func, int cross_ffi_boundary);
/* Registers type_key (or returns its existing index). static_type_index >= 0
 * fixes the index; -1 allocates one. parent_type_index -1 means root, -2
 * means query only (returns -2 when unknown). */
TVM_FFI_DLL int32_t TVMFFITypeGetOrAllocIndex(const TVMFFIByteArray* type_key,
                                              int32_t static_type_index, int32_t type_depth,
                                              int32_t num_child_slots,
                                              int32_t child_slots_can_overflow,
                                              int32_t parent_type_index);
TVM_FFI_DLL TVM_FFI_ATTRIBUTE_PURE const TVMFFITypeInfo* TVMFFIGetTypeInfo(int32_t type_index);

/* If *handle_addr is NULL, run init_func once (across threads) and store its
 * result there. Errors from init_func propagate. */
TVM_FFI_DLL int TVMFFIHandleInitOnce(void** handle_addr, int (*init_func)(void** result));
/* If *handle_addr is non-NULL, run deinit_func on it once and store NULL. */
TVM_FFI_DLL int TVMFFIHandleDeinitOnce(void** handle_addr, int (*deinit_func)(void* handle));

#ifdef __cplusplus
}
#endif

/* ---- accessors: the cell of an object is right after its 24-byte header ---- */
#ifdef __cplusplus
inline int32_t TVMFFIObjectGetTypeIndex(TVMFFIObjectHandle obj) {
  return static_cast<TVMFFIObject*>(obj)->type_index;
}
inline TVMFFIByteArray TVMFFISmallBytesGetContentByteArray(const TVMFFIAny* value) {
  return TVMFFIByteArray{value->v_bytes, static_cast<size_t>(value->small_str_len)};
}
inline TVMFFIByteArray* TVMFFIBytesGetByteArrayPtr(TVMFFIObjectHandle obj) {
  return reinterpret_cast<TVMFFIByteArray*>(static_cast<char*>(obj) + sizeof(TVMFFIObject));
}
inline TVMFFIErrorCell* TVMFFIErrorGetCellPtr(TVMFFIObjectHandle obj) {
  return reinterpret_cast<TVMFFIErrorCell*>(static_cast<char*>(obj) + sizeof(TVMFFIObject));
}
inline TVMFFIFunctionCell* TVMFFIFunctionGetCellPtr(TVMFFIObjectHandle obj) {
  return reinterpret_cast<TVMFFIFunctionCell*>(static_cast<char*>(obj) + sizeof(TVMFFIObject));
}
inline TVMFFIOpaqueObjectCell* TVMFFIOpaqueObjectGetCellPtr(TVMFFIObjectHandle obj) {
  return reinterpret_cast<TVMFFIOpaqueObjectCell*>(static_cast<char*>(obj) +
                                                   sizeof(TVMFFIObject));
}
inline TVMFFIShapeCell* TVMFFIShapeGetCellPtr(TVMFFIObjectHandle obj) {
  return reinterpret_cast<TVMFFIShapeCell*>(static_cast<char*>(obj) + sizeof(TVMFFIObject));
}
inline DLTensor* TVMFFITensorGetDLTensorPtr(TVMFFIObjectHandle obj) {
  return reinterpret_cast<DLTensor*>(static_cast<char*>(obj) + sizeof(TVMFFIObject));
}
inline DLDevice TVMFFIDLDeviceFromIntPair(int32_t device_type, int32_t device_id) {
  return DLDevice{static_cast<DLDeviceType>(device_type), device_id};
}
#endif

/* Helpers for C users under a tvmffi_c_ prefix (the ABI's own accessor names
 * are C++-only and C code often defines them itself, so we do not reuse
 * them). `static inline`: private to each translation unit. Define
 * TVMFFI_NO_C_HELPERS to omit. */
#if !defined(__cplusplus) && !defined(TVMFFI_NO_C_HELPERS) && !defined(TVMFFI_C_HELPERS_DEFINED)
#define TVMFFI_C_HELPERS_DEFINED 1
static inline void* tvmffi_c_object_cell(TVMFFIObjectHandle obj) {
  return (char*)obj + sizeof(TVMFFIObject);
}
static inline int32_t tvmffi_c_type_index(TVMFFIObjectHandle obj) {
  return ((const TVMFFIObject*)obj)->type_index;
}
static inline TVMFFIByteArray* tvmffi_c_bytes(TVMFFIObjectHandle obj) {
  return (TVMFFIByteArray*)tvmffi_c_object_cell(obj);
}
static inline TVMFFIErrorCell* tvmffi_c_error_cell(TVMFFIObjectHandle obj) {
  return (TVMFFIErrorCell*)tvmffi_c_object_cell(obj);
}
static inline TVMFFIFunctionCell* tvmffi_c_function_cell(TVMFFIObjectHandle obj) {
  return (TVMFFIFunctionCell*)tvmffi_c_object_cell(obj);
}
static inline TVMFFIOpaqueObjectCell* tvmffi_c_opaque_cell(TVMFFIObjectHandle obj) {
  return (TVMFFIOpaqueObjectCell*)tvmffi_c_object_cell(obj);
}
static inline TVMFFIShapeCell* tvmffi_c_shape_cell(TVMFFIObjectHandle obj) {
  return (TVMFFIShapeCell*)tvmffi_c_object_cell(obj);
}
static inline DLTensor* tvmffi_c_tensor(TVMFFIObjectHandle obj) {
  return (DLTensor*)tvmffi_c_object_cell(obj);
}
/* Content of a SmallStr/SmallBytes value (points into *value). */
static inline TVMFFIByteArray tvmffi_c_small_bytes(const TVMFFIAny* value) {
  TVMFFIByteArray r;
  r.data = value->v_bytes;
  r.size = (size_t)value->small_str_len;
  return r;
}
/* Content of any string/bytes value: small, heap object, raw C string or
 * byte-array pointer; {NULL, 0} for anything else. */
static inline TVMFFIByteArray tvmffi_c_any_bytes(const TVMFFIAny* value) {
  TVMFFIByteArray r = {NULL, 0};
  switch (value->type_index) {
    case kTVMFFISmallStr:
    case kTVMFFISmallBytes:
      return tvmffi_c_small_bytes(value);
    case kTVMFFIStr:
    case kTVMFFIBytes:
      return *tvmffi_c_bytes(value->v_obj);
    case kTVMFFIRawStr: {
      size_t n = 0;
      while (value->v_c_str[n]) ++n;
      r.data = value->v_c_str;
      r.size = n;
      return r;
    }
    case kTVMFFIByteArrayPtr:
      return *(const TVMFFIByteArray*)value->v_ptr;
    default:
      return r;
  }
}
static inline uint32_t tvmffi_c_strong_count(TVMFFIObjectHandle obj) {
  return (uint32_t)(((const TVMFFIObject*)obj)->combined_ref_count & 0xFFFFFFFFu);
}
static inline TVMFFIAny tvmffi_c_none(void) {
  TVMFFIAny a;
  a.type_index = kTVMFFINone;
  a.zero_padding = 0;
  a.v_int64 = 0;
  return a;
}
static inline TVMFFIAny tvmffi_c_int(int64_t v) {
  TVMFFIAny a = tvmffi_c_none();
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}
static inline TVMFFIAny tvmffi_c_float(double v) {
  TVMFFIAny a = tvmffi_c_none();
  a.type_index = kTVMFFIFloat;
  a.v_float64 = v;
  return a;
}
static inline TVMFFIAny tvmffi_c_raw_str(const char* s) {
  TVMFFIAny a = tvmffi_c_none();
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}
#endif

#endif /* TVM_FFI_C_API_H_ */
