/* Reading the JSON object graph (ffi.FromJSONGraph): nodes are decoded
 * on demand from the root, each once (shared references stay shared), with
 * the checks and messages of the official runtime. Depth is bounded and a
 * node that refers back to itself is refused (the official runtime
 * recurses until the stack overflows there). */
#include <string.h>

#include "10_extra/json_graph.h"

typedef struct {
  const TVMFFIAny* nodes; /* the Array's items (the Array is kept alive by the caller) */
  int64_t n;
  TVMFFIAny* done; /* decoded values */
  unsigned char* state; /* 0 new, 1 being decoded, 2 decoded */
  int depth;
} reader;

static int decode(reader* r, int64_t index, TVMFFIAny* out);

static int get_int(const TVMFFIAny* v, int64_t* out) {
  if (v->type_index != kTVMFFIInt && v->type_index != kTVMFFIBool) return rt_xb_cast_fail(v, "int");
  *out = v->v_int64;
  return 0;
}

static int get_str(const TVMFFIAny* v, TVMFFIByteArray* out) {
  if (v->type_index != kTVMFFISmallStr && v->type_index != kTVMFFIStr) return rt_xb_cast_fail(v, "str");
  rt_any_get_bytes(v, 0, out);
  return 0;
}

/* Borrowed value of `key` in a Map; KeyError when absent. */
static int map_get(void* map, const char* key, const TVMFFIAny** out) {
  TVMFFIAny k;
  if (rt_string_to_any(key, strlen(key), &k) != 0) return -1;
  int rc = rt_map_find(map, &k, out);
  rt_any_release(&k);
  if (rc != 0) return -1;
  if (*out == NULL) return rt_raise("KeyError", "key is not in Map");
  return 0;
}

/* An Array of ints (bools too) as the official cast to Array<int>. */
static int int_array(const TVMFFIAny* v, const TVMFFIAny** items, int64_t* n) {
  if (v->type_index != kTVMFFIArray) return rt_xb_cast_fail(v, "Array<int>");
  *items = rt_seq_items(v->v_obj, n);
  for (int64_t i = 0; i < *n; ++i) {
    int32_t t = (*items)[i].type_index;
    if (t != kTVMFFIInt && t != kTVMFFIBool) {
      size_t kn;
      const char* k = rt_type_key(t, &kn);
      return rt_raise("TypeError", "Cannot convert from type `Array[index %lld: %.*s]` to `Array<int>`",
                      (long long)i, (int)kn, k);
    }
  }
  return 0;
}

static int base64_decode(TVMFFIByteArray s, TVMFFIAny* out) {
  if (s.size == 0) return rt_bytes_to_any("", 0, out);
  if (s.size % 4 != 0)
    return rt_raise("InternalError", "Check failed: (bytes.size %% 4 == 0) is false: invalid base64 encoding");
  char* buf = (char*)malloc(s.size / 4 * 3);
  if (buf == NULL) return rt_raise("MemoryError", "out of memory decoding base64");
  size_t n = 0;
  for (size_t i = 0; i < s.size; i += 4) {
    uint32_t x = 0;
    for (int j = 0; j < 4; ++j) {
      unsigned char c = (unsigned char)s.data[i + (size_t)j];
      uint32_t d = c >= 'A' && c <= 'Z'   ? (uint32_t)(c - 'A')
                   : c >= 'a' && c <= 'z' ? (uint32_t)(c - 'a' + 26)
                   : c >= '0' && c <= '9' ? (uint32_t)(c - '0' + 52)
                   : c == '+'             ? 62u
                   : c == '/'             ? 63u
                                          : 0u; /* '=' and anything else: 0 */
      x = (x << 6) | d;
    }
    buf[n++] = (char)((x >> 16) & 0xFF);
    if (s.data[i + 2] != '=') buf[n++] = (char)((x >> 8) & 0xFF);
    if (s.data[i + 3] != '=') buf[n++] = (char)(x & 0xFF);
  }
  int rc = rt_bytes_to_any(buf, n, out);
  free(buf);
  return rc;
}

static int decode_seq(reader* r, const TVMFFIAny* data, int list, TVMFFIAny* out) {
  if (data->type_index != kTVMFFIArray) return rt_xb_cast_fail(data, "Array<Any>");
  int64_t n;
  const TVMFFIAny* items = rt_seq_items(data->v_obj, &n);
  void* seq = list ? rt_list_new(n) : (void*)rt_array_new(n);
  if (seq == NULL) return -1;
  for (int64_t i = 0; i < n; ++i) {
    int64_t idx = 0;
    TVMFFIAny v;
    if (get_int(&items[i], &idx) != 0 || decode(r, idx, &v) != 0) {
      rt_decref(seq);
      return -1;
    }
    if (list) {
      int rc = rt_list_append(seq, &v);
      rt_any_release(&v);
      if (rc != 0) {
        rt_decref(seq);
        return -1;
      }
    } else {
      rt_array_push_move((rt_array*)seq, &v);
    }
  }
  rt_any_set_obj(out, seq);
  return 0;
}

static int decode_map(reader* r, const TVMFFIAny* data, int dict, TVMFFIAny* out) {
  if (data->type_index != kTVMFFIArray) return rt_xb_cast_fail(data, "Array<Any>");
  int64_t n;
  const TVMFFIAny* items = rt_seq_items(data->v_obj, &n);
  if (n % 2 != 0)
    return rt_raise("ValueError",
                    "Invalid JSON Object Graph: Map/Dict data must contain an even number of "
                    "[key, value] entries, got %lld",
                    (long long)n);
  void* m = dict ? rt_dict_new() : rt_map_new();
  if (m == NULL) return -1;
  for (int64_t i = 0; i < n; i += 2) {
    int64_t ki = 0, vi = 0;
    TVMFFIAny k, v;
    if (get_int(&items[i], &ki) != 0 || get_int(&items[i + 1], &vi) != 0) goto fail;
    /* the value first: the official reader decodes the pair as the two
     * arguments of one call, which its compiler evaluates right to left */
    if (decode(r, vi, &v) != 0) goto fail;
    if (decode(r, ki, &k) != 0) {
      rt_any_release(&v);
      goto fail;
    }
    int rc = dict ? rt_dict_set(m, &k, &v) : rt_map_set(&m, &k, &v);
    rt_any_release(&k);
    rt_any_release(&v);
    if (rc != 0) goto fail;
  }
  rt_any_set_obj(out, m);
  return 0;
fail:
  rt_decref(m);
  return -1;
}

/* The singleton of an enum type for an int or str index. */
static int enum_lookup(int32_t ti, const TVMFFIAny* key, TVMFFIAny* out) {
  const TVMFFIAny* state = rt_xb_column_value("__ffi_enum__", ti);
  if (state != NULL && state->type_index >= kTVMFFIStaticObjectBegin) {
    /* EnumStateObj: entries, indexes (Dict), attrs */
    void* indexes = *(void**)((char*)state->v_obj + sizeof(TVMFFIObject) + 8);
    const TVMFFIAny* hit = NULL;
    if (indexes != NULL && rt_map_find(indexes, key, &hit) != 0) return -1;
    if (hit != NULL) {
      *out = *hit;
      rt_any_retain(out);
      return 0;
    }
  }
  TVMFFIByteArray k = rt_xb_key(ti);
  if (key->type_index == kTVMFFIInt)
    return rt_raise("ValueError", "Enum `%.*s` has no instance with index %lld", (int)k.size,
                    k.data, (long long)key->v_int64);
  TVMFFIByteArray s;
  rt_any_get_bytes(key, 0, &s);
  return rt_raise("ValueError", "Enum `%.*s` has no instance with index %.*s", (int)k.size, k.data,
                  (int)s.size, s.data);
}

typedef struct {
  reader* r;
  void* obj;
  void* fields; /* the data Map */
  int32_t type_index;
} decode_ctx;

static int field_from_json(const TVMFFIFieldInfo* f, void* ctx_) {
  decode_ctx* c = (decode_ctx*)ctx_;
  TVMFFIAny k;
  const TVMFFIAny* raw = NULL;
  if (rt_string_to_any(f->name.data, f->name.size, &k) != 0) return -1;
  int rc = rt_map_find(c->fields, &k, &raw);
  rt_any_release(&k);
  if (rc != 0) return -1;
  if (raw == NULL) {
    if (f->flags & kTVMFFIFieldFlagBitMaskHasDefault) return rt_xb_set_default(f, c->obj);
    TVMFFIByteArray key = rt_xb_key(c->type_index);
    return rt_raise("TypeError", "Required field `%.*s` not set in type `%.*s`", (int)f->name.size,
                    f->name.data, (int)key.size, key.data);
  }
  TVMFFIAny v;
  rt_any_set_none(&v);
  switch (f->field_static_type_index) {
    case kTVMFFINone:
      break;
    case kTVMFFIBool:
      if (raw->type_index != kTVMFFIBool && raw->type_index != kTVMFFIInt) return rt_xb_cast_fail(raw, "bool");
      rt_any_set_bool(&v, raw->v_int64 != 0);
      break;
    case kTVMFFIInt:
      if (get_int(raw, &v.v_int64) != 0) return -1;
      v.type_index = kTVMFFIInt;
      break;
    case kTVMFFIFloat:
      if (raw->type_index == kTVMFFIFloat) v = *raw;
      else if (raw->type_index == kTVMFFIInt || raw->type_index == kTVMFFIBool) {
        v.type_index = kTVMFFIFloat;
        v.v_float64 = (double)raw->v_int64;
      } else {
        return rt_xb_cast_fail(raw, "float");
      }
      break;
    case kTVMFFIDataType: {
      TVMFFIByteArray s;
      if (get_str(raw, &s) != 0) return -1;
      v.type_index = kTVMFFIDataType;
      if (TVMFFIDataTypeFromString(&s, &v.v_dtype) != 0) return -1;
      break;
    }
    default: {
      int64_t idx = 0;
      if (get_int(raw, &idx) != 0 || decode(c->r, idx, &v) != 0) return -1;
    }
  }
  rc = rt_xb_set_field(f, c->obj, &v);
  rt_any_release(&v);
  return rc;
}

static int decode_object(reader* r, int32_t ti, const TVMFFIAny* data, TVMFFIAny* out) {
  int32_t int_enum = rt_graph_index_of("ffi.IntEnum"), any_enum = rt_graph_index_of("ffi.Enum");
  if (int_enum >= 0 && rt_type_is_instance(ti, int_enum)) {
    TVMFFIAny key;
    if (get_int(data, &key.v_int64) != 0) return -1;
    key.type_index = kTVMFFIInt;
    key.zero_padding = 0;
    return enum_lookup(ti, &key, out);
  }
  if (any_enum >= 0 && rt_type_is_instance(ti, any_enum)) {
    TVMFFIByteArray s;
    if (get_str(data, &s) != 0) return -1;
    return enum_lookup(ti, data, out);
  }
  const TVMFFIAny* hook = rt_xb_column_value("__data_from_json__", ti);
  if (hook != NULL && hook->type_index == kTVMFFIFunction) return rt_xb_call(hook->v_obj, data, 1, out);
  const TVMFFITypeInfo* info = TVMFFIGetTypeInfo(ti);
  if (info == NULL) return rt_raise("RuntimeError", "unknown type index %d", (int)ti);
  void* obj = NULL;
  if (rt_xb_create_empty(info, &obj) != 0) return -1;
  if (data->type_index != kTVMFFIMap) {
    rt_decref(obj);
    return rt_xb_cast_fail(data, "Map<Any, Any>");
  }
  decode_ctx c = {r, obj, data->v_obj, ti};
  if (rt_xb_each_field(info, field_from_json, &c) != 0) {
    rt_decref(obj);
    return -1;
  }
  rt_any_set_obj(out, obj);
  return 0;
}

static int decode_node(reader* r, const TVMFFIAny* node, TVMFFIAny* out) {
  const TVMFFIAny *type, *data = NULL;
  TVMFFIByteArray key;
  if (node->type_index != kTVMFFIMap) return rt_xb_cast_fail(node, "Map<Any, Any>");
  if (map_get(node->v_obj, "type", &type) != 0 || get_str(type, &key) != 0) return -1;
  int32_t ti = -1;
  if (rt_xb_type_index(&key, &ti) != 0) return -1;
  if (ti == kTVMFFINone) return 0;
  if (map_get(node->v_obj, "data", &data) != 0) return -1;
  switch (ti) {
    case kTVMFFIBool:
      if (data->type_index != kTVMFFIBool && data->type_index != kTVMFFIInt) return rt_xb_cast_fail(data, "bool");
      rt_any_set_bool(out, data->v_int64 != 0);
      return 0;
    case kTVMFFIInt:
      if (get_int(data, &out->v_int64) != 0) return -1;
      out->type_index = kTVMFFIInt;
      return 0;
    case kTVMFFIFloat:
      if (data->type_index == kTVMFFIFloat) {
        *out = *data;
      } else if (data->type_index == kTVMFFIInt || data->type_index == kTVMFFIBool) {
        out->type_index = kTVMFFIFloat;
        out->v_float64 = (double)data->v_int64;
      } else {
        return rt_xb_cast_fail(data, "float");
      }
      return 0;
    case kTVMFFIDataType: {
      TVMFFIByteArray s;
      if (get_str(data, &s) != 0) return -1;
      out->type_index = kTVMFFIDataType;
      return TVMFFIDataTypeFromString(&s, &out->v_dtype);
    }
    case kTVMFFIDevice: {
      const TVMFFIAny* items;
      int64_t n;
      if (int_array(data, &items, &n) != 0) return -1;
      if (n != 2)
        return rt_raise("ValueError",
                        "Invalid JSON Object Graph: Device data must be an array of "
                        "[device_type, device_id], got %lld element(s)",
                        (long long)n);
      out->type_index = kTVMFFIDevice;
      out->v_device.device_type = (DLDeviceType)(int32_t)items[0].v_int64;
      out->v_device.device_id = (int32_t)items[1].v_int64;
      return 0;
    }
    case kTVMFFIStr: {
      TVMFFIByteArray s;
      if (get_str(data, &s) != 0) return -1;
      *out = *data;
      rt_any_retain(out);
      return 0;
    }
    case kTVMFFIBytes: {
      TVMFFIByteArray s;
      if (get_str(data, &s) != 0) return -1;
      return base64_decode(s, out);
    }
    case kTVMFFIMap:
    case kTVMFFIDict:
      return decode_map(r, data, ti == kTVMFFIDict, out);
    case kTVMFFIArray:
    case kTVMFFIList:
      return decode_seq(r, data, ti == kTVMFFIList, out);
    case kTVMFFIShape: {
      const TVMFFIAny* items;
      int64_t n;
      if (int_array(data, &items, &n) != 0) return -1;
      void* f = rt_get_global("ffi.Shape");
      if (f == NULL) return rt_raise("RuntimeError", "ffi.Shape is not registered");
      int rc = rt_xb_call(f, items, (int32_t)n, out);
      rt_decref(f);
      return rc;
    }
    default:
      return decode_object(r, ti, data, out);
  }
}

static int decode(reader* r, int64_t index, TVMFFIAny* out) {
  rt_any_set_none(out);
  if (index < 0 || index >= r->n)
    return rt_raise("ValueError", "Invalid JSON Object Graph: invalid node index %lld",
                    (long long)index);
  if (r->state[index] == 2) {
    *out = r->done[index];
    rt_any_retain(out);
    return 0;
  }
  if (r->state[index] == 1)
    return rt_raise("ValueError", "Invalid JSON Object Graph: node %lld refers to itself",
                    (long long)index);
  if (r->depth >= RT_GRAPH_DEPTH || rt_xb_stack_low())
    return rt_raise("ValueError", "Invalid JSON Object Graph: nodes nest too deeply (%d levels)",
                    r->depth);
  r->state[index] = 1;
  ++r->depth;
  TVMFFIAny v;
  rt_any_set_none(&v);
  int rc = decode_node(r, &r->nodes[index], &v);
  --r->depth;
  if (rc != 0) {
    r->state[index] = 0;
    rt_any_release(&v);
    return -1;
  }
  r->done[index] = v;
  r->state[index] = 2;
  *out = v;
  rt_any_retain(out);
  return 0;
}

int rt_json_graph_read(const TVMFFIAny* graph, TVMFFIAny* out) {
  const TVMFFIAny *root = NULL, *nodes = NULL;
  if (graph->type_index != kTVMFFIMap)
    return rt_raise("ValueError", "Invalid JSON Object Graph, expected an object");
  TVMFFIAny k;
  if (rt_string_to_any("root_index", 10, &k) != 0) return -1;
  int rc = rt_map_find(graph->v_obj, &k, &root);
  rt_any_release(&k);
  if (rc != 0) return -1;
  if (root == NULL || root->type_index != kTVMFFIInt)
    return rt_raise("ValueError", "Invalid JSON Object Graph, expected `root_index` integer field");
  if (rt_string_to_any("nodes", 5, &k) != 0) return -1;
  rc = rt_map_find(graph->v_obj, &k, &nodes);
  rt_any_release(&k);
  if (rc != 0) return -1;
  if (nodes == NULL || nodes->type_index != kTVMFFIArray)
    return rt_raise("ValueError", "Invalid JSON Object Graph, expected `nodes` array field");
  reader r;
  memset(&r, 0, sizeof(r));
  r.nodes = rt_seq_items(nodes->v_obj, &r.n);
  size_t n = r.n > 0 ? (size_t)r.n : 1;
  r.done = (TVMFFIAny*)calloc(n, sizeof(TVMFFIAny));
  r.state = (unsigned char*)calloc(n, 1);
  if (r.done == NULL || r.state == NULL) {
    free(r.done);
    free(r.state);
    return rt_raise("MemoryError", "out of memory reading a JSON graph");
  }
  rt_incref(nodes->v_obj); /* a field setter may drop the last other reference */
  void* keep = nodes->v_obj;
  rc = decode(&r, root->v_int64, out);
  for (int64_t i = 0; i < r.n; ++i) rt_any_release(&r.done[i]);
  free(r.done);
  free(r.state);
  rt_decref(keep);
  return rc;
}

