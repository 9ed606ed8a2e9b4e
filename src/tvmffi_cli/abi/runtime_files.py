"""The libtvm_ffi.so of every official apache-tvm-ffi release, by content.

RUNTIME_FILES: release -> (what its TVMFFIGetVersion returns, sha256 of its
tvm_ffi/lib/libtvm_ffi.so in the linux x86_64 wheels). The runtime file is
the same in every wheel of a release for that platform (the wheels differ
by their Python extension only: checked on 0.1.12's cp311 and cp312-abi3
wheels), so one hash per release names it. Used to verify a runtime that
`--runtime VERSION` downloads and to recognise a release's runtime by its
bytes. Regenerate with tools/runtime_files.py.

Note the post releases: 0.1.13.post3 reports 0.1.14, 0.1.14.post1 reports
0.1.15 and 0.1.15.post2 reports 0.1.16 from TVMFFIGetVersion.
"""

from __future__ import annotations

#: The platform the hashes are of (the platform tag of the wheels).
PLATFORM = "linux-x86_64"

RUNTIME_FILES: dict[str, tuple[str, str]] = {
    "0.1.0": ("0.1.0", "be2a7b66f3963e363ca200edc8cf23586ce2f2c5b797fa36ef6e6e9d0c2b2723"),
    "0.1.3": ("0.1.3", "165a0edd624d66c19f87e8bc376e11d523fba54994508e3946b356a9af6c6ede"),
    "0.1.5": ("0.1.5", "32339d57efe42ae8a535172fa69e427b4d59b1a831940272030adf0b80321232"),
    "0.1.6": ("0.1.6", "7a20bb5b127c1948af5212e9763e7deba5bb1c8700f351358e1856467445b1ca"),
    "0.1.7": ("0.1.7", "4d4931faafed466e8483a32eaef31aad1fb1b16ec6d9bdb6fe015c8745eda832"),
    "0.1.8.post2": ("0.1.8", "e18844e96ff3f1054e769a1d685eb3178cf878d1ac411378f6a72c2d8c153884"),
    "0.1.9": ("0.1.9", "792a882987f830a27f7734681e29837d234c397f0d3656d6e7b5333b34102728"),
    "0.1.10": ("0.1.10", "1e3ff8bb39554e1a220a4e7ee3f94e0407ef041c00d9e986f303ba889838d11b"),
    "0.1.11": ("0.1.11", "8cb7bdda84545ad7eb5294198bb02fe16930e47e4c3c6de67ab87cad19f6bb7e"),
    "0.1.12": ("0.1.12", "bb2bb475e9a01abd69b39fdacd89db9dada4199f49b2e65da5ef1465162ed46f"),
    "0.1.13.post3": ("0.1.14", "c89c48ab1c6a30d6451196b23a4935196826092ef1edc3f4867382d027d0b3cc"),
    "0.1.14.post1": ("0.1.15", "e44372c658f0b5b6833f29402edfdd49d14a1e8ca50999d7e099f7c1f0822baa"),
    "0.1.15.post2": ("0.1.16", "c33ef5349896abfd0c5d6994e028ce3b72a343e3e7a29c1030fe093054b656ea"),
}

#: sha256 -> release, to recognise a file.
RELEASE_OF_SHA256 = {h: r for r, (_, h) in RUNTIME_FILES.items()}
