/* Private to the structural visitor and mutator (10_extra/structural_*.c).
 *
 * ABI facts of the official headers (tvm/ffi/extra/structural_visit.h and
 * structural_mutate.h) that code compiled against them relies on:
 *  - a visitor (ffi.StructuralVisitor) and a mutator (ffi.StructuralMutator)
 *    are objects laid out as [object header][const vtable*][int32 region];
 *    hooks of user types call back through that vtable;
 *  - a visit vtable has one slot, a mutate vtable four (mutate,
 *    maybe_inplace_mutate, var_remap_get, var_remap_set); each returns a raw
 *    owned TVMFFIAny: an Error on failure; for visits None (go on) or a
 *    VisitInterrupt (stop); for mutations the Unchanged marker or a value;
 *  - an opaque-pointer value in a __s_visit__ / __s_mutate__ /
 *    __s_maybe_inplace_mutate__ column is a function of that hook shape.
 * Values are passed by value as 16-byte TVMFFIAny (the C++ AnyView is a
 * trivially copyable wrapper of one), so the C and C++ calls agree. */
#ifndef TVMFFI_RT_STRUCTURAL_VISIT_H_
#define TVMFFI_RT_STRUCTURAL_VISIT_H_

#include "container_internal.h"

/* Deepest nesting a visit or mutation follows before it fails: the official
 * engines recurse without a bound (a list that holds itself overflows the
 * stack); ours stops with a RecursionError instead. */
#define RT_SV_MAX_DEPTH 4000

typedef struct rt_sv_visit_vtable {
  TVMFFIAny (*visit)(void* visitor, TVMFFIAny value);
} rt_sv_visit_vtable;

typedef struct rt_sv_mutate_vtable {
  TVMFFIAny (*mutate)(void* mutator, TVMFFIAny value);
  TVMFFIAny (*maybe_inplace_mutate)(void* mutator, TVMFFIAny value);
  TVMFFIAny (*var_remap_get)(void* mutator, TVMFFIAny var);
  TVMFFIAny (*var_remap_set)(void* mutator, TVMFFIAny var, TVMFFIAny mapped);
} rt_sv_mutate_vtable;

/* The part of either object that the official headers read. */
typedef struct {
  TVMFFIObject header;
  const void* vtable;
  int32_t region; /* TVMFFIDefRegionKind */
} rt_sv_head;

/* ---- helpers shared by the visitor and the mutator (structural_visit.c) ---- */
/* Official RuntimeTypeIndexMatch: does a value of `actual` match a callback
 * registered for `target` (-1 = Any, str/bytes also match their small forms,
 * ffi.Object matches every object, else the type or a subclass)? */
RT_HIDDEN int rt_sv_type_match(int32_t actual, int32_t target);
/* An owned Any holding a new Error of `kind` with the formatted message. */
RT_HIDDEN TVMFFIAny rt_sv_error(const char* kind, const char* fmt, ...) RT_PRINTF(2, 3);
/* An owned Any holding the error raised in this thread (after a failed call). */
RT_HIDDEN TVMFFIAny rt_sv_take_raised(void);
/* Names `node` (when it is an object) in the VisitErrorContext of the Error
 * held by `err` (created on first use; an earlier extra context is kept as
 * its prev_error_context). */
RT_HIDDEN void rt_sv_attach_context(const TVMFFIAny* err, const TVMFFIAny* node);
/* Raises the Error held by the owned `err` (consumed); returns -1. */
RT_HIDDEN int rt_sv_raise(TVMFFIAny* err);
/* Checks a callback table argument: an Array of Arrays of `width` items
 * (int type index, ffi.Function[, bool]). Returns the Array object or NULL
 * with a TypeError raised naming `expected`. */
RT_HIDDEN void* rt_sv_check_table(const TVMFFIAny* args, int32_t i, const char* sig,
                                  const char* expected, int width);
/* Entry `k` of a checked table: its type index, Function and flag. */
RT_HIDDEN void rt_sv_table_entry(void* table, int64_t k, int32_t* type_index, void** fn,
                                 int* flag);
RT_HIDDEN int64_t rt_sv_table_size(void* table);
/* Runs the nullary Function `fn` with the region of `head` switched to
 * `kind` (no switch inside a pattern region), as With*DefRegionKind. */
RT_HIDDEN int rt_sv_with_region(rt_sv_head* head, int32_t kind, void* fn, TVMFFIAny* ret);
/* Calls a Function with the given arguments; the owned result, or the raised
 * error as an owned Error Any. */
RT_HIDDEN TVMFFIAny rt_sv_call(void* fn, const TVMFFIAny* args, int32_t nargs);
/* Type index of a type registered by key at start-up (cached), -1 if absent. */
RT_HIDDEN int32_t rt_sv_visitor_type(void);
RT_HIDDEN int32_t rt_sv_mutator_type(void);
/* Takes an owned copy of argument `a`, moving out of an rvalue reference
 * (kTVMFFIObjectRValueRef) as a typed C++ `Any` parameter does. */
RT_HIDDEN int rt_sv_take_arg(const TVMFFIAny* a, TVMFFIAny* out);

static inline TVMFFIAny rt_sv_none(void) {
  TVMFFIAny a;
  rt_any_set_none(&a);
  return a;
}
static inline TVMFFIAny rt_sv_unchanged(void) {
  TVMFFIAny a;
  a.type_index = kTVMFFIUnchanged;
  a.zero_padding = 0;
  a.v_int64 = 0;
  return a;
}
/* Bitwise identity, as the official Any::same_as. */
static inline int rt_sv_same(const TVMFFIAny* a, const TVMFFIAny* b) {
  return a->type_index == b->type_index && a->zero_padding == b->zero_padding &&
         a->v_int64 == b->v_int64;
}
/* Strong count 1 and weak count 1: the official Object::unique(). */
static inline int rt_sv_unique(const TVMFFIAny* v) {
  return v->type_index >= kTVMFFIStaticObjectBegin && v->v_obj != NULL &&
         __atomic_load_n(&v->v_obj->combined_ref_count, __ATOMIC_RELAXED) == RT_BOTH_ONE;
}

#endif /* TVMFFI_RT_STRUCTURAL_VISIT_H_ */
