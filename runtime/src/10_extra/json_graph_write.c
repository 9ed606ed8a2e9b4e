/* Writing the JSON object graph (ffi.ToJSONGraph): every distinct value
 * (equal by AnyHash/AnyEqual: strings and numbers by content, objects by
 * identity) becomes one node {"type": key, "data": ...} the first time it
 * is met, children first; containers and object fields refer to other
 * nodes by index. Field values of static type None/bool/int/float/DataType
 * sit inline in the object's data. Node order, key order and texts are
 * those of the official runtime. Depth is bounded by the
 * thread's stack (and RT_GRAPH_DEPTH), which also stops reference cycles
 * through object fields; a List or Dict that
 * contains itself is refused as the official runtime refuses it. */
#include <string.h>

#include "10_extra/json_graph.h"
static int set_key(void** map, const char* key, TVMFFIAny* value_owned) {
  TVMFFIAny k;
  int rc = rt_string_to_any(key, strlen(key), &k);
  if (rc == 0) rc = rt_map_set(map, &k, value_owned);
  rt_any_release(&k);
  rt_any_release(value_owned);
  return rc;
}

static int set_type_key(void** map, int32_t type_index) {
  size_t n;
  const char* key = rt_type_key(type_index, &n);
  TVMFFIAny v;
  if (rt_string_to_any(key, n, &v) != 0) return -1;
  return set_key(map, "type", &v);
}

/* A growable vector of owned Anys. */
typedef struct {
  TVMFFIAny* items;
  size_t n, cap;
} anyvec;

static int anyvec_push(anyvec* v, TVMFFIAny* owned) {
  if (v->n == v->cap) {
    size_t nc = v->cap ? v->cap * 2 : 16;
    TVMFFIAny* ni = (TVMFFIAny*)realloc(v->items, nc * sizeof(TVMFFIAny));
    if (ni == NULL) {
      rt_any_release(owned);
      return rt_raise("MemoryError", "out of memory building a JSON graph");
    }
    v->items = ni;
    v->cap = nc;
  }
  v->items[v->n++] = *owned;
  rt_any_set_none(owned);
  return 0;
}

static void anyvec_free(anyvec* v) {
  for (size_t i = 0; i < v->n; ++i) rt_any_release(&v->items[i]);
  free(v->items);
  v->items = NULL;
  v->n = v->cap = 0;
}

/* Moves the vector's content into a new Array. */
static int anyvec_to_array(anyvec* v, TVMFFIAny* out) {
  int rc = rt_array_from_anys(v->items, (int64_t)v->n, out);
  anyvec_free(v);
  return rc;
}

/* ------------------------------------------------------------------ */
/* writing                                                            */
/* ------------------------------------------------------------------ */

typedef struct {
  void* memo;   /* Map: value -> node index */
  anyvec nodes; /* the node Maps, in index order */
  void** open;  /* Lists and Dicts being written (cycle check) */
  size_t n_open, cap_open;
  int depth;
} writer;

static int node_index(writer* w, const TVMFFIAny* value, int64_t* out);

static int open_push(writer* w, void* obj, const char* what) {
  for (size_t i = 0; i < w->n_open; ++i)
    if (w->open[i] == obj)
      return rt_raise("ValueError", "Cycle detected during serialization: a %s contains itself",
                      what);
  if (w->n_open == w->cap_open) {
    size_t nc = w->cap_open ? w->cap_open * 2 : 8;
    void** no = (void**)realloc(w->open, nc * sizeof(void*));
    if (no == NULL) return rt_raise("MemoryError", "out of memory building a JSON graph");
    w->open = no;
    w->cap_open = nc;
  }
  w->open[w->n_open++] = obj;
  return 0;
}

static int seq_data(writer* w, void* seq, TVMFFIAny* out) {
  int64_t n;
  const TVMFFIAny* items = rt_seq_items(seq, &n);
  anyvec v = {NULL, 0, 0};
  for (int64_t i = 0; i < n; ++i) {
    int64_t idx = 0;
    TVMFFIAny iv;
    /* read the cell again: a hook met below may have resized a List */
    items = rt_seq_items(seq, &n);
    if (i >= n) break;
    TVMFFIAny item = items[i];
    rt_any_retain(&item);
    int rc = node_index(w, &item, &idx);
    rt_any_release(&item);
    if (rc != 0) {
      anyvec_free(&v);
      return -1;
    }
    rt_any_set_int(&iv, idx);
    if (anyvec_push(&v, &iv) != 0) {
      anyvec_free(&v);
      return -1;
    }
  }
  return anyvec_to_array(&v, out);
}

static int map_data(writer* w, void* map, TVMFFIAny* out) {
  anyvec v = {NULL, 0, 0};
  for (uint64_t it = rt_map_iter_begin(map); it != rt_map_iter_end(map);
       it = rt_map_iter_next(map, it)) {
    const TVMFFIAny *kp, *vp;
    rt_map_iter_kv(map, it, &kp, &vp);
    /* own copies: a hook below may change the map */
    TVMFFIAny k = *kp, val = *vp;
    rt_any_retain(&k);
    rt_any_retain(&val);
    int64_t ki = 0, vi = 0;
    TVMFFIAny a;
    int rc = node_index(w, &k, &ki);
    if (rc == 0) {
      rt_any_set_int(&a, ki);
      rc = anyvec_push(&v, &a);
    }
    if (rc == 0) rc = node_index(w, &val, &vi);
    if (rc == 0) {
      rt_any_set_int(&a, vi);
      rc = anyvec_push(&v, &a);
    }
    rt_any_release(&k);
    rt_any_release(&val);
    if (rc != 0) goto fail;
  }
  return anyvec_to_array(&v, out);
fail:
  anyvec_free(&v);
  return -1;
}

typedef struct {
  writer* w;
  void* obj;
  void* data; /* Map: field name -> inline value or node index */
} field_ctx;

static int field_to_json(const TVMFFIFieldInfo* f, void* ctx_) {
  field_ctx* c = (field_ctx*)ctx_;
  TVMFFIAny v, k, put;
  rt_any_set_none(&v);
  if (f->getter == NULL)
    return rt_raise("RuntimeError", "field `%.*s` has no getter", (int)f->name.size, f->name.data);
  if (f->getter((char*)c->obj + f->offset, &v) != 0) return -1;
  rt_any_set_none(&put);
  int rc = 0;
  switch (f->field_static_type_index) {
    case kTVMFFINone:
      break;
    case kTVMFFIBool:
      rt_any_set_bool(&put, v.v_int64 != 0);
      break;
    case kTVMFFIInt:
      rt_any_set_int(&put, v.v_int64);
      break;
    case kTVMFFIFloat:
      put.type_index = kTVMFFIFloat;
      put.v_float64 = v.type_index == kTVMFFIFloat ? v.v_float64 : (double)v.v_int64;
      break;
    case kTVMFFIDataType:
      rc = TVMFFIDataTypeToString(&v.v_dtype, &put);
      break;
    default: {
      int64_t idx = 0;
      rc = node_index(c->w, &v, &idx);
      if (rc == 0) rt_any_set_int(&put, idx);
    }
  }
  rt_any_release(&v);
  if (rc == 0) rc = rt_string_to_any(f->name.data, f->name.size, &k);
  if (rc != 0) {
    rt_any_release(&put);
    return -1;
  }
  rc = rt_map_set(&c->data, &k, &put);
  rt_any_release(&k);
  rt_any_release(&put);
  return rc;
}


static int object_data(writer* w, const TVMFFIAny* value, TVMFFIAny* out) {
  int32_t ti = value->type_index;
  char* obj = (char*)value->v_obj;
  int32_t int_enum = rt_graph_index_of("ffi.IntEnum"), any_enum = rt_graph_index_of("ffi.Enum");
  /* EnumObj: _int_index (int64) then _str_index (a String cell) */
  if (int_enum >= 0 && rt_type_is_instance(ti, int_enum)) {
    rt_any_set_int(out, *(int64_t*)(obj + sizeof(TVMFFIObject)));
    return 0;
  }
  if (any_enum >= 0 && rt_type_is_instance(ti, any_enum)) {
    *out = *(TVMFFIAny*)(obj + sizeof(TVMFFIObject) + 8);
    rt_any_retain(out);
    return 0;
  }
  const TVMFFIAny* hook = rt_xb_column_value("__data_to_json__", ti);
  if (hook != NULL && hook->type_index == kTVMFFIFunction) return rt_xb_call(hook->v_obj, value, 1, out);
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
  if (info == NULL) return rt_raise("RuntimeError", "unknown type index %d", (int)ti);
  if (!rt_xb_has_creator(info))
    return rt_raise("TypeError",
                    "Type `%.*s` does not support ToJSONGraph (no native creator or __ffi_new__ "
                    "type attr)",
                    (int)info->type_key.size, info->type_key.data);
  field_ctx c = {w, obj, rt_map_new()};
  if (c.data == NULL) return -1;
  if (rt_xb_each_field(info, field_to_json, &c) != 0) {
    rt_decref(c.data);
    return -1;
  }
  rt_any_set_obj(out, c.data);
  return 0;
}

/* The node data of `value` (already known not to be memoized) into *data;
 * *has_data = 0 for None. */
static int node_data(writer* w, const TVMFFIAny* value, TVMFFIAny* data) {
  int32_t ti = value->type_index;
  switch (ti) {
    case kTVMFFINone:
      return 0;
    case kTVMFFIBool:
    case kTVMFFIInt:
    case kTVMFFIFloat:
      *data = *value;
      return 0;
    case kTVMFFIDataType:
      return TVMFFIDataTypeToString(&value->v_dtype, data);
    case kTVMFFIDevice: {
      TVMFFIAny pair[2];
      rt_any_set_int(&pair[0], (int64_t)(int32_t)value->v_device.device_type);
      rt_any_set_int(&pair[1], (int64_t)value->v_device.device_id);
      return rt_array_from_anys(pair, 2, data);
    }
    case kTVMFFISmallStr:
    case kTVMFFIStr:
      *data = *value;
      rt_any_retain(data);
      return 0;
    case kTVMFFISmallBytes:
    case kTVMFFIBytes: {
      TVMFFIByteArray b;
      if (!rt_any_get_bytes(value, 1, &b)) return rt_raise("TypeError", "malformed Bytes value");
      static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
      rt_sbuf sb;
      rt_sb_init(&sb);
      const unsigned char* p = (const unsigned char*)b.data;
      size_t i = 0;
      char q[4];
      for (; i + 3 <= b.size; i += 3) {
        uint32_t x = ((uint32_t)p[i] << 16) | ((uint32_t)p[i + 1] << 8) | p[i + 2];
        q[0] = tbl[x >> 18];
        q[1] = tbl[(x >> 12) & 63];
        q[2] = tbl[(x >> 6) & 63];
        q[3] = tbl[x & 63];
        rt_sb_append(&sb, q, 4);
      }
      if (b.size - i == 1) {
        q[0] = tbl[p[i] >> 2];
        q[1] = tbl[(p[i] << 4) & 63];
        q[2] = q[3] = '=';
        rt_sb_append(&sb, q, 4);
      } else if (b.size - i == 2) {
        q[0] = tbl[p[i] >> 2];
        q[1] = tbl[((p[i] << 4) | (p[i + 1] >> 4)) & 63];
        q[2] = tbl[(p[i + 1] << 2) & 63];
        q[3] = '=';
        rt_sb_append(&sb, q, 4);
      }
      return rt_sb_to_string_any(&sb, data);
    }
    case kTVMFFIArray:
      return seq_data(w, value->v_obj, data);
    case kTVMFFIList:
    case kTVMFFIDict: {
      int list = ti == kTVMFFIList;
      if (open_push(w, value->v_obj, list ? "List" : "Dict") != 0) return -1;
      int rc = list ? seq_data(w, value->v_obj, data) : map_data(w, value->v_obj, data);
      --w->n_open;
      return rc;
    }
    case kTVMFFIMap:
      return map_data(w, value->v_obj, data);
    case kTVMFFIShape: {
      const TVMFFIShapeCell* s = (const TVMFFIShapeCell*)rt_cell(value->v_obj);
      anyvec v = {NULL, 0, 0};
      for (size_t i = 0; i < s->size; ++i) {
        TVMFFIAny d;
        rt_any_set_int(&d, s->data[i]);
        if (anyvec_push(&v, &d) != 0) {
          anyvec_free(&v);
          return -1;
        }
      }
      return anyvec_to_array(&v, data);
    }
    default:
      if (ti >= kTVMFFIStaticObjectBegin) return object_data(w, value, data);
      {
        size_t n;
        const char* key = rt_type_key(ti, &n);
        return rt_raise("RuntimeError", "Cannot serialize type `%.*s`", (int)n, key);
      }
  }
}

static int node_index(writer* w, const TVMFFIAny* value, int64_t* out) {
  const TVMFFIAny* hit = NULL;
  if (rt_map_find(w->memo, value, &hit) != 0) return -1;
  if (hit != NULL) {
    *out = hit->v_int64;
    return 0;
  }
  if (w->depth >= RT_GRAPH_DEPTH || rt_xb_stack_low())
    return rt_raise("ValueError",
                    "ToJSONGraph: the value nests too deeply (%d levels; or its object fields "
                    "form a reference cycle)",
                    w->depth);
  int32_t ti = value->type_index;
  int32_t key_index = ti == kTVMFFISmallStr ? kTVMFFIStr : ti == kTVMFFISmallBytes ? kTVMFFIBytes : ti;
  TVMFFIAny data;
  rt_any_set_none(&data);
  ++w->depth;
  int rc = node_data(w, value, &data);
  --w->depth;
  if (rc != 0) return -1;
  void* node = rt_map_new();
  if (node == NULL) {
    rt_any_release(&data);
    return -1;
  }
  TVMFFIAny nv, iv;
  if (ti < kTVMFFIStaticObjectBegin) {
    rc = set_type_key(&node, key_index);
  } else {
    size_t n;
    const char* key = rt_type_key(ti, &n);
    TVMFFIAny kv;
    rc = rt_string_to_any(key, n, &kv);
    if (rc == 0) rc = set_key(&node, "type", &kv);
  }
  if (rc == 0 && ti != kTVMFFINone) rc = set_key(&node, "data", &data);
  rt_any_release(&data);
  if (rc != 0) {
    rt_decref(node);
    return -1;
  }
  int64_t idx = (int64_t)w->nodes.n;
  rt_any_set_obj(&nv, node);
  if (anyvec_push(&w->nodes, &nv) != 0) return -1;
  rt_any_set_int(&iv, idx);
  if (rt_map_set(&w->memo, value, &iv) != 0) return -1;
  *out = idx;
  return 0;
}

int rt_json_graph_write(const TVMFFIAny* value, const TVMFFIAny* metadata, TVMFFIAny* out) {
  writer w;
  memset(&w, 0, sizeof(w));
  w.memo = rt_map_new();
  void* result = rt_map_new();
  int64_t root = 0;
  int rc = (w.memo && result) ? node_index(&w, value, &root) : -1;
  TVMFFIAny v;
  if (rc == 0) {
    rt_any_set_int(&v, root);
    rc = set_key(&result, "root_index", &v);
  }
  if (rc == 0) rc = anyvec_to_array(&w.nodes, &v);
  if (rc == 0) rc = set_key(&result, "nodes", &v);
  if (rc == 0 && metadata->type_index != kTVMFFINone) {
    v = *metadata;
    rt_any_retain(&v);
    rc = set_key(&result, "metadata", &v);
  }
  anyvec_free(&w.nodes);
  free(w.open);
  rt_decref(w.memo);
  if (rc != 0) {
    rt_decref(result);
    return -1;
  }
  rt_any_set_obj(out, result);
  return 0;
}

