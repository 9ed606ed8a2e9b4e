/* Map objects (kTVMFFIMap) laid out exactly like the official MapObj, so
 * C++ code built against the official headers reads, looks up and iterates
 * maps we build, and we read maps it builds.
 *
 * Two layouts share one header (MapBaseObj): data, size, slots (most
 * significant bit set = small layout), data_deleter.
 *  - small: up to 4 (key, value) pairs stored inline after the header and
 *    searched linearly, in insertion order;
 *  - dense: a power-of-two slot table in blocks of 16 (16 metadata bytes then
 *    16 items of key, value, prev, next), addressed by Fibonacci hashing of
 *    the official AnyHash; collisions form chains through "jump" codes in the
 *    metadata byte, and a doubly linked list through prev/next keeps the
 *    insertion order for iteration.
 * Insertion follows the same steps as the official code (when it grows,
 * where an item lands, how an updated key moves to the end of the order), so
 * a map built here is laid out as the official runtime would lay it out. */
#include <stdlib.h>
#include <string.h>

#include "container_internal.h"

#define SMALL_TAG ((uint64_t)1 << 63)
#define SMALL_INIT 2
#define SMALL_MAX 4
#define BLOCK_CAP 16
#define META_EMPTY 0xFFu
#define META_PROTECTED 0xFEu
#define NUM_JUMPS 126
#define INVALID_INDEX UINT64_MAX
#define MAX_LOAD 0.99

typedef struct {
  TVMFFIObject header;
  void* data;
  uint64_t size;
  uint64_t slots;
  void (*data_deleter)(void*);
} map_base;

typedef struct {
  map_base base;
  uint32_t fib_shift;
  uint64_t head;
  uint64_t tail;
} map_dense;

typedef struct {
  TVMFFIAny key;
  TVMFFIAny value;
} map_kv;

typedef struct {
  map_kv kv;
  uint64_t prev;
  uint64_t next;
} dense_item;

#define BLOCK_BYTES (BLOCK_CAP + BLOCK_CAP * sizeof(dense_item))

_Static_assert(sizeof(map_base) == 56, "MapBaseObj is 56 bytes");
_Static_assert(sizeof(map_dense) == 80, "DenseMapBaseObj is 80 bytes");
_Static_assert(sizeof(dense_item) == 48, "dense item is 48 bytes");
_Static_assert(BLOCK_BYTES == 784, "block is 784 bytes");

/* Probe distances indexed by the 7-bit jump code (0 = end of chain). */
static const uint64_t kProbe[NUM_JUMPS] = {
    0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
    21, 28, 36, 45, 55, 66, 78, 91, 105, 120, 136, 153, 171, 190, 210, 231,
    253, 276, 300, 325, 351, 378, 406, 435, 465, 496, 528, 561, 595, 630, 666, 703,
    741, 780, 820, 861, 903, 946, 990, 1035, 1081, 1128, 1176, 1225, 1275, 1326, 1378, 1431,
    1485, 1540, 1596, 1653, 1711, 1770, 1830, 1891, 1953, 2016, 2080, 2145, 2211, 2278, 2346,
    2415, 2485, 2556, 2628,
    /* sparse tail: quadratic steps run out, so jump far */
    8515ull, 19110ull, 42778ull, 96141ull, 216153ull, 486591ull, 1092981ull, 2458653ull,
    5532801ull, 12442566ull, 27993903ull, 62983476ull, 141717030ull, 318844378ull, 717352503ull,
    1614057336ull, 3631522476ull, 8170957530ull, 18384510628ull, 41364789378ull, 93070452520ull,
    209408356380ull, 471168559170ull, 1060128894105ull, 2385289465695ull, 5366898840628ull,
    12075518705635ull, 27169915244790ull, 61132312065111ull, 137547689707000ull,
    309482283181501ull, 696335127828753ull, 1566753995631385ull, 3525196511162271ull,
    7931691992677701ull, 17846306936293605ull, 40154190677507445ull, 90346928918121501ull,
    203280589587557251ull, 457381325854679626ull, 1029107982097042876ull,
    2315492959180353330ull, 5209859154120846435ull};

/* ------------------------------------------------------------------ */
/* layout helpers                                                     */
/* ------------------------------------------------------------------ */

static int is_small(const map_base* m) { return (m->slots & SMALL_TAG) != 0; }
static uint64_t small_slots(const map_base* m) { return m->slots & ~SMALL_TAG; }
static map_kv* small_kvs(const map_base* m) { return (map_kv*)m->data; }

static uint8_t* meta_at(const map_dense* d, uint64_t i) {
  return (uint8_t*)d->base.data + (i / BLOCK_CAP) * BLOCK_BYTES + (i % BLOCK_CAP);
}
static dense_item* item_at(const map_dense* d, uint64_t i) {
  return (dense_item*)((uint8_t*)d->base.data + (i / BLOCK_CAP) * BLOCK_BYTES + BLOCK_CAP +
                       (i % BLOCK_CAP) * sizeof(dense_item));
}
static int is_head(const map_dense* d, uint64_t i) { return (*meta_at(d, i) & 0x80u) == 0; }
static int is_empty_slot(const map_dense* d, uint64_t i) { return *meta_at(d, i) == META_EMPTY; }
static void set_jump(const map_dense* d, uint64_t i, uint8_t jump) {
  uint8_t* m = meta_at(d, i);
  *m = (uint8_t)((*m & 0x80u) | jump);
}
/* Next index in the chain through `meta`'s jump, or INVALID at the end. */
static uint64_t chain_next(const map_dense* d, uint64_t i, uint8_t meta) {
  uint64_t off = kProbe[meta & 0x7Fu];
  if (off == 0) return INVALID_INDEX;
  return (i + off) % d->base.slots;
}
static uint64_t fib_index(const map_dense* d, uint64_t h) {
  return (11400714819323198485ull * h) >> d->fib_shift;
}

static void dense_release_items(map_dense* d) {
  if (d->base.data == NULL) return;
  uint64_t n = d->base.slots;
  for (uint64_t i = 0; i < n; ++i) {
    uint8_t m = *meta_at(d, i);
    if (m != META_EMPTY && m != META_PROTECTED) {
      dense_item* it = item_at(d, i);
      rt_any_release(&it->kv.key);
      rt_any_release(&it->kv.value);
      *meta_at(d, i) = META_EMPTY;
    }
  }
}

static void map_deleter(void* self, int flags) {
  map_base* m = (map_base*)self;
  if (flags & kTVMFFIObjectDeleterFlagBitMaskStrong) {
    if (is_small(m)) {
      map_kv* kv = small_kvs(m);
      for (uint64_t i = 0; kv != NULL && i < m->size; ++i) {
        rt_any_release(&kv[i].key);
        rt_any_release(&kv[i].value);
      }
    } else {
      dense_release_items((map_dense*)m);
    }
    m->size = 0;
    if (m->data != NULL && m->data_deleter != NULL) m->data_deleter(m->data);
    m->data = NULL;
    m->data_deleter = NULL;
  }
  if (flags & kTVMFFIObjectDeleterFlagBitMaskWeak) rt_object_free(self);
}

static map_base* small_new(uint64_t n) {
  if (n < SMALL_INIT) n = SMALL_INIT;
  map_base* m = (map_base*)rt_object_alloc(sizeof(map_base) + n * sizeof(map_kv), kTVMFFIMap,
                                           map_deleter);
  if (m == NULL) return NULL;
  m->data = (char*)m + sizeof(map_base);
  m->size = 0;
  m->slots = n | SMALL_TAG;
  m->data_deleter = NULL;
  return m;
}

static map_dense* dense_new_typed(uint32_t fib_shift, uint64_t n_slots, int32_t type_index);
static map_dense* dense_new(uint32_t fib_shift, uint64_t n_slots) {
  return dense_new_typed(fib_shift, n_slots, kTVMFFIMap);
}

static map_dense* dense_new_typed(uint32_t fib_shift, uint64_t n_slots, int32_t type_index) {
  uint64_t blocks = (n_slots + BLOCK_CAP - 1) / BLOCK_CAP;
  if (blocks > SIZE_MAX / BLOCK_BYTES) {
    rt_raise("MemoryError", "Map too large");
    return NULL;
  }
  map_dense* d = (map_dense*)rt_object_alloc(sizeof(map_dense), type_index, map_deleter);
  if (d == NULL) return NULL;
  uint8_t* data = (uint8_t*)malloc((size_t)(blocks * BLOCK_BYTES));
  if (data == NULL) {
    rt_decref(d);
    rt_raise("MemoryError", "out of memory growing a Map");
    return NULL;
  }
  for (uint64_t b = 0; b < blocks; ++b) memset(data + b * BLOCK_BYTES, META_EMPTY, BLOCK_CAP);
  d->base.data = data;
  d->base.data_deleter = free;
  d->base.slots = n_slots;
  d->base.size = 0;
  d->fib_shift = fib_shift;
  d->head = INVALID_INDEX;
  d->tail = INVALID_INDEX;
  return d;
}

/* Table size for `cap` items: the smallest power of two above cap, doubled
 * when that leaves less than 2x headroom. */
static void table_size(uint64_t cap, uint32_t* fib_shift, uint64_t* n_slots) {
  uint32_t shift = 64;
  uint64_t slots = 1;
  for (uint64_t c = cap; c; c >>= 1) {
    shift -= 1;
    slots <<= 1;
  }
  if (slots < cap * 2) {
    *fib_shift = shift - 1;
    *n_slots = slots << 1;
  } else {
    *fib_shift = shift;
    *n_slots = slots;
  }
}

/* ------------------------------------------------------------------ */
/* dense insertion                                                    */
/* ------------------------------------------------------------------ */

static void list_unlink(map_dense* d, uint64_t i) {
  dense_item* it = item_at(d, i);
  if (it->prev == INVALID_INDEX) d->head = it->next;
  else item_at(d, it->prev)->next = it->next;
  if (it->next == INVALID_INDEX) d->tail = it->prev;
  else item_at(d, it->next)->prev = it->prev;
}

static void list_push_back(map_dense* d, uint64_t i) {
  dense_item* it = item_at(d, i);
  it->prev = d->tail;
  it->next = INVALID_INDEX;
  if (d->tail != INVALID_INDEX) item_at(d, d->tail)->next = i;
  if (d->head == INVALID_INDEX) d->head = i;
  d->tail = i;
}

/* Slot `dst` takes over `src`'s place in the iteration list. */
static void list_replace(map_dense* d, uint64_t src, uint64_t dst) {
  dense_item* s = item_at(d, src);
  dense_item* t = item_at(d, dst);
  t->prev = s->prev;
  t->next = s->next;
  if (t->prev == INVALID_INDEX) d->head = dst;
  else item_at(d, t->prev)->next = dst;
  if (t->next == INVALID_INDEX) d->tail = dst;
  else item_at(d, t->next)->prev = dst;
}

static void new_slot(map_dense* d, uint64_t i, int head, const map_kv* kv) {
  *meta_at(d, i) = head ? 0x00u : 0x80u;
  dense_item* it = item_at(d, i);
  it->kv = *kv;
  it->prev = INVALID_INDEX;
  it->next = INVALID_INDEX;
}

static int dense_full(const map_dense* d) {
  return (double)(d->base.size + 1) > (double)d->base.slots * MAX_LOAD;
}

/* First empty slot reachable from `i` by one jump code. */
static int next_empty(const map_dense* d, uint64_t i, uint8_t* jump, uint64_t* out) {
  for (uint8_t k = 1; k < NUM_JUMPS; ++k) {
    uint64_t c = (i + kProbe[k]) % d->base.slots;
    if (is_empty_slot(d, c)) {
      *jump = k;
      *out = c;
      return 1;
    }
  }
  return 0;
}

/* The chain element before `target` (which is not a chain head). */
static uint64_t find_prev(const map_dense* d, uint64_t target) {
  uint64_t h = 0;
  (void)rt_any_hash(&item_at(d, target)->kv.key, &h); /* hashed fine when inserted */
  uint64_t prev = fib_index(d, h);
  uint64_t next = chain_next(d, prev, *meta_at(d, prev));
  for (uint64_t guard = 0; next != target && next != INVALID_INDEX && guard < d->base.slots; ++guard) {
    prev = next;
    next = chain_next(d, next, *meta_at(d, next));
  }
  return prev;
}

/* Moves the chain that runs through `target` elsewhere so `target` can head
 * a new chain holding `key`. */
static int spare_list_head(map_dense* d, uint64_t target, const TVMFFIAny* key, uint64_t* result) {
  uint64_t r = target;
  uint64_t w = find_prev(d, target);
  int first = 1;
  for (;;) {
    uint8_t jump;
    uint64_t empty;
    if (!next_empty(d, w, &jump, &empty)) return 0;
    map_kv moved = item_at(d, r)->kv;
    new_slot(d, empty, 0, &moved);
    list_replace(d, r, empty);
    uint8_t r_meta = *meta_at(d, r);
    *meta_at(d, r) = first ? META_PROTECTED : META_EMPTY;
    first = 0;
    set_jump(d, w, jump);
    w = empty;
    r = chain_next(d, r, r_meta);
    if (r == INVALID_INDEX) break;
  }
  map_kv kv;
  kv.key = *key;
  rt_any_set_none(&kv.value);
  new_slot(d, target, 1, &kv);
  d->base.size += 1;
  *result = target;
  return 1;
}

/* Finds or makes the slot for `key` (owned: consumed when a new slot is
 * made, else left to the caller). 1 = slot in *result (unlinked from the
 * order list, value to be set), 0 = needs a bigger table. */
static int dense_try_insert(map_dense* d, TVMFFIAny* key, uint64_t h, int* consumed,
                            uint64_t* result, int* err) {
  *consumed = 0;
  if (d->base.slots == 0) return 0;
  uint64_t i = fib_index(d, h);
  if (is_empty_slot(d, i)) {
    map_kv kv;
    kv.key = *key;
    rt_any_set_none(&kv.value);
    new_slot(d, i, 1, &kv);
    d->base.size += 1;
    *consumed = 1;
    *result = i;
    return 1;
  }
  if (!is_head(d, i)) {
    if (dense_full(d)) return 0;
    if (!spare_list_head(d, i, key, result)) return 0;
    *consumed = 1;
    return 1;
  }
  uint64_t last = i;
  for (uint64_t n = i; n != INVALID_INDEX; n = chain_next(d, n, *meta_at(d, n))) {
    int eq = 0;
    if (rt_any_equal(key, &item_at(d, n)->kv.key, &eq) != 0) {
      *err = 1;
      return 0;
    }
    if (eq) {
      list_unlink(d, n);
      *result = n;
      return 1;
    }
    last = n;
  }
  if (dense_full(d)) return 0;
  uint8_t jump;
  uint64_t empty;
  if (!next_empty(d, last, &jump, &empty)) return 0;
  map_kv kv;
  kv.key = *key;
  rt_any_set_none(&kv.value);
  new_slot(d, empty, 0, &kv);
  set_jump(d, last, jump);
  d->base.size += 1;
  *consumed = 1;
  *result = empty;
  return 1;
}

/* Inserts an owned (key, value) pair; both are consumed. *dp may be
 * replaced by a bigger table (the old object is released). */
static int dense_insert(map_dense** dp, map_kv* kv) {
  uint64_t h;
  if (rt_any_hash(&kv->key, &h) != 0) goto fail;
  for (;;) {
    map_dense* d = *dp;
    int consumed = 0, err = 0;
    uint64_t slot;
    if (dense_try_insert(d, &kv->key, h, &consumed, &slot, &err)) {
      if (!consumed) rt_any_release(&kv->key); /* existing key object stays */
      dense_item* it = item_at(d, slot);
      rt_any_release(&it->kv.value);
      it->kv.value = kv->value;
      rt_any_set_none(&kv->value);
      list_push_back(d, slot);
      return 0;
    }
    if (err) goto fail;
    /* Grow: a table twice as large, re-inserting in iteration order. */
    map_dense* g = dense_new(d->fib_shift - 1, d->base.slots * 2);
    if (g == NULL) goto fail;
    for (uint64_t idx = d->head; idx != INVALID_INDEX;) {
      dense_item* it = item_at(d, idx);
      uint64_t next = it->next;
      map_kv moved = it->kv;
      *meta_at(d, idx) = META_EMPTY; /* ownership moves to g */
      d->base.size -= 1;
      if (dense_insert(&g, &moved) != 0) {
        rt_decref(g);
        goto fail;
      }
      idx = next;
    }
    d->head = d->tail = INVALID_INDEX;
    rt_decref(d);
    *dp = g;
  }
fail:
  rt_any_release(&kv->key);
  rt_any_release(&kv->value);
  return -1;
}

/* A dense map holding copies of the pairs of small map `s`. */
static map_dense* dense_from_small(map_base* s) {
  uint32_t shift;
  uint64_t slots;
  table_size(s->size, &shift, &slots);
  map_dense* d = dense_new(shift, slots);
  if (d == NULL) return NULL;
  map_kv* kv = small_kvs(s);
  for (uint64_t i = 0; i < s->size; ++i) {
    map_kv c = kv[i];
    rt_any_retain(&c.key);
    rt_any_retain(&c.value);
    if (dense_insert(&d, &c) != 0) {
      rt_decref(d);
      return NULL;
    }
  }
  return d;
}

/* ------------------------------------------------------------------ */
/* public (internal) API                                              */
/* ------------------------------------------------------------------ */

void* rt_map_new(void) { return small_new(SMALL_INIT); }

int64_t rt_map_size(void* map) { return (int64_t)((map_base*)map)->size; }

static int small_find(map_base* m, const TVMFFIAny* key, uint64_t* idx) {
  map_kv* kv = small_kvs(m);
  for (uint64_t i = 0; i < m->size; ++i) {
    int eq = 0;
    if (rt_any_equal(&kv[i].key, key, &eq) != 0) return -1;
    if (eq) {
      *idx = i;
      return 1;
    }
  }
  return 0;
}

/* Inserts an owned pair (consumed) following the official growth steps. */
static int map_insert(map_base** mp, map_kv* kv) {
  map_base* m = *mp;
  if (!is_small(m)) return dense_insert((map_dense**)mp, kv);
  uint64_t cap = small_slots(m);
  if (cap < SMALL_MAX || m->size < cap) {
    uint64_t idx;
    int f = small_find(m, &kv->key, &idx);
    if (f < 0) goto fail;
    if (f) { /* replace the value, keep the key and position */
      rt_any_release(&kv->key);
      rt_any_release(&small_kvs(m)[idx].value);
      small_kvs(m)[idx].value = kv->value;
      return 0;
    }
    if (m->size < cap) {
      small_kvs(m)[m->size++] = *kv;
      return 0;
    }
    uint64_t next = cap * 2 > SMALL_INIT ? cap * 2 : SMALL_INIT;
    if (next > SMALL_MAX) next = SMALL_MAX;
    map_base* g = small_new(next);
    if (g == NULL) goto fail;
    memcpy(small_kvs(g), small_kvs(m), m->size * sizeof(map_kv));
    g->size = m->size;
    m->size = 0; /* moved */
    small_kvs(g)[g->size++] = *kv;
    rt_decref(m);
    *mp = g;
    return 0;
  }
  /* a full small map of the largest size turns dense */
  map_dense* d = dense_from_small(m);
  if (d == NULL) goto fail;
  if (dense_insert(&d, kv) != 0) {
    rt_decref(d);
    return -1;
  }
  rt_decref(m);
  *mp = (map_base*)d;
  return 0;
fail:
  rt_any_release(&kv->key);
  rt_any_release(&kv->value);
  return -1;
}

int rt_map_set(void** map, const TVMFFIAny* key, const TVMFFIAny* value) {
  map_kv kv;
  if (TVMFFIAnyViewToOwnedAny(key, &kv.key) != 0) return -1;
  if (TVMFFIAnyViewToOwnedAny(value, &kv.value) != 0) {
    rt_any_release(&kv.key);
    return -1;
  }
  return map_insert((map_base**)map, &kv);
}

int rt_map_find(void* map, const TVMFFIAny* key, const TVMFFIAny** out_value) {
  map_base* m = (map_base*)map;
  *out_value = NULL;
  if (m->size == 0) return 0;
  TVMFFIAny k;
  /* views (raw C strings, byte-array pointers) compare as the String they
   * become */
  if (TVMFFIAnyViewToOwnedAny(key, &k) != 0) return -1;
  int rc = 0;
  if (is_small(m)) {
    uint64_t idx;
    int f = small_find(m, &k, &idx);
    if (f < 0) rc = -1;
    else if (f) *out_value = &small_kvs(m)[idx].value;
  } else {
    map_dense* d = (map_dense*)m;
    uint64_t h;
    if (rt_any_hash(&k, &h) != 0) {
      rc = -1;
    } else {
      uint64_t i = fib_index(d, h);
      if (is_head(d, i)) {
        for (uint64_t n = i; n != INVALID_INDEX; n = chain_next(d, n, *meta_at(d, n))) {
          int eq = 0;
          if (rt_any_equal(&k, &item_at(d, n)->kv.key, &eq) != 0) {
            rc = -1;
            break;
          }
          if (eq) {
            *out_value = &item_at(d, n)->kv.value;
            break;
          }
        }
      }
    }
  }
  rt_any_release(&k);
  return rc;
}

uint64_t rt_map_iter_begin(void* map) {
  map_base* m = (map_base*)map;
  return is_small(m) ? 0 : ((map_dense*)m)->head;
}
uint64_t rt_map_iter_end(void* map) {
  map_base* m = (map_base*)map;
  return is_small(m) ? m->size : INVALID_INDEX;
}
uint64_t rt_map_iter_next(void* map, uint64_t it) {
  map_base* m = (map_base*)map;
  if (is_small(m)) return it + 1 < m->size ? it + 1 : m->size;
  if (it == INVALID_INDEX) return it;
  return item_at((map_dense*)m, it)->next;
}
void rt_map_iter_kv(void* map, uint64_t it, const TVMFFIAny** key, const TVMFFIAny** value) {
  map_base* m = (map_base*)map;
  const map_kv* kv = is_small(m) ? &small_kvs(m)[it] : &item_at((map_dense*)m, it)->kv;
  *key = &kv->key;
  *value = &kv->value;
}

/* ------------------------------------------------------------------ */
/* Dict storage: always dense, switched in place when it grows          */
/* ------------------------------------------------------------------ */

/* Moves the storage of dense map `from` into `to` (whose own storage,
 * already emptied of items, is freed); `from` is left empty. */
static void dense_switch(map_dense* to, map_dense* from) {
  if (to->base.data != NULL && to->base.data_deleter != NULL) to->base.data_deleter(to->base.data);
  to->base.data = from->base.data;
  to->base.data_deleter = from->base.data_deleter;
  to->base.size = from->base.size;
  to->base.slots = from->base.slots;
  to->fib_shift = from->fib_shift;
  to->head = from->head;
  to->tail = from->tail;
  from->base.data = NULL;
  from->base.data_deleter = NULL;
  from->base.size = 0;
  from->head = from->tail = INVALID_INDEX;
}

static int small_find(map_base* m, const TVMFFIAny* key, uint64_t* idx);
static int map_insert(map_base** mp, map_kv* kv);

/* A Dict object has room for both layouts: it starts small with the
 * largest small capacity and turns dense in place at the next insert. */
#define DICT_BYTES                                                                  \
  (sizeof(map_base) + SMALL_MAX * sizeof(map_kv) > sizeof(map_dense)                \
       ? sizeof(map_base) + SMALL_MAX * sizeof(map_kv)                              \
       : sizeof(map_dense))

void* rt_dict_new(void) {
  map_base* m = (map_base*)rt_object_alloc(DICT_BYTES, kTVMFFIDict, map_deleter);
  if (m == NULL) return NULL;
  m->data = (char*)m + sizeof(map_base);
  m->size = 0;
  m->slots = SMALL_MAX | SMALL_TAG;
  m->data_deleter = NULL;
  return m;
}

static void small_release_items(map_base* m) {
  map_kv* kv = small_kvs(m);
  for (uint64_t i = 0; i < m->size; ++i) {
    rt_any_release(&kv[i].key);
    rt_any_release(&kv[i].value);
  }
  m->size = 0;
}

int rt_dict_set(void* dict, const TVMFFIAny* key, const TVMFFIAny* value) {
  map_kv kv;
  if (TVMFFIAnyViewToOwnedAny(key, &kv.key) != 0) return -1;
  if (TVMFFIAnyViewToOwnedAny(value, &kv.value) != 0) {
    rt_any_release(&kv.key);
    return -1;
  }
  map_base* d = (map_base*)dict;
  map_base* p = d;
  rt_incref(d); /* an insert that changes the layout releases the old map */
  int rc = map_insert(&p, &kv);
  if (p == d) {
    rt_decref(d);
  } else {
    /* p is a dense copy holding everything: move its storage in */
    if (is_small(d)) small_release_items(d);
    else dense_release_items((map_dense*)d);
    dense_switch((map_dense*)d, (map_dense*)p);
    rt_decref(p);
  }
  return rc;
}

/* Rebuilds `d` without `skip` (NULL: without anything), order kept. */
static int dict_rebuild(map_dense* d, const TVMFFIAny* skip, int* erased) {
  map_dense* n = dense_new(d->fib_shift, d->base.slots);
  if (n == NULL) return -1;
  *erased = 0;
  for (uint64_t idx = d->head; skip != NULL && idx != INVALID_INDEX;) {
    dense_item* it = item_at(d, idx);
    int eq = 0;
    if (!*erased && rt_any_equal(&it->kv.key, skip, &eq) != 0) {
      rt_decref(n);
      return -1;
    }
    if (eq) {
      *erased = 1;
    } else {
      map_kv kv = it->kv;
      rt_any_retain(&kv.key);
      rt_any_retain(&kv.value);
      if (dense_insert(&n, &kv) != 0) {
        rt_decref(n);
        return -1;
      }
    }
    idx = it->next;
  }
  if (skip != NULL && !*erased) {
    rt_decref(n);
    return 0;
  }
  dense_release_items(d);
  d->base.size = 0;
  dense_switch(d, n);
  rt_decref(n);
  return 0;
}

int rt_dict_erase(void* dict, const TVMFFIAny* key, int* erased) {
  TVMFFIAny k;
  if (TVMFFIAnyViewToOwnedAny(key, &k) != 0) return -1;
  map_base* m = (map_base*)dict;
  int rc = 0;
  *erased = 0;
  if (is_small(m)) {
    uint64_t idx;
    int f = small_find(m, &k, &idx);
    if (f < 0) {
      rc = -1;
    } else if (f) {
      map_kv* kv = small_kvs(m);
      rt_any_release(&kv[idx].key);
      rt_any_release(&kv[idx].value);
      memmove(kv + idx, kv + idx + 1, (m->size - idx - 1) * sizeof(map_kv));
      m->size -= 1;
      *erased = 1;
    }
  } else {
    rc = dict_rebuild((map_dense*)dict, &k, erased);
  }
  rt_any_release(&k);
  return rc;
}

int rt_dict_clear(void* dict) {
  map_base* m = (map_base*)dict;
  if (is_small(m)) {
    small_release_items(m);
    return 0;
  }
  int erased;
  return dict_rebuild((map_dense*)dict, NULL, &erased);
}

/* ------------------------------------------------------------------ */
/* global functions                                                   */
/* ------------------------------------------------------------------ */

static int g_map(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  if (nargs % 2 != 0) {
    return rt_raise("InternalError", "ffi.Map takes key, value pairs but got %d arguments", (int)nargs);
  }
  void* m = rt_map_new();
  if (m == NULL) return -1;
  for (int32_t i = 0; i < nargs; i += 2) {
    if (rt_map_set(&m, &args[i], &args[i + 1]) != 0) {
      rt_decref(m);
      return -1;
    }
  }
  rt_any_set_obj(ret, m);
  return 0;
}

static int g_map_size(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.MapSize(0: ffi.Map) -> int";
  void* m = NULL;
  if (rt_b_check_nargs(sig, nargs, 1) || rt_b_arg_obj(args, 0, sig, kTVMFFIMap, "ffi.Map", &m)) return -1;
  rt_any_set_int(ret, rt_map_size(m));
  return 0;
}

static int g_map_get_item(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.MapGetItem(0: ffi.Map, 1: Any) -> Any";
  void* m = NULL;
  if (rt_b_check_nargs(sig, nargs, 2) || rt_b_arg_obj(args, 0, sig, kTVMFFIMap, "ffi.Map", &m)) return -1;
  const TVMFFIAny* v;
  if (rt_map_find(m, &args[1], &v) != 0) return -1;
  if (v == NULL) return rt_raise("KeyError", "key is not in Map");
  *ret = *v;
  rt_any_retain(ret);
  return 0;
}

static int g_map_count(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.MapCount(0: ffi.Map, 1: Any) -> int";
  void* m = NULL;
  if (rt_b_check_nargs(sig, nargs, 2) || rt_b_arg_obj(args, 0, sig, kTVMFFIMap, "ffi.Map", &m)) return -1;
  const TVMFFIAny* v;
  if (rt_map_find(m, &args[1], &v) != 0) return -1;
  rt_any_set_int(ret, v != NULL);
  return 0;
}

/* State of a forward iterator Function: the map (a reference) and where we
 * are. Command 0 reads the key, 1 the value, 2 advances and says whether an
 * item remains. */
typedef struct {
  void* map;
  uint64_t it;
} map_iter_state;

static void map_iter_free(void* self) {
  map_iter_state* s = (map_iter_state*)self;
  rt_decref(s->map);
  free(s);
}

static int map_iter_call(void* self, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  static const char sig[] = "MapForwardIterFunctor(0: int) -> Any";
  map_iter_state* s = (map_iter_state*)self;
  int64_t cmd = 0;
  if (rt_b_check_nargs(sig, nargs, 1) || rt_b_arg_int(args, 0, sig, &cmd)) return -1;
  uint64_t end = rt_map_iter_end(s->map);
  if (cmd == 0 || cmd == 1) {
    if (s->it == end) return rt_raise("IndexError", "map iterator is past the end");
    const TVMFFIAny *k, *v;
    rt_map_iter_kv(s->map, s->it, &k, &v);
    *ret = cmd == 0 ? *k : *v;
    rt_any_retain(ret);
    return 0;
  }
  if (s->it != end) s->it = rt_map_iter_next(s->map, s->it);
  rt_any_set_bool(ret, s->it != end);
  return 0;
}

int rt_map_iter_functor(void* m, TVMFFIAny* ret) {
  map_iter_state* s = (map_iter_state*)malloc(sizeof(*s));
  if (s == NULL) return rt_raise("MemoryError", "out of memory");
  s->map = m;
  s->it = rt_map_iter_begin(m);
  rt_incref(m);
  TVMFFIObjectHandle f;
  if (TVMFFIFunctionCreate(s, map_iter_call, map_iter_free, &f) != 0) {
    map_iter_free(s);
    return -1;
  }
  rt_any_set_obj(ret, f);
  return 0;
}

static int g_map_iter(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.MapForwardIterFunctor(0: ffi.Map) -> ffi.Function";
  void* m = NULL;
  if (rt_b_check_nargs(sig, nargs, 1) || rt_b_arg_obj(args, 0, sig, kTVMFFIMap, "ffi.Map", &m)) return -1;
  return rt_map_iter_functor(m, ret);
}

static int g_map_get_or_missing(void* h, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  (void)h;
  static const char sig[] = "ffi.MapGetItemOrMissing(0: ffi.Map, 1: Any) -> Any";
  void* m = NULL;
  if (rt_b_check_nargs(sig, nargs, 2) || rt_b_arg_obj(args, 0, sig, kTVMFFIMap, "ffi.Map", &m)) return -1;
  const TVMFFIAny* v;
  if (rt_map_find(m, &args[1], &v) != 0) return -1;
  if (v == NULL) return rt_missing_object(ret);
  *ret = *v;
  rt_any_retain(ret);
  return 0;
}

RT_INIT(map_init) {
  rt_register_global("ffi.MapGetItemOrMissing", g_map_get_or_missing);
  rt_register_global("ffi.Map", g_map);
  rt_register_global("ffi.MapSize", g_map_size);
  rt_register_global("ffi.MapGetItem", g_map_get_item);
  rt_register_global("ffi.MapCount", g_map_count);
  rt_register_global("ffi.MapForwardIterFunctor", g_map_iter);
}
