/* Prints what the runtime it is linked to makes of data type strings, so the
 * same program run on our runtime and on the official one can be compared
 * line by line. Uses only the C API (builds with either header set).
 *
 *   dtype_probe STR...        parse each STR, print code/bits/lanes and the
 *                             string printed back
 *   dtype_probe @C,B,L ...    print the string of dtype (code C, bits B,
 *                             lanes L as a signed 16-bit number) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tvm/ffi/c_api.h>

static void print_error(void) {
  TVMFFIObjectHandle err = NULL;
  TVMFFIErrorMoveFromRaised(&err);
  if (err == NULL) {
    printf("ERR <none>\n");
    return;
  }
  TVMFFIErrorCell* c = (TVMFFIErrorCell*)((char*)err + sizeof(TVMFFIObject));
  printf("ERR %.*s: %.*s\n", (int)c->kind.size, c->kind.data, (int)c->message.size,
         c->message.data);
  TVMFFIObjectDecRef(err);
}

static void print_string_any(const TVMFFIAny* a) {
  if (a->type_index == kTVMFFISmallStr) {
    printf("'%.*s'", (int)a->small_str_len, a->v_bytes);
  } else if (a->type_index == kTVMFFIStr) {
    TVMFFIByteArray* b = (TVMFFIByteArray*)((char*)a->v_obj + sizeof(TVMFFIObject));
    printf("'%.*s'", (int)b->size, b->data);
    TVMFFIObjectDecRef(a->v_obj);
  } else {
    printf("<type %d>", (int)a->type_index);
  }
}

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    const char* s = argv[i];
    DLDataType d;
    if (s[0] == '@') {
      int c, b, l;
      if (sscanf(s + 1, "%d,%d,%d", &c, &b, &l) != 3) return 2;
      d.code = (uint8_t)c;
      d.bits = (uint8_t)b;
      d.lanes = (uint16_t)(int16_t)l;
      printf("%s -> ", s);
    } else {
      TVMFFIByteArray in = {s, strlen(s)};
      printf("'%s' -> ", s);
      if (TVMFFIDataTypeFromString(&in, &d) != 0) {
        print_error();
        continue;
      }
      printf("%d %d %d ", (int)d.code, (int)d.bits, (int)(int16_t)d.lanes);
    }
    TVMFFIAny out;
    out.type_index = kTVMFFINone;
    out.zero_padding = 0;
    out.v_int64 = 0;
    if (TVMFFIDataTypeToString(&d, &out) != 0) {
      print_error();
      continue;
    }
    print_string_any(&out);
    printf("\n");
  }
  return 0;
}
