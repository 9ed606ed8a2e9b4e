"""The CUDA fat binary format: its facts, each spelled once (the model the
reader fills is binary/fatbin_model.py): what nvcc links into a library and
the CUDA runtime loads. Constants only, so that a library without CUDA code
costs no more than this import.

Layout (little-endian; the facts below are the only place they are spelled):

* `.nv_fatbin` holds the executable fat binaries (what the runtime loads);
  `__nv_relfatbin` the relocatable device code of `-rdc` objects (the input
  of the device link, not loaded when `.nv_fatbin` is there). Each is a
  sequence of containers, zero-padded to 8 bytes:
      container header (16 bytes): magic u32 = FATBIN_MAGIC, version u16,
          header size u16, size u64 of the entries that follow
      entries, each: ENTRY header (64 bytes, `header size` may be larger:
          identifier and ptxas options follow it), then `size` payload bytes
* an entry header: kind u16 (1 PTX, 2 ELF cubin), version u16, header size
  u32, payload size u64, compressed size u32, options offset u32, code
  version minor u16 and major u16 (PTX: the ISA version), sm u32 (90 for
  sm_90), identifier offset u32 and length u32 (within the header; the
  source file under -lineinfo/-G), flags u64, reserved u64, uncompressed
  size u64. Flags: 64-bit host, debug, Linux host, LZ4 or ZSTD compressed
  payload, arch-specific (`a`), family-specific (`f`).
* `.nvFatBinSegment` holds one wrapper per translation unit (the
  __fatBinC_Wrapper_t the runtime registers): magic u32 = WRAPPER_MAGIC,
  version u32 (2: linked with -rdc), a pointer to its container, a pointer
  to the pre-linked fatbins (version 2) or 0.

Kernel names and compressed payloads: binary/kernels.py.
"""

from __future__ import annotations

import os
import struct

# -- facts of the format ----------------------------------------------------
FATBIN_SECTION = ".nv_fatbin"
RELFATBIN_SECTION = "__nv_relfatbin"
WRAPPER_SECTION = ".nvFatBinSegment"
EXECUTABLE, RELOCATABLE = "executable", "relocatable"
SECTION_ROLES = {FATBIN_SECTION: EXECUTABLE, RELFATBIN_SECTION: RELOCATABLE}
FATBIN_MAGIC = 0xBA55ED50
WRAPPER_MAGIC = 0x466243B1
CONTAINER = struct.Struct("<IHHQ")
ENTRY = struct.Struct("<HHIQIIHHIIIQQQ")
KIND_PTX, KIND_ELF = 1, 2
FLAG_64BIT = 0x1
FLAG_DEBUG = 0x2
FLAG_LINUX = 0x10
FLAG_LZ4 = 0x2000
FLAG_ZSTD = 0x8000
FLAG_ARCH_SPECIFIC = 0x100000
FLAG_FAMILY = 0x200000
#: e_machine of a cubin, and the st_other bit of its kernels (__global__ functions).
EM_CUDA = 190
STO_CUDA_ENTRY = 0x10

# -- bounds -------------------------------------------------------------------
#: Entries (and containers, wrappers) listed one by one; the rest are counted.
ENTRY_LIST_LIMIT = 20000
#: Kernel names kept per entry and in the library's summary.
KERNEL_LIST_LIMIT = 1000
#: Decompressed bytes per file, all entries together (kernel names only):
#: enough for nvcc's compressed PTX and mid-sized cubins, while a pack's
#: 81 MB image (about 0.5 s of LZ4 here) waits for a raised limit.
DECOMPRESS_LIMIT = 32 << 20
DECOMPRESS_LIMIT_ENV = "TVMFFI_FATBIN_DECOMPRESS_LIMIT"
#: Distinct architecture keys counted in the summary (a hostile file could
#: claim a new sm in every entry).
SUMMARY_KEYS = 256


def decompress_limit() -> int:
    """DECOMPRESS_LIMIT, or the integer in $TVMFFI_FATBIN_DECOMPRESS_LIMIT (0: never)."""
    v = os.environ.get(DECOMPRESS_LIMIT_ENV, "")
    return int(v) if v.isdigit() else DECOMPRESS_LIMIT
