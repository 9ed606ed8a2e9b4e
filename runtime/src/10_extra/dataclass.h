/* Private to the dataclass operations of layer 10 (dataclass_*.c): deep
 * copy, repr printing, recursive hashing and comparison over reflected
 * fields, as the official runtime's ffi.DeepCopy / ffi.ReprPrint /
 * ffi.RecursiveHash / ffi.Recursive{Eq,Lt,Le,Gt,Ge}.
 *
 * Every operation walks the object graph with an explicit stack of frames on
 * the heap (no C recursion on the data; at most DC_MAX_DEPTH frames), keeps
 * its state in a context owned by the call (no global mutable state) and
 * visits children in the official order: Array/List items, Map/Dict
 * key/value pairs in iteration order, object fields ancestors first. */
#ifndef TVMFFI_RT_EXTRA_DATACLASS_H_
#define TVMFFI_RT_EXTRA_DATACLASS_H_

#include "container_internal.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The official bound on the traversal stack. */
#define DC_MAX_DEPTH ((size_t)1 << 20)

/* ---- the public entry points (also used by cxx/dataclass.cc) ----
 * Arguments are owned or view Anys; results are owned. 0, or -1 with an
 * error raised. */
RT_HIDDEN int rt_dc_deep_copy(const TVMFFIAny* value, TVMFFIAny* out);
RT_HIDDEN int rt_dc_repr(const TVMFFIAny* value, TVMFFIAny* out);
RT_HIDDEN int rt_dc_hash(const TVMFFIAny* value, int64_t* out);
/* *out: -1, 0 or 1 (eq_only: 0 equal, nonzero different). */
RT_HIDDEN int rt_dc_compare(const TVMFFIAny* lhs, const TVMFFIAny* rhs, int eq_only, int32_t* out);

/* ---- a map keyed by one or two pointers (open addressing) ---- */
typedef struct {
  const void* k1;
  const void* k2;
  int live;       /* 0 empty, 1 present, 2 removed */
  uint64_t u;     /* a number (state, hash) */
  TVMFFIAny any;  /* an owned value (None when unused) */
  char* text;     /* an owned text (NULL when unused) */
  size_t len;
} dc_entry;
typedef struct {
  dc_entry* e;
  size_t cap, used;
} dc_map;
RT_HIDDEN dc_entry* dc_map_find(dc_map* m, const void* k1, const void* k2);
/* The entry for the key, made (zeroed, value None) when absent; NULL with an
 * error raised when out of memory. */
RT_HIDDEN dc_entry* dc_map_put(dc_map* m, const void* k1, const void* k2);
RT_HIDDEN void dc_map_erase(dc_map* m, const void* k1, const void* k2);
RT_HIDDEN void dc_map_free(dc_map* m);

/* ---- children of a container or reflected object ---- */
enum { DC_SEQ, DC_MAP, DC_OBJ };
typedef struct {
  int kind;
  TVMFFIAny* items;                  /* owned: items, key/value pairs or field values */
  const TVMFFIFieldInfo** fields;    /* DC_OBJ: the field of each item */
  size_t n;                          /* number of items */
  size_t size;                       /* container size, or number of fields */
} dc_children;
/* Children of object value `v` (type index >= kTVMFFIStaticObjectBegin);
 * fields whose flags meet `skip_mask` are left out. */
RT_HIDDEN int dc_children_of(const TVMFFIAny* v, int64_t skip_mask, dc_children* out);
RT_HIDDEN void dc_children_free(dc_children* c);

/* ---- helpers ---- */
/* The attribute columns the operations read. */
enum {
  DC_COL_REPR,     /* __ffi_repr__ */
  DC_COL_HASH,     /* __ffi_hash__ */
  DC_COL_EQ,       /* __ffi_eq__ */
  DC_COL_CMP,      /* __ffi_compare__ */
  DC_COL_COPY,     /* __ffi_shallow_copy__ */
  DC_COL_TO_JSON,  /* __data_to_json__ */
  DC_N_COLUMNS
};
/* The value of column `which` (DC_COL_*) for type_index, or NULL (absent
 * or None). */
RT_HIDDEN const TVMFFIAny* dc_column(int which, int32_t type_index);
/* Calls `f` (a column value or argument) with args; *ret owned. Unless `f`
 * is a Function: TypeError naming `sig`, the hook's typed signature as the
 * official runtime prints it (NULL: "ffi.Function"). */
RT_HIDDEN int dc_call(const TVMFFIAny* f, const char* sig, TVMFFIAny* args, int32_t n,
                      TVMFFIAny* ret);
/* The typed signatures of the hook columns. */
#define DC_SIG_REPR "(0: ffi.Object, 1: (0: AnyView) -> str) -> str"
#define DC_SIG_HASH "(0: ffi.Object, 1: (0: AnyView) -> int) -> int"
#define DC_SIG_EQ "(0: ffi.Object, 1: ffi.Object, 2: (0: AnyView, 1: AnyView) -> bool) -> bool"
#define DC_SIG_CMP "(0: ffi.Object, 1: ffi.Object, 2: (0: AnyView, 1: AnyView) -> int) -> int"
#define DC_SIG_COPY "(0: ffi.Object) -> ffi.Object"
/* The type key of a type index (for messages). */
RT_HIDDEN TVMFFIByteArray dc_type_key(int32_t type_index);
/* The official stable hash combination. */
static inline uint64_t dc_combine(uint64_t key, uint64_t value) {
  return key ^ (value + 0x9e3779b9ULL + (key << 6) + (key >> 2));
}
/* Owned copy of a view (raw strings become String objects). */
RT_HIDDEN int dc_own(const TVMFFIAny* view, TVMFFIAny* out);
/* String content of a Str/SmallStr or Bytes/SmallBytes value. */
RT_HIDDEN TVMFFIByteArray dc_bytes(const TVMFFIAny* v);
/* Whether `type_index` is ffi.Enum or derives from it. */
RT_HIDDEN int dc_is_enum(int32_t type_index);
/* Sets a field of `obj` through its setter (function or C setter). */
RT_HIDDEN int dc_set_field(TVMFFIObject* obj, const TVMFFIFieldInfo* f, const TVMFFIAny* value);
/* A Function over `ctx` calling `fn` (no deleter), as an owned Any. */
RT_HIDDEN int dc_make_callback(void* ctx, TVMFFISafeCallType fn, TVMFFIAny* out);
/* The two sentinel objects (borrowed pointers, never freed). */
RT_HIDDEN const void* dc_missing_ptr(void);
RT_HIDDEN const void* dc_kwargs_ptr(void);
/* Registers global `name` (implemented by fn) with the official metadata:
 * `nparams` Any parameters and return type `ret_type` ("int", "Any", ...). */
RT_HIDDEN void dc_register_global(const char* name, TVMFFISafeCallType fn, int nparams,
                                  const char* ret_type);
/* Registers `fn` as the value of column `column` for type `type_key`. */
RT_HIDDEN void dc_register_attr(const char* type_key, const char* column, TVMFFISafeCallType fn);

#ifdef __cplusplus
}
#endif

#endif /* TVMFFI_RT_EXTRA_DATACLASS_H_ */
