/* Builds Array, Shape and Map values through the runtime's global functions
 * (ffi.Array, ffi.Shape, ffi.Map, ...) and prints their raw memory layout:
 * cells, small/dense map slots and where each key sits in a dense table.
 * Uses only the C API, so the same program run on our runtime and on the
 * official one must print the same lines. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tvm/ffi/c_api.h>

#define HDR sizeof(TVMFFIObject)

static TVMFFIAny none_any(void) {
  TVMFFIAny a;
  a.type_index = kTVMFFINone;
  a.zero_padding = 0;
  a.v_int64 = 0;
  return a;
}
static TVMFFIAny int_any(int64_t v) {
  TVMFFIAny a = none_any();
  a.type_index = kTVMFFIInt;
  a.v_int64 = v;
  return a;
}
static TVMFFIAny str_any(const char* s) {
  TVMFFIAny a = none_any();
  a.type_index = kTVMFFIRawStr;
  a.v_c_str = s;
  return a;
}
static void release(TVMFFIAny* a) {
  if (a->type_index >= kTVMFFIStaticObjectBegin && a->v_obj) TVMFFIObjectDecRef(a->v_obj);
  *a = none_any();
}

static void print_error(void) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) {
    printf("ERR <none>\n");
    return;
  }
  TVMFFIErrorCell* c = (TVMFFIErrorCell*)((char*)err + HDR);
  printf("ERR %.*s: %.*s\n", (int)c->kind.size, c->kind.data, (int)c->message.size,
         c->message.data);
  TVMFFIObjectDecRef(err);
}

/* Calls global `name`; prints the error and returns -1 on failure. */
static int call(const char* name, TVMFFIAny* args, int n, TVMFFIAny* out) {
  TVMFFIByteArray nm = {name, strlen(name)};
  TVMFFIObjectHandle f = NULL;
  if (TVMFFIFunctionGetGlobal(&nm, &f) != 0 || f == NULL) {
    printf("no global %s\n", name);
    exit(3);
  }
  *out = none_any();
  int rc = TVMFFIFunctionCall(f, args, n, out);
  TVMFFIObjectDecRef(f);
  if (rc != 0) {
    print_error();
    return -1;
  }
  return 0;
}

static void print_value(const TVMFFIAny* a) {
  switch (a->type_index) {
    case kTVMFFINone: printf("None"); break;
    case kTVMFFIInt: printf("%lld", (long long)a->v_int64); break;
    case kTVMFFIBool: printf("%s", a->v_int64 ? "True" : "False"); break;
    case kTVMFFIFloat: printf("%g", a->v_float64); break;
    case kTVMFFISmallStr: printf("'%.*s'", (int)a->small_str_len, a->v_bytes); break;
    case kTVMFFIStr: {
      TVMFFIByteArray* b = (TVMFFIByteArray*)((char*)a->v_obj + HDR);
      printf("'%.*s'", (int)b->size, b->data);
      break;
    }
    default: printf("<type %d>", (int)a->type_index);
  }
}

/* MapBaseObj fields after the header: data, size, slots, data_deleter. */
typedef struct {
  TVMFFIObject header;
  void* data;
  uint64_t size;
  uint64_t slots;
  void (*data_deleter)(void*);
} map_view;
typedef struct {
  map_view base;
  uint32_t fib_shift;
  uint64_t head, tail;
} dense_view;

static void dump_map(const char* label, void* obj) {
  map_view* m = (map_view*)obj;
  int small = (m->slots >> 63) != 0;
  uint64_t slots = m->slots & ~((uint64_t)1 << 63);
  printf("%s: size=%llu small=%d slots=%llu", label, (unsigned long long)m->size, small,
         (unsigned long long)slots);
  if (small) {
    printf(" inline=%d order=[", m->data == (char*)obj + sizeof(map_view));
    TVMFFIAny* kv = (TVMFFIAny*)m->data;
    for (uint64_t i = 0; i < m->size; ++i) {
      if (i) printf(", ");
      print_value(&kv[2 * i]);
      printf(":");
      print_value(&kv[2 * i + 1]);
    }
    printf("]\n");
    return;
  }
  dense_view* d = (dense_view*)obj;
  printf(" fib_shift=%u head=%llu tail=%llu\n", d->fib_shift, (unsigned long long)d->head,
         (unsigned long long)d->tail);
  /* every occupied slot: index, metadata byte, key, value, prev, next */
  for (uint64_t i = 0; i < slots; ++i) {
    unsigned char* block = (unsigned char*)m->data + (i / 16) * (16 + 16 * 48);
    unsigned char meta = block[i % 16];
    if (meta == 0xFF) continue;
    TVMFFIAny* item = (TVMFFIAny*)(block + 16 + (i % 16) * 48);
    uint64_t* links = (uint64_t*)(item + 2);
    printf("  slot %llu meta=%02x ", (unsigned long long)i, meta);
    print_value(&item[0]);
    printf(":");
    print_value(&item[1]);
    printf(" prev=%lld next=%lld\n", (long long)links[0], (long long)links[1]);
  }
}

/* Iterates through ffi.MapForwardIterFunctor and prints key:value pairs. */
static void iterate(void* map, int64_t size) {
  TVMFFIAny arg, it;
  arg.type_index = map ? ((TVMFFIObject*)map)->type_index : 0;
  arg.zero_padding = 0;
  arg.v_obj = (TVMFFIObject*)map;
  if (call("ffi.MapForwardIterFunctor", &arg, 1, &it) != 0) return;
  printf("  iter:");
  for (int64_t i = 0; i < size; ++i) {
    TVMFFIAny c0 = int_any(0), c1 = int_any(1), c2 = int_any(2), k, v, more;
    TVMFFIFunctionCall(it.v_obj, &c0, 1, &k);
    TVMFFIFunctionCall(it.v_obj, &c1, 1, &v);
    printf(" ");
    print_value(&k);
    printf(":");
    print_value(&v);
    release(&k);
    release(&v);
    more = none_any();
    TVMFFIFunctionCall(it.v_obj, &c2, 1, &more);
    if (!more.v_int64 && i + 1 != size) printf(" <ended early>");
  }
  printf("\n");
  release(&it);
}

static TVMFFIAny obj_any(void* obj) {
  TVMFFIAny a = none_any();
  a.type_index = ((TVMFFIObject*)obj)->type_index;
  a.v_obj = (TVMFFIObject*)obj;
  return a;
}

static void map_case(const char* label, TVMFFIAny* kv, int n, const char* probe_key) {
  TVMFFIAny m;
  if (call("ffi.Map", kv, n, &m) != 0) return;
  dump_map(label, m.v_obj);
  TVMFFIAny sz;
  TVMFFIAny a1 = obj_any(m.v_obj);
  call("ffi.MapSize", &a1, 1, &sz);
  printf("  MapSize=%lld\n", (long long)sz.v_int64);
  iterate(m.v_obj, sz.v_int64);
  /* every key can be found again, through a raw-string view when it is one */
  for (int i = 0; i < n; i += 2) {
    TVMFFIAny args[2] = {obj_any(m.v_obj), kv[i]}, v;
    if (call("ffi.MapGetItem", args, 2, &v) != 0) continue;
    release(&v);
  }
  TVMFFIAny args[2] = {obj_any(m.v_obj), str_any(probe_key)}, c;
  if (call("ffi.MapCount", args, 2, &c) == 0) printf("  MapCount(%s)=%lld\n", probe_key, (long long)c.v_int64);
  TVMFFIAny v;
  printf("  MapGetItem(%s): ", probe_key);
  if (call("ffi.MapGetItem", args, 2, &v) == 0) {
    print_value(&v);
    printf("\n");
    release(&v);
  }
  release(&m);
}

int main(void) {
  /* ---- Array ---- */
  TVMFFIAny items[3] = {int_any(1), str_any("a string longer than 7"), str_any("short")};
  TVMFFIAny arr;
  if (call("ffi.Array", items, 3, &arr) == 0) {
    TVMFFISeqCell* cell = (TVMFFISeqCell*)((char*)arr.v_obj + HDR);
    printf("array: type=%d size=%lld capacity=%lld inline=%d deleter_null=%d\n", (int)arr.type_index,
           (long long)cell->size, (long long)cell->capacity,
           cell->data == (char*)arr.v_obj + HDR + sizeof(TVMFFISeqCell), cell->data_deleter == NULL);
    TVMFFIAny* el = (TVMFFIAny*)cell->data;
    printf("  items:");
    for (int i = 0; i < cell->size; ++i) {
      printf(" %d/", (int)el[i].type_index);
      print_value(&el[i]);
    }
    printf("\n");
    TVMFFIAny a2[2] = {arr, int_any(1)}, r;
    if (call("ffi.ArrayGetItem", a2, 2, &r) == 0) {
      printf("  ArrayGetItem(1)=");
      print_value(&r);
      printf("\n");
      release(&r);
    }
    a2[1] = int_any(3);
    printf("  ArrayGetItem(3): ");
    call("ffi.ArrayGetItem", a2, 2, &r);
    a2[1] = int_any(-1);
    printf("  ArrayGetItem(-1): ");
    call("ffi.ArrayGetItem", a2, 2, &r);
    if (call("ffi.ArraySize", &arr, 1, &r) == 0) printf("  ArraySize=%lld\n", (long long)r.v_int64);
    TVMFFIAny bad = int_any(7);
    printf("  ArraySize(7): ");
    call("ffi.ArraySize", &bad, 1, &r);
    release(&arr);
  }
  TVMFFIAny empty;
  if (call("ffi.Array", NULL, 0, &empty) == 0) {
    TVMFFISeqCell* cell = (TVMFFISeqCell*)((char*)empty.v_obj + HDR);
    printf("empty array: size=%lld capacity=%lld\n", (long long)cell->size, (long long)cell->capacity);
    release(&empty);
  }

  /* ---- Shape ---- */
  TVMFFIAny dims[4] = {int_any(2), int_any(3), int_any(-4), none_any()};
  dims[3].type_index = kTVMFFIBool;
  dims[3].v_int64 = 1;
  TVMFFIAny shp;
  if (call("ffi.Shape", dims, 4, &shp) == 0) {
    TVMFFIShapeCell* c = (TVMFFIShapeCell*)((char*)shp.v_obj + HDR);
    printf("shape: type=%d size=%zu inline=%d dims=[%lld, %lld, %lld, %lld]\n", (int)shp.type_index,
           c->size, c->data == (const int64_t*)((char*)shp.v_obj + HDR + sizeof(TVMFFIShapeCell)),
           (long long)c->data[0], (long long)c->data[1], (long long)c->data[2],
           (long long)c->data[3]);
    release(&shp);
  }
  TVMFFIAny fdim = none_any();
  fdim.type_index = kTVMFFIFloat;
  fdim.v_float64 = 2.5;
  printf("shape(2.5): ");
  call("ffi.Shape", &fdim, 1, &shp);

  /* ---- Map: from small to dense, string and int keys ---- */
  static char names[64][32];
  TVMFFIAny kv[128];
  for (int n = 0; n <= 40; ++n) {
    for (int i = 0; i < n; ++i) {
      /* short keys stay inline (SmallStr); every third key is a long one */
      if (i % 3 == 2) snprintf(names[i], sizeof(names[i]), "a-longer-key-%d", i);
      else snprintf(names[i], sizeof(names[i]), "k%d", i);
      kv[2 * i] = str_any(names[i]);
      kv[2 * i + 1] = int_any(i * 10);
    }
    char label[32];
    snprintf(label, sizeof(label), "map%d", n);
    map_case(label, kv, 2 * n, "k1");
  }
  for (int n = 1; n <= 20; n += 19) {
    for (int i = 0; i < n; ++i) {
      kv[2 * i] = int_any(i * 7919 - 3);
      kv[2 * i + 1] = str_any("v");
    }
    char label[32];
    snprintf(label, sizeof(label), "intmap%d", n);
    map_case(label, kv, 2 * n, "zz");
  }
  /* updating a key: in place in a small map; in a full small map it turns
   * dense and the key moves to the end of the order */
  TVMFFIAny upd[10] = {str_any("a"), int_any(1), str_any("b"), int_any(2), str_any("a"), int_any(3)};
  map_case("update-small", upd, 6, "a");
  TVMFFIAny upd4[10] = {str_any("a"), int_any(1), str_any("b"), int_any(2), str_any("c"),
                        int_any(3), str_any("d"), int_any(4), str_any("a"), int_any(5)};
  map_case("update-full", upd4, 10, "a");
  printf("odd map: ");
  TVMFFIAny odd;
  call("ffi.Map", upd, 1, &odd);
  return 0;
}
