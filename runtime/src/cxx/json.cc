// tvm::ffi::json::Parse and Stringify: JSON text <-> None, bool, int,
// float, String, Array and Map values. The behaviour (accepted input,
// error messages with line/column/char positions, number and string
// formatting, indentation) follows what the official runtime does, observed
// from the outside; the code is ours.
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "ffi_abi.h"

extern "C" {
#include "../container_internal.h"
}

namespace tvm {
namespace ffi {
namespace json {

TVMFFI_CXX_API Any Parse(const String& json_str, String* error_msg);
TVMFFI_CXX_API String Stringify(const Any& value, const Optional<int>& indent);

// Releases up to 0.1.12 passed `indent` by value as Optional<int> holding a
// std::optional<int> (value at offset 0, engaged flag at offset 4). The class
// has user-provided copy constructors, so the argument arrives as a pointer
// to a temporary (which the caller destroys). Libraries built then (tilelang
// 0.1.x) import this name; the bytes behind the parameter are read in that
// old layout, never through our Optional.
TVMFFI_CXX_API String Stringify(const Any& value, Optional<int> indent);

namespace {

struct ParseError {
  const char* what;
  size_t pos;
};

// Arrays/objects nested deeper than this are refused instead of exhausting
// the stack (the reference runtime crashes on ~100000 levels).
constexpr int kMaxDepth = 2048;

class Parser {
 public:
  Parser(const char* s, size_t n) : s_(s), n_(n) {}

  TVMFFIAny Document() {
    size_t i = SkipWs(0);
    TVMFFIAny v = Value(&i);
    i = SkipWs(i);
    if (i != n_) {
      rt::release(&v);
      throw ParseError{"Extra data", i};
    }
    return v;
  }

 private:
  size_t SkipWs(size_t i) const {
    while (i < n_ && (s_[i] == ' ' || s_[i] == '\t' || s_[i] == '\n' || s_[i] == '\r')) ++i;
    return i;
  }
  bool Match(size_t i, const char* word) const {
    size_t k = std::strlen(word);
    return i + k <= n_ && std::memcmp(s_ + i, word, k) == 0;
  }

  TVMFFIAny Value(size_t* pi) {
    size_t i = *pi;
    TVMFFIAny v;
    rt::any_none(&v);
    if (i >= n_) throw ParseError{"Expecting value", i};
    char c = s_[i];
    if ((c == '{' || c == '[') && depth_ >= kMaxDepth) {
      throw ParseError{"Maximum nesting depth exceeded", i};
    }
    if (c == '{') return Nested(&Parser::Object, pi);
    if (c == '[') return Nested(&Parser::ArrayValue, pi);
    if (c == '"') {
      std::string str = StringBody(pi);
      return StringValue(str);
    }
    if (Match(i, "null")) {
      *pi = i + 4;
      return v;
    }
    if (Match(i, "true") || Match(i, "false")) {
      bool t = c == 't';
      *pi = i + (t ? 4 : 5);
      v.type_index = kTVMFFIBool;
      v.v_int64 = t ? 1 : 0;
      return v;
    }
    if (Match(i, "NaN")) return Float(pi, i + 3, std::nan(""));
    if (Match(i, "Infinity")) return Float(pi, i + 8, HUGE_VAL);
    if (Match(i, "-Infinity")) return Float(pi, i + 9, -HUGE_VAL);
    return Number(pi);
  }

  TVMFFIAny Nested(TVMFFIAny (Parser::*fn)(size_t*), size_t* pi) {
    ++depth_;
    try {
      TVMFFIAny v = (this->*fn)(pi);
      --depth_;
      return v;
    } catch (...) {
      --depth_;
      throw;
    }
  }

  static TVMFFIAny Float(size_t* pi, size_t end, double d) {
    TVMFFIAny v;
    rt::any_none(&v);
    v.type_index = kTVMFFIFloat;
    v.v_float64 = d;
    *pi = end;
    return v;
  }

  TVMFFIAny Number(size_t* pi) {
    size_t start = *pi, i = start;
    if (i < n_ && s_[i] == '-') ++i;
    size_t digits = i;
    while (i < n_ && s_[i] >= '0' && s_[i] <= '9') ++i;
    if (i == digits) throw ParseError{"Expecting value", start};
    bool is_float = false;
    if (i < n_ && s_[i] == '.') {
      is_float = true;
      ++i;
      while (i < n_ && s_[i] >= '0' && s_[i] <= '9') ++i;
    }
    if (i < n_ && (s_[i] == 'e' || s_[i] == 'E')) {
      is_float = true;
      ++i;
      if (i < n_ && (s_[i] == '+' || s_[i] == '-')) ++i;
      size_t exp = i;
      while (i < n_ && s_[i] >= '0' && s_[i] <= '9') ++i;
      if (i == exp) throw ParseError{"Expecting value", start};
    }
    std::string text(s_ + start, i - start);
    *pi = i;
    TVMFFIAny v;
    rt::any_none(&v);
    if (!is_float) {
      errno = 0;
      char* end = nullptr;
      long long x = std::strtoll(text.c_str(), &end, 10);
      if (errno == 0 && end == text.c_str() + text.size()) {
        v.type_index = kTVMFFIInt;
        v.v_int64 = x;
        return v;
      }
    }
    v.type_index = kTVMFFIFloat;
    v.v_float64 = std::strtod(text.c_str(), nullptr);
    return v;
  }

  int Hex4(size_t i) const {
    if (i + 4 > n_) return -1;
    int r = 0;
    for (size_t k = i; k < i + 4; ++k) {
      char c = s_[k];
      int d = c >= '0' && c <= '9'   ? c - '0'
              : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                     : -1;
      if (d < 0) return -1;
      r = r * 16 + d;
    }
    return r;
  }

  static void Utf8(std::string* out, uint32_t cp) {
    if (cp < 0x80) {
      out->push_back(static_cast<char>(cp));
    } else if (cp < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (cp >> 6)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else if (cp < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (cp >> 12)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (cp >> 18)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (cp & 0x3F)));
    }
  }

  // A parsed string as a value. One that had an escape is always a heap
  // String object (the official parser moves its decoded std::string into
  // one); the others are small when they fit.
  TVMFFIAny StringValue(const std::string& str) {
    if (!escaped_) return String(str).take();
    void* obj = rt_string_obj_new(str.data(), str.size());
    if (obj == nullptr) rt::throw_raised();
    TVMFFIAny v;
    rt::any_none(&v);
    v.type_index = kTVMFFIStr;
    v.v_obj = static_cast<TVMFFIObject*>(obj);
    return v;
  }

  // *pi at the opening quote; returns the decoded content.
  std::string StringBody(size_t* pi) {
    size_t open = *pi, i = open + 1;
    std::string out;
    escaped_ = false;
    while (true) {
      if (i >= n_) throw ParseError{"Unterminated string starting at", open};
      unsigned char c = static_cast<unsigned char>(s_[i]);
      if (c == '"') break;
      if (c < 0x20) throw ParseError{"Invalid control character at", i};
      if (c != '\\') {
        out.push_back(static_cast<char>(c));
        ++i;
        continue;
      }
      escaped_ = true;
      size_t esc = i + 1;
      if (esc >= n_) throw ParseError{"Unterminated string starting at", open};
      char e = s_[esc];
      switch (e) {
        case '"': out.push_back('"'); break;
        case '\\': out.push_back('\\'); break;
        case '/': out.push_back('/'); break;
        case 'b': out.push_back('\b'); break;
        case 'f': out.push_back('\f'); break;
        case 'n': out.push_back('\n'); break;
        case 'r': out.push_back('\r'); break;
        case 't': out.push_back('\t'); break;
        case 'u': {
          int hi = Hex4(esc + 1);
          if (hi < 0) throw ParseError{"Invalid \\uXXXX escape", esc};
          uint32_t cp = static_cast<uint32_t>(hi);
          size_t next = esc + 5;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            int lo = (next + 1 < n_ && s_[next] == '\\' && s_[next + 1] == 'u') ? Hex4(next + 2) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF) {
              throw ParseError{"Invalid surrogate pair of \\uXXXX escapes", esc};
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00);
            next += 6;
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            throw ParseError{"Invalid surrogate pair of \\uXXXX escapes", esc};
          }
          Utf8(&out, cp);
          i = next;
          continue;
        }
        default:
          throw ParseError{"Invalid \\escape", esc};
      }
      i = esc + 1;
    }
    *pi = i + 1;
    return out;
  }

  TVMFFIAny ArrayValue(size_t* pi) {
    std::vector<Any> items;
    size_t i = SkipWs(*pi + 1);
    if (i < n_ && s_[i] == ']') {
      ++i;
    } else {
      while (true) {
        items.emplace_back(Value(&i));
        i = SkipWs(i);
        if (i < n_ && s_[i] == ']') {
          ++i;
          break;
        }
        if (i >= n_ || s_[i] != ',') throw ParseError{"Expecting ',' delimiter", i};
        i = SkipWs(i + 1);
      }
    }
    *pi = i;
    rt_array* a = rt_array_new(static_cast<int64_t>(items.size()));
    if (a == nullptr) rt::throw_raised();
    for (Any& x : items) {
      TVMFFIAny v = x.take();
      rt_array_push_move(a, &v);
    }
    TVMFFIAny r;
    r.type_index = kTVMFFIArray;
    r.zero_padding = 0;
    r.v_obj = &a->header;
    return r;
  }

  TVMFFIAny Object(size_t* pi) {
    void* map = rt_map_new();
    if (map == nullptr) rt::throw_raised();
    TVMFFIAny mv;
    mv.type_index = kTVMFFIMap;
    mv.zero_padding = 0;
    mv.v_obj = static_cast<TVMFFIObject*>(map);
    Any hold(mv);  // released if parsing throws
    size_t i = SkipWs(*pi + 1);
    if (i < n_ && s_[i] == '}') {
      *pi = i + 1;
      return hold.take();
    }
    while (true) {
      if (i >= n_ || s_[i] != '"') {
        throw ParseError{"Expecting property name enclosed in double quotes", i};
      }
      Any key(StringValue(StringBody(&i)));
      i = SkipWs(i);
      if (i >= n_ || s_[i] != ':') throw ParseError{"Expecting ':' delimiter", i};
      i = SkipWs(i + 1);
      Any value(Value(&i));
      TVMFFIAny cur = hold.take();
      void* m = cur.v_obj;
      int rc = rt_map_set(&m, &key.raw(), &value.raw());
      cur.v_obj = static_cast<TVMFFIObject*>(m);
      hold = Any(cur);
      if (rc != 0) rt::throw_raised();
      i = SkipWs(i);
      if (i < n_ && s_[i] == '}') {
        ++i;
        break;
      }
      if (i >= n_ || s_[i] != ',') throw ParseError{"Expecting ',' delimiter", i};
      i = SkipWs(i + 1);
    }
    *pi = i;
    return hold.take();
  }

  const char* s_;
  size_t n_;
  int depth_ = 0;
  bool escaped_ = false;  // the last string read had an escape
};

std::string Describe(const char* s, size_t n, const ParseError& e) {
  size_t pos = e.pos > n ? n : e.pos;
  size_t line = 1, last_nl = 0;
  bool seen_nl = false;
  for (size_t k = 0; k < pos; ++k) {
    if (s[k] == '\n') {
      ++line;
      last_nl = k;
      seen_nl = true;
    }
  }
  size_t col = seen_nl ? pos - last_nl : pos + 1;
  char buf[160];
  std::snprintf(buf, sizeof(buf), ": line %zu column %zu (char %zu)", line, col, pos);
  return std::string(e.what) + buf;
}

// ---- Stringify ----
class Writer {
 public:
  explicit Writer(int indent) : indent_(indent) {}
  std::string out;

  void Value(const TVMFFIAny& v, int depth) {
    if (depth > kMaxDepth) rt::throw_error("ValueError", "Maximum nesting depth exceeded");
    switch (v.type_index) {
      case kTVMFFINone: out += "null"; return;
      case kTVMFFIBool: out += v.v_int64 ? "true" : "false"; return;
      case kTVMFFIInt: out += std::to_string(v.v_int64); return;
      case kTVMFFIFloat: Float(v.v_float64); return;
      case kTVMFFISmallStr:
      case kTVMFFIStr:
      case kTVMFFIRawStr: Str(v); return;
      case kTVMFFIArray: Seq(v, depth); return;
      case kTVMFFIList: List(v, depth); return;
      // a Dict is not JSON to the official writer: it is refused below
      case kTVMFFIMap: Mapping(v, depth); return;
      default: {
        size_t len = 0;
        const char* name = rt_b_type_name(&v, &len);
        rt::throw_error("ValueError", "Unsupported type: `" + std::string(name, len) + "`");
      }
    }
  }

 private:
  void Newline(int depth) {
    out.push_back('\n');
    out.append(static_cast<size_t>(depth) * static_cast<size_t>(indent_), ' ');
  }

  void Float(double d) {
    if (std::isnan(d)) {
      out += "NaN";
      return;
    }
    if (std::isinf(d)) {
      out += d > 0 ? "Infinity" : "-Infinity";
      return;
    }
    char buf[40];
    // integral values below 2^53 always print with ".0" (fixed notation);
    // anything else as %.17g, which leaves larger integral values bare
    double whole;
    if (std::fabs(d) < 9007199254740992.0 && std::modf(d, &whole) == 0) {
      std::snprintf(buf, sizeof(buf), "%.1f", whole);
    } else {
      std::snprintf(buf, sizeof(buf), "%.17g", d);
    }
    out += buf;
  }

  void Str(const TVMFFIAny& v) {
    String tmp;
    TVMFFIByteArray b;
    if (v.type_index == kTVMFFIRawStr) {
      b = TVMFFIByteArray{v.v_c_str, std::strlen(v.v_c_str)};
    } else if (v.type_index == kTVMFFISmallStr) {
      b = TVMFFISmallBytesGetContentByteArray(&v);
    } else {
      b = *TVMFFIBytesGetByteArrayPtr(v.v_obj);
    }
    out.push_back('"');
    for (size_t k = 0; k < b.size; ++k) {
      unsigned char c = static_cast<unsigned char>(b.data[k]);
      switch (c) {
        case '"': out += "\\\""; break;
        case '\\': out += "\\\\"; break;
        case '/': out += "\\/"; break;
        case '\b': out += "\\b"; break;
        case '\f': out += "\\f"; break;
        case '\n': out += "\\n"; break;
        case '\r': out += "\\r"; break;
        case '\t': out += "\\t"; break;
        default:
          if (c < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof(buf), "\\u%04x", c);
            out += buf;
          } else {
            out.push_back(static_cast<char>(c));
          }
      }
    }
    out.push_back('"');
  }

  void Seq(const TVMFFIAny& v, int depth) {
    int64_t n;
    const TVMFFIAny* items = rt_seq_items(v.v_obj, &n);
    out.push_back('[');
    for (int64_t k = 0; k < n; ++k) {
      if (k) out.push_back(',');
      if (indent_ >= 0) Newline(depth + 1);
      Value(items[k], depth + 1);
    }
    if (indent_ >= 0) Newline(depth);
    out.push_back(']');
  }

  // A List may contain itself (it is mutable): refused as the official does.
  void List(const TVMFFIAny& v, int depth) {
    for (const void* p : open_lists_) {
      if (p == v.v_obj) rt::throw_error("ValueError", "Cycle detected: List contains itself");
    }
    open_lists_.push_back(v.v_obj);
    Seq(v, depth);
    open_lists_.pop_back();
  }

  void Mapping(const TVMFFIAny& v, int depth) {
    void* m = v.v_obj;
    out.push_back('{');
    bool first = true;
    for (uint64_t it = rt_map_iter_begin(m); it != rt_map_iter_end(m); it = rt_map_iter_next(m, it)) {
      const TVMFFIAny* key;
      const TVMFFIAny* val;
      rt_map_iter_kv(m, it, &key, &val);
      if (key->type_index != kTVMFFISmallStr && key->type_index != kTVMFFIStr) {
        size_t len = 0;
        const char* name = rt_b_type_name(key, &len);
        rt::throw_error("ValueError", "Expect key to be string, got `" + std::string(name, len) + "`");
      }
      if (!first) out.push_back(',');
      first = false;
      if (indent_ >= 0) Newline(depth + 1);
      Str(*key);
      out += indent_ >= 0 ? ": " : ":";
      Value(*val, depth + 1);
    }
    if (indent_ >= 0) Newline(depth);
    out.push_back('}');
  }

  int indent_;
  std::vector<const void*> open_lists_;  // Lists being written (cycle check)
};

}  // namespace

Any Parse(const String& json_str, String* error_msg) {
  TVMFFIByteArray b = json_str.bytes();
  try {
    return Any(Parser(b.data, b.size).Document());
  } catch (const ParseError& e) {
    std::string msg = Describe(b.data, b.size, e);
    if (error_msg == nullptr) rt::throw_error("ValueError", msg);
    *error_msg = String(msg);
    return Any();
  }
}

namespace {
// indent <= 0 prints compact, like no indent
String StringifyWith(const TVMFFIAny& value, int indent) {
  Writer w(indent > 0 ? indent : -1);
  w.Value(value, 0);
  return String(w.out);
}
}  // namespace

String Stringify(const Any& value, const Optional<int>& indent) {
  int n = -1;
  if (indent.has_value()) {
    const TVMFFIAny& r = indent.raw();
    n = r.type_index == kTVMFFIInt || r.type_index == kTVMFFIBool ? static_cast<int>(r.v_int64) : 0;
  }
  return StringifyWith(value.raw(), n);
}

String Stringify(const Any& value, Optional<int> indent) {
  unsigned char bytes[8];
  std::memcpy(bytes, static_cast<const void*>(&indent), sizeof(bytes));
  int v;
  std::memcpy(&v, bytes, sizeof(v));
  return StringifyWith(value.raw(), bytes[4] ? v : -1);
}

namespace {

// Globals ffi.json.Parse / ffi.json.Stringify on top of the C++ functions,
// registered unless the C core already has them.
int GlobalParse(void*, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  static const char sig[] = "ffi.json.Parse(0: str) -> Any";
  TVMFFIByteArray text;
  if (rt_b_check_nargs(sig, nargs, 1) != 0 || rt_b_arg_str(args, 0, sig, &text) != 0) return -1;
  return rt::guard([&] { *ret = Parse(String(text.data, text.size), nullptr).take(); });
}

int GlobalStringify(void*, const TVMFFIAny* args, int32_t nargs, TVMFFIAny* ret) {
  static const char sig[] = "ffi.json.Stringify(0: Any, 1: Optional<int>) -> str";
  if (rt_b_check_nargs(sig, nargs, 2) != 0) return -1;
  int indent = -1;
  if (args[1].type_index == kTVMFFIInt || args[1].type_index == kTVMFFIBool) {
    indent = static_cast<int>(args[1].v_int64);
  } else if (args[1].type_index != kTVMFFINone) {
    return rt_b_type_error(sig, 1, "Optional<int>", &args[1]);
  }
  return rt::guard([&] { *ret = StringifyWith(args[0], indent).take(); });
}

__attribute__((constructor(300))) void register_json_globals() {
  struct {
    const char* name;
    TVMFFISafeCallType fn;
  } globals[] = {{"ffi.json.Parse", GlobalParse}, {"ffi.json.Stringify", GlobalStringify}};
  for (const auto& g : globals) {
    void* have = rt_get_global(g.name);
    if (have != nullptr) {
      TVMFFIObjectDecRef(have);
      continue;
    }
    rt_register_global(g.name, g.fn);
  }
}

}  // namespace
}  // namespace json
}  // namespace ffi
}  // namespace tvm
