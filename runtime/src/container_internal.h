/* Shared by the container, tensor, module and registry layers: container
 * layouts identical to the official headers, and helpers for C-implemented
 * global functions that check their arguments like the reference does. */
#ifndef TVMFFI_RT_CONTAINER_INTERNAL_H_
#define TVMFFI_RT_CONTAINER_INTERNAL_H_

#include "internal.h"

/* Array (kTVMFFIArray): header, TVMFFISeqCell, then `capacity` TVMFFIAny
 * elements inline (data points at them, data_deleter NULL). */
typedef struct {
  TVMFFIObject header;
  TVMFFISeqCell seq;
  TVMFFIAny items[];
} rt_array;

/* Shape (kTVMFFIShape): header, TVMFFIShapeCell, then the dims inline. */
typedef struct {
  TVMFFIObject header;
  TVMFFIShapeCell cell;
  int64_t dims[];
} rt_shape;

/* Empty Array with room for `capacity` elements (new reference). */
RT_HIDDEN rt_array* rt_array_new(int64_t capacity);
/* Appends an owned value (ownership moves in); caller keeps size < capacity. */
static inline void rt_array_push_move(rt_array* a, TVMFFIAny* v) {
  a->items[a->seq.size++] = *v;
  rt_any_set_none(v);
}
/* Elements of any sequence object made by us or by C++ (data + size). */
static inline const TVMFFIAny* rt_seq_items(void* obj, int64_t* size) {
  TVMFFISeqCell* c = (TVMFFISeqCell*)rt_cell(obj);
  *size = c->size;
  return (const TVMFFIAny*)c->data;
}

/* ---- lists (list.c) ---- */
/* Empty List with room for `capacity` elements (new reference) or NULL. */
RT_HIDDEN void* rt_list_new(int64_t capacity);
/* Appends a copy of `value` (an owned or view Any). */
RT_HIDDEN int rt_list_append(void* list, const TVMFFIAny* value);

/* ---- dicts (map.c: storage; dict.c: globals) ----
 * A Dict keeps its identity: its storage is always the dense layout with
 * the blocks outside the object, and growing moves the new storage in. */
RT_HIDDEN void* rt_dict_new(void);
RT_HIDDEN int rt_dict_set(void* dict, const TVMFFIAny* key, const TVMFFIAny* value);
/* Removes `key` if present (*erased = 1 then). */
RT_HIDDEN int rt_dict_erase(void* dict, const TVMFFIAny* key, int* erased);
RT_HIDDEN int rt_dict_clear(void* dict);
/* Forward-iterator Function over a Map or Dict (see ffi.MapForwardIterFunctor). */
RT_HIDDEN int rt_map_iter_functor(void* map, TVMFFIAny* ret);

/* ---- maps (map.c) ---- */
/* New empty Map (new reference) or NULL with an error raised. */
RT_HIDDEN void* rt_map_new(void);
/* Inserts or replaces key -> value (both copied, retained). The map may be
 * re-laid out: *map is updated (the old object is released). */
RT_HIDDEN int rt_map_set(void** map, const TVMFFIAny* key, const TVMFFIAny* value);
/* Borrowed value for `key` (an owned or view Any), or NULL when absent.
 * Returns -1 with an error raised when a custom hash/equality fails. */
RT_HIDDEN int rt_map_find(void* map, const TVMFFIAny* key, const TVMFFIAny** out_value);
RT_HIDDEN int64_t rt_map_size(void* map);
/* Iteration in the official order: it = rt_map_iter_begin(m); while
 * (it != rt_map_iter_end(m)) { rt_map_iter_kv(m, it, &k, &v); it =
 * rt_map_iter_next(m, it); } */
RT_HIDDEN uint64_t rt_map_iter_begin(void* map);
RT_HIDDEN uint64_t rt_map_iter_end(void* map);
RT_HIDDEN uint64_t rt_map_iter_next(void* map, uint64_t it);
RT_HIDDEN void rt_map_iter_kv(void* map, uint64_t it, const TVMFFIAny** key,
                              const TVMFFIAny** value);

/* ---- argument checking for C globals (5_function/args.c) ----
 * `sig` is the signature shown in messages, e.g.
 * "ffi.ArraySize(0: ffi.Array) -> int". */
RT_HIDDEN int rt_b_check_nargs(const char* sig, int32_t got, int32_t want);
RT_HIDDEN int rt_b_type_error(const char* sig, int32_t i, const char* expected,
                              const TVMFFIAny* got);
/* Object argument of exactly `type_index` (or derived from it). */
RT_HIDDEN int rt_b_arg_obj(const TVMFFIAny* args, int32_t i, const char* sig, int32_t type_index,
                           const char* expected, void** out);
RT_HIDDEN int rt_b_arg_int(const TVMFFIAny* args, int32_t i, const char* sig, int64_t* out);
RT_HIDDEN int rt_b_arg_bool(const TVMFFIAny* args, int32_t i, const char* sig, int* out);
/* A str argument (any string form); data borrowed from args. */
RT_HIDDEN int rt_b_arg_str(const TVMFFIAny* args, int32_t i, const char* sig,
                           TVMFFIByteArray* out);
/* Name of the type of a value for messages. */
RT_HIDDEN const char* rt_b_type_name(const TVMFFIAny* v, size_t* len);

/* Hash and equality of map keys, as the official AnyHash / AnyEqual
 * (6_container/anyhash.c). */
RT_HIDDEN int rt_any_hash(const TVMFFIAny* v, uint64_t* out);
/* The official stable hash of bytes (64-bit words mod 2^31-1). */
RT_HIDDEN uint64_t rt_hash_bytes(const char* data, size_t size);
RT_HIDDEN int rt_any_equal(const TVMFFIAny* a, const TVMFFIAny* b, int* out);

#endif /* TVMFFI_RT_CONTAINER_INTERNAL_H_ */
