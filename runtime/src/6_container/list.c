/* List objects (kTVMFFIList): the sequence cell of Array, with the elements
 * in a separate growable buffer (data_deleter frees it), so a List keeps
 * its identity while it changes; and the ffi.List* global functions. */
#include <stdlib.h>
#include <string.h>

#include "container_internal.h"

#define LIST_INIT_CAP 4

static void list_data_free(void* data) { free(data); }

static void list_deleter(void* self, int flags) {
  TVMFFISeqCell* c = (TVMFFISeqCell*)rt_cell(self);
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    TVMFFIAny* items = (TVMFFIAny*)c->data;
    for (int64_t i = 0; items != NULL && i < c->size; ++i) rt_any_release(&items[i]);
    c->size = 0;
    if (c->data != NULL && c->data_deleter != NULL) c->data_deleter(c->data);
    c->data = NULL;
    c->data_deleter = NULL;
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

/* Capacity for at least `need` elements; the buffer may move. */
static int list_reserve(TVMFFISeqCell* c, int64_t need) {
  if (need <= c->capacity) return 0;
  if ((uint64_t)need > SIZE_MAX / sizeof(TVMFFIAny))
    return rt_raise("ValueError", "List capacity %lld is out of range", (long long)need);
  TVMFFIAny* n = (TVMFFIAny*)malloc((size_t)need * sizeof(TVMFFIAny));
  if (n == NULL) return rt_raise("MemoryError", "out of memory growing a List");
  if (c->size) memcpy(n, c->data, (size_t)c->size * sizeof(TVMFFIAny));
  if (c->data != NULL && c->data_deleter != NULL) c->data_deleter(c->data);
  c->data = n;
  c->data_deleter = list_data_free;
  c->capacity = need;
  return 0;
}

/* Room for `extra` more elements, growing by doubling like the official. */
static int list_grow_for(TVMFFISeqCell* c, int64_t extra) {
  int64_t need = c->size + extra;
  if (need <= c->capacity) return 0;
  int64_t cap = c->capacity > 0 ? c->capacity : LIST_INIT_CAP;
  while (cap < need) cap *= 2;
  return list_reserve(c, cap);
}

void* rt_list_new(int64_t capacity) {
  if (capacity < 0) {
    rt_raise("ValueError", "cannot construct a List of negative size");
    return NULL;
  }
  void* l = rt_object_alloc(sizeof(TVMFFIObject) + sizeof(TVMFFISeqCell), kTVMFFIList,
                            list_deleter);
  if (l == NULL) return NULL;
  if (list_reserve((TVMFFISeqCell*)rt_cell(l), capacity) != 0) {
    rt_decref(l);
    return NULL;
  }
  return l;
}

int rt_list_append(void* list, const TVMFFIAny* value) {
  TVMFFISeqCell* c = (TVMFFISeqCell*)rt_cell(list);
  TVMFFIAny v;
  if (TVMFFIAnyViewToOwnedAny(value, &v) != 0) return -1;
  if (list_grow_for(c, 1) != 0) {
    rt_any_release(&v);
    return -1;
  }
  ((TVMFFIAny*)c->data)[c->size++] = v;
  return 0;
}

/* ---- global functions ---- */

#define LIST_ARG(sig, n)                                                                     \
  void* obj = NULL;                                                                          \
  if (rt_b_check_nargs(sig, nargs, n) ||                                                     \
      rt_b_arg_obj(args, 0, sig, kTVMFFIList, "ffi.List", &obj))                             \
    return -1;                                                                               \
  TVMFFISeqCell* c = (TVMFFISeqCell*)rt_cell(obj);                                           \
  TVMFFIAny* items = (TVMFFIAny*)c->data;                                                    \
  (void)items;

static int index_error(int64_t i, int64_t n) {
  return rt_raise("IndexError", "Index %lld out of bounds %lld", (long long)i, (long long)n);
}

static int g_list(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  void* l = rt_list_new(nargs);
  if (l == NULL) return -1;
  for (int32_t i = 0; i < nargs; ++i) {
    if (rt_list_append(l, &args[i]) != 0) {
      rt_decref(l);
      return -1;
    }
  }
  rt_any_set_obj(ret, l);
  return 0;
}

static int g_get_item(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  LIST_ARG("ffi.ListGetItem(0: ffi.List, 1: int) -> Any", 2);
  int64_t i = 0;
  if (rt_b_arg_int(args, 1, "ffi.ListGetItem(0: ffi.List, 1: int) -> Any", &i)) return -1;
  if (i < 0 || i >= c->size) return index_error(i, c->size);
  *ret = items[i];
  rt_any_retain(ret);
  return 0;
}

static int g_set_item(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  static const char sig[] = "ffi.ListSetItem(0: ffi.List, 1: int, 2: Any) -> None";
  LIST_ARG(sig, 3);
  int64_t i = 0;
  if (rt_b_arg_int(args, 1, sig, &i)) return -1;
  if (i < 0 || i >= c->size) return index_error(i, c->size);
  TVMFFIAny v;
  if (TVMFFIAnyViewToOwnedAny(&args[2], &v) != 0) return -1;
  rt_any_release(&items[i]);
  items[i] = v;
  return 0;
}

static int g_size(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  LIST_ARG("ffi.ListSize(0: ffi.List) -> int", 1);
  rt_any_set_int(ret, c->size);
  return 0;
}

static int g_contains(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  LIST_ARG("ffi.ListContains(0: ffi.List, 1: Any) -> bool", 2);
  TVMFFIAny key;
  if (TVMFFIAnyViewToOwnedAny(&args[1], &key) != 0) return -1;
  int found = 0;
  for (int64_t i = 0; i < c->size && !found; ++i) {
    if (rt_any_equal(&((TVMFFIAny*)c->data)[i], &key, &found) != 0) {
      rt_any_release(&key);
      return -1;
    }
  }
  rt_any_release(&key);
  rt_any_set_bool(ret, found);
  return 0;
}

static int g_append(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  LIST_ARG("ffi.ListAppend(0: ffi.List, 1: Any) -> None", 2);
  return rt_list_append(obj, &args[1]);
}

/* Inserts copies of src[0:n] at idx (0 <= idx <= size). */
static int list_insert_range(TVMFFISeqCell* c, int64_t idx, const TVMFFIAny* src, int64_t n) {
  if (n == 0) return 0;
  if (idx < 0 || idx > c->size)
    return rt_raise("IndexError", "Index %lld out of bounds [0, %lld]", (long long)idx,
                    (long long)c->size);
  TVMFFIAny* owned = (TVMFFIAny*)malloc((size_t)n * sizeof(TVMFFIAny));
  if (owned == NULL) return rt_raise("MemoryError", "out of memory");
  for (int64_t i = 0; i < n; ++i) {
    owned[i] = src[i];
    rt_any_retain(&owned[i]);
  }
  if (list_grow_for(c, n) != 0) {
    for (int64_t i = 0; i < n; ++i) rt_any_release(&owned[i]);
    free(owned);
    return -1;
  }
  TVMFFIAny* items = (TVMFFIAny*)c->data;
  memmove(items + idx + n, items + idx, (size_t)(c->size - idx) * sizeof(TVMFFIAny));
  memcpy(items + idx, owned, (size_t)n * sizeof(TVMFFIAny));
  c->size += n;
  free(owned);
  return 0;
}

/* Removes [first, last) (already checked). */
static void list_erase_range(TVMFFISeqCell* c, int64_t first, int64_t last) {
  TVMFFIAny* items = (TVMFFIAny*)c->data;
  for (int64_t i = first; i < last; ++i) rt_any_release(&items[i]);
  memmove(items + first, items + last, (size_t)(c->size - last) * sizeof(TVMFFIAny));
  c->size -= last - first;
}

static int g_insert(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  static const char sig[] = "ffi.ListInsert(0: ffi.List, 1: int, 2: Any) -> None";
  LIST_ARG(sig, 3);
  int64_t i = 0;
  if (rt_b_arg_int(args, 1, sig, &i)) return -1;
  TVMFFIAny v;
  if (TVMFFIAnyViewToOwnedAny(&args[2], &v) != 0) return -1;
  int rc = list_insert_range(c, i, &v, 1);
  rt_any_release(&v);
  return rc;
}

static int g_pop(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.ListPop(0: ffi.List, 1: int) -> Any";
  LIST_ARG(sig, 2);
  int64_t i = 0;
  if (rt_b_arg_int(args, 1, sig, &i)) return -1;
  if (i < 0 || i >= c->size) return index_error(i, c->size);
  *ret = items[i];
  rt_any_retain(ret);
  list_erase_range(c, i, i + 1);
  return 0;
}

static int g_erase(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  static const char sig[] = "ffi.ListErase(0: ffi.List, 1: int) -> None";
  LIST_ARG(sig, 2);
  int64_t i = 0;
  if (rt_b_arg_int(args, 1, sig, &i)) return -1;
  if (i < 0 || i >= c->size) return index_error(i, c->size);
  list_erase_range(c, i, i + 1);
  return 0;
}

static int check_range(TVMFFISeqCell* c, int64_t first, int64_t last) {
  if (first == last) return 0;
  if (first < 0 || last > c->size || first >= last)
    return rt_raise("IndexError", "Erase range [%lld, %lld) out of bounds %lld",
                    (long long)first, (long long)last, (long long)c->size);
  return 0;
}

static int g_erase_range(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  static const char sig[] = "ffi.ListEraseRange(0: ffi.List, 1: int, 2: int) -> None";
  LIST_ARG(sig, 3);
  int64_t first = 0, last = 0;
  if (rt_b_arg_int(args, 1, sig, &first) || rt_b_arg_int(args, 2, sig, &last)) return -1;
  if (check_range(c, first, last) != 0) return -1;
  if (first != last) list_erase_range(c, first, last);
  return 0;
}

static int g_replace_slice(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  static const char sig[] =
      "ffi.ListReplaceSlice(0: ffi.List, 1: int, 2: int, 3: ffi.List) -> None";
  LIST_ARG(sig, 4);
  int64_t first = 0, last = 0;
  void* rep = NULL;
  if (rt_b_arg_int(args, 1, sig, &first) || rt_b_arg_int(args, 2, sig, &last) ||
      rt_b_arg_obj(args, 3, sig, kTVMFFIList, "ffi.List", &rep))
    return -1;
  /* a snapshot of the replacement first: it may be this very list */
  TVMFFISeqCell* rc_ = (TVMFFISeqCell*)rt_cell(rep);
  int64_t n = rc_->size;
  TVMFFIAny* snap = (TVMFFIAny*)malloc((size_t)(n ? n : 1) * sizeof(TVMFFIAny));
  if (snap == NULL) return rt_raise("MemoryError", "out of memory");
  for (int64_t i = 0; i < n; ++i) {
    snap[i] = ((TVMFFIAny*)rc_->data)[i];
    rt_any_retain(&snap[i]);
  }
  int rc = check_range(c, first, last);
  if (rc == 0 && first != last) list_erase_range(c, first, last);
  if (rc == 0) rc = list_insert_range(c, first, snap, n);
  for (int64_t i = 0; i < n; ++i) rt_any_release(&snap[i]);
  free(snap);
  return rc;
}

static int g_reverse(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  LIST_ARG("ffi.ListReverse(0: ffi.List) -> None", 1);
  for (int64_t i = 0, j = c->size - 1; i < j; ++i, --j) {
    TVMFFIAny t = items[i];
    items[i] = items[j];
    items[j] = t;
  }
  return 0;
}

static int g_clear(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  LIST_ARG("ffi.ListClear(0: ffi.List) -> None", 1);
  if (c->size) list_erase_range(c, 0, c->size);
  return 0;
}

static int g_reserve(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  (void)ret;
  static const char sig[] = "ffi.ListReserve(0: ffi.List, 1: int) -> None";
  LIST_ARG(sig, 2);
  int64_t cap = 0;
  if (rt_b_arg_int(args, 1, sig, &cap)) return -1;
  return list_reserve(c, cap);
}

RT_INIT(list_init) {
  rt_register_global("ffi.List", g_list);
  rt_register_global("ffi.ListGetItem", g_get_item);
  rt_register_global("ffi.ListSetItem", g_set_item);
  rt_register_global("ffi.ListSize", g_size);
  rt_register_global("ffi.ListContains", g_contains);
  rt_register_global("ffi.ListAppend", g_append);
  rt_register_global("ffi.ListInsert", g_insert);
  rt_register_global("ffi.ListPop", g_pop);
  rt_register_global("ffi.ListErase", g_erase);
  rt_register_global("ffi.ListEraseRange", g_erase_range);
  rt_register_global("ffi.ListReplaceSlice", g_replace_slice);
  rt_register_global("ffi.ListReverse", g_reverse);
  rt_register_global("ffi.ListClear", g_clear);
  rt_register_global("ffi.ListReserve", g_reserve);
}
