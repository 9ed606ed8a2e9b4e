/* Private helpers of the structural equality/hash files (10_extra/structural_*.c).
 *
 * Facts of the official runtime these files follow (see structural_equal.c
 * and structural_hash.c for the walk itself):
 *  - an object is compared/hashed by its type's structural kind
 *    (TVMFFITypeMetadata.structural_eq_hash_kind) over its reflected fields,
 *    ancestors' fields first, skipping kTVMFFIFieldFlagBitMaskSEqHashIgnore;
 *    fields flagged SEqHashDefPattern / SEqHashDefSimple open a def region
 *    in which free variables bind;
 *  - a type may replace the field walk with a Function in the __s_equal__
 *    / __s_hash__ type attribute column (looked up at its exact index);
 *  - hashes combine with key ^ (value + 0x9e3779b9 + (key << 6) + (key >> 2)). */
#ifndef TVMFFI_RT_EXTRA_STRUCTURAL_INTERNAL_H_
#define TVMFFI_RT_EXTRA_STRUCTURAL_INTERNAL_H_

#include "container_internal.h"
#include "structural.h"

/* Bounds of one walk: deeper values (or a container that holds itself)
 * raise ValueError instead of exhausting the stack. A walk stops at
 * RT_ST_MAX_DEPTH levels, or earlier when less than RT_ST_STACK_MARGIN
 * bytes (a quarter of a smaller stack) of the calling thread's stack are
 * left. */
#define RT_ST_MAX_DEPTH 20000
#define RT_ST_STACK_MARGIN (256 * 1024)

static inline uint64_t rt_st_combine(uint64_t key, uint64_t value) {
  return key ^ (value + 0x9e3779b9u + (key << 6) + (key >> 2));
}

/* ---- object -> (object, number) table keyed by address (structural_common.c).
 * Keys and object values are held by strong references until freed, so an
 * address cannot be reused while the table lives. ---- */
typedef struct {
  void* key;
  void* obj;
  uint64_t num;
} rt_st_slot;
typedef struct {
  rt_st_slot* slots;
  size_t cap;
  size_t used;
} rt_st_map;
RT_HIDDEN void rt_st_map_init(rt_st_map* m);
RT_HIDDEN void rt_st_map_free(rt_st_map* m);
RT_HIDDEN const rt_st_slot* rt_st_map_find(const rt_st_map* m, const void* key);
/* Inserts or replaces; obj may be NULL. Returns 0/-1 (MemoryError). */
RT_HIDDEN int rt_st_map_put(rt_st_map* m, void* key, void* obj, uint64_t num);

/* The structural kind of an object type; TypeError (the official text)
 * when the type has no metadata or kind Unsupported. */
RT_HIDDEN int rt_st_kind(int32_t type_index, const TVMFFITypeInfo** info,
                         TVMFFISEqHashKind* kind);
/* The custom hook (a Function) of `type_index` in `column`, or NULL. */
RT_HIDDEN const TVMFFIAny* rt_st_hook(const char* column, int32_t type_index);
/* Reflected fields of a type in the official order: ancestors first. */
typedef struct {
  const TVMFFITypeInfo* info;
  int32_t level; /* ancestor depth being walked; == type_depth: the type itself */
  int32_t next;
} rt_st_fields;
RT_HIDDEN void rt_st_fields_begin(rt_st_fields* it, const TVMFFITypeInfo* info);
RT_HIDDEN const TVMFFIFieldInfo* rt_st_fields_next(rt_st_fields* it);
/* Owned value of field `f` of object `obj`. */
RT_HIDDEN int rt_st_field_get(void* obj, const TVMFFIFieldInfo* f, TVMFFIAny* out);
/* The def region in force inside a field with `flags` (or inside a custom
 * hook's sub-call asking for `requested`, kTVMFFIDefRegionKindNone: keep). */
RT_HIDDEN int32_t rt_st_field_region(int32_t current, int64_t flags);
RT_HIDDEN int32_t rt_st_callback_region(int32_t current, int64_t requested);
/* The Function handed to custom hooks: calls fn(ctx, ...) while the walk
 * runs. A hook may keep it; after rt_st_callback_close a call raises
 * RuntimeError instead of reaching the finished walk's state. */
typedef struct rt_st_cell rt_st_cell;
RT_HIDDEN int rt_st_callback_new(void* ctx, TVMFFISafeCallType fn, TVMFFIObjectHandle* out,
                                 rt_st_cell** cell);
/* Detaches the walk and drops the walk's reference (f may be NULL). */
RT_HIDDEN void rt_st_callback_close(rt_st_cell* cell, TVMFFIObjectHandle f);
/* 1 when the walk at `depth` must stop (see RT_ST_MAX_DEPTH). */
RT_HIDDEN int rt_st_too_deep_now(int depth);
/* Raises the ValueError of a walk that went too deep; returns -1. */
RT_HIDDEN int rt_st_too_deep(const char* what);

/* ---- tensors ---- */
static inline DLTensor* rt_st_dltensor(void* obj) { return (DLTensor*)rt_cell(obj); }
/* Bytes of the (contiguous) data: ceil(numel * bits * lanes / 8). */
RT_HIDDEN size_t rt_st_tensor_nbytes(const DLTensor* t);
/* The content checks of the official walk, InternalError with its
 * message: `side` names the operand ("lhs", "rhs", "tensor"), `verb` is
 * "compare" or "hash". */
RT_HIDDEN int rt_st_tensor_on_cpu(const DLTensor* t, const char* side, const char* verb);
RT_HIDDEN int rt_st_tensor_contiguous(const DLTensor* t, const char* side, const char* verb);

/* ---- access paths (structural_path.c) ---- */
enum {
  RT_ST_ATTR = 0,
  RT_ST_ARRAY_ITEM = 1,
  RT_ST_MAP_ITEM = 2,
  RT_ST_ATTR_MISSING = 3,
  RT_ST_ARRAY_ITEM_MISSING = 4,
  RT_ST_MAP_ITEM_MISSING = 5
};
typedef struct {
  int32_t kind;
  TVMFFIAny key; /* owned */
} rt_st_step;
typedef struct {
  rt_st_step* items;
  size_t size;
  size_t cap;
  int failed; /* a push ran out of memory */
} rt_st_steps;
/* Appends a step with a copy of key (retained). */
RT_HIDDEN void rt_st_steps_push(rt_st_steps* s, int32_t kind, const TVMFFIAny* key);
RT_HIDDEN void rt_st_steps_push_int(rt_st_steps* s, int32_t kind, int64_t index);
RT_HIDDEN void rt_st_steps_free(rt_st_steps* s);
/* An ffi.reflection.AccessPath from the root through the steps, taken in
 * reverse order (the walk records them innermost first). Owned in *out. */
RT_HIDDEN int rt_st_path_from_reversed(const rt_st_steps* s, TVMFFIAny* out);

#endif /* TVMFFI_RT_EXTRA_STRUCTURAL_INTERNAL_H_ */
