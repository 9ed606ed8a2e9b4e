"""Child side of `tvmffi conform`: load a library and probe its functions.

Runs only in a worker process (the library under test may crash or hang).
The parent (conform/runner.py) sends one JSON request per line; this side
answers with a stream of JSON events, one per line, written as they happen:

  {"event": "loaded", ...}             after {"op": "load", "path": ...}
  {"event": "plan", "steps": [...]}    after {"op": "probe", "name": ...}
  {"event": "start", "step": s}        before each step
  {"event": "obs", "step": s, ...}     facts observed by the step
  {"event": "hang", "step": s}         written by the watchdog, which then kills us
  {"event": "done"}

Because events reach the pipe before the next step starts, a crash in step s
leaves "start s" as the last event: the parent knows which call crashed and
resumes the function after it in a fresh worker. The child only records
facts; conform/checks_probe.py turns them into pass/fail.

Argument arrays live right before a PROT_NONE guard page, so a callee that
reads args[num_args] faults at once instead of reading stale memory.
"""

import ctypes
import hashlib
import json
import mmap
import os
import signal
import struct
import sys
import threading
import time
from ctypes import byref, c_int, c_int32, c_int64, c_size_t, c_void_p

from ..abi.structs import TVMFFIAny
from . import sigs

ANY = 16
_LIBC = ctypes.CDLL(None, use_errno=True)
_LIBC.mmap.restype = c_void_p
_LIBC.mmap.argtypes = [c_void_p, c_size_t, c_int, c_int, c_int, ctypes.c_long]
_LIBC.mprotect.argtypes = [c_void_p, c_size_t, c_int]
_LIBC.write.argtypes = [c_int, c_void_p, c_size_t]
_LIBC.write.restype = ctypes.c_ssize_t
_SAFE_CALL = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_int32, c_void_p)

#: Strings the probe passes; long enough to be heap objects (> 7 bytes).
VALID_STR = b"tvmffi-conform-probe"
WRONG_STR = b"tvmffi-conform-wrong-type"
VALID_INT, WRONG_INT, VALID_FLOAT = 2, 7, 1.5
TENSOR_LEN = 4
POD_KINDS = {0, 1, 2, 3, 4, 5, 6, 7, 11, 12}
BORROWED_KINDS = {8: "kTVMFFIRawStr", 9: "kTVMFFIByteArrayPtr", 10: "kTVMFFIObjectRValueRef"}


class CannotSynthesize(Exception):
    pass


# --- memory -------------------------------------------------------------------
class GuardArena:
    """Pages [rw ... rw][PROT_NONE]: args are placed to end at the guard."""

    def __init__(self, rw_pages=4):
        self.page = mmap.PAGESIZE
        self.rw = rw_pages * self.page
        size = self.rw + self.page
        prot_rw = mmap.PROT_READ | mmap.PROT_WRITE
        flags = mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS
        prot_none = getattr(mmap, "PROT_NONE", 0)
        addr = _LIBC.mmap(None, size, prot_rw, flags, -1, 0)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mmap failed")
        self.base = addr
        self.guard = addr + self.rw
        if _LIBC.mprotect(self.guard, self.page, prot_none) != 0:
            raise OSError(ctypes.get_errno(), "mprotect failed")

    def place(self, raw, guarded=True):
        """Copy the bytes of an args array into the arena; returns its address.
        guarded: the array ends at the guard page; else it starts the arena
        and is followed by zeroed (readable) memory."""
        n = len(raw)
        if n > self.rw:
            raise CannotSynthesize(f"{n // ANY} arguments do not fit the guard arena")
        ctypes.memset(self.base, 0, self.rw)
        addr = self.guard - n if guarded else self.base
        if n:
            ctypes.memmove(addr, raw, n)
        return addr


class Readable:
    """readable(addr, n): can this process read [addr, addr+n)? Asks the
    kernel (a write() from that memory into a pipe fails with EFAULT) instead
    of touching it, so a garbage pointer in a result cannot crash the probe.
    One byte per page is enough: protection is per page."""

    LIMIT = 1 << 26

    def __init__(self):
        self.r, self.w = os.pipe()
        os.set_blocking(self.r, False)
        os.set_blocking(self.w, False)
        self.page = mmap.PAGESIZE

    def __call__(self, addr, n):
        if not addr or addr < 4096 or n < 0 or n > self.LIMIT or addr + n >= 1 << 64:
            return False
        end = addr + max(n, 1)
        p = addr
        ok = True
        while p < end:
            if _LIBC.write(self.w, p, 1) != 1:
                ok = False
                break
            p = (p // self.page + 1) * self.page
            if p < end and (p - addr) // self.page % 4096 == 0:
                self._drain()
        self._drain()
        return ok

    def _drain(self):
        try:
            while os.read(self.r, 65536):
                pass
        except BlockingIOError:
            pass


# --- the probe state ------------------------------------------------------------
class Prober:
    def __init__(self, emit):
        self.emit = emit
        self.rt = None
        self.dl = None
        self.arena = None
        self.readable = Readable()
        self.step = None
        self.step_started = None
        self.timeout = 10.0
        self._globals = {}
        self._keep = []
        self._cb_keep = []

    # -- runtime access --------------------------------------------------------
    _RAW = {
        "TVMFFIFunctionCall": (c_int, [c_void_p, c_void_p, c_int32, c_void_p]),
        "TVMFFIStringFromByteArray": (c_int, [c_void_p, c_void_p]),
        "TVMFFIBytesFromByteArray": (c_int, [c_void_p, c_void_p]),
        "TVMFFIErrorMoveFromRaised": (None, [c_void_p]),
        "TVMFFIObjectIncRef": (c_int, [c_void_p]),
        "TVMFFIObjectDecRef": (c_int, [c_void_p]),
        "TVMFFIEnvTensorAlloc": (c_int, [c_void_p, c_void_p]),
        "TVMFFIFunctionCreate": (c_int, [c_void_p, c_void_p, c_void_p, c_void_p]),
    }

    def _bind_raw(self):
        """The C functions we call with raw addresses (runtime.py declares them
        with typed pointers, which would force copies into ctypes structs)."""
        self.c = type("C", (), {})()
        for name, (restype, argtypes) in self._RAW.items():
            f = self.rt.lib[name]
            f.restype = restype
            f.argtypes = argtypes
            setattr(self.c, name, f)

    def _rt(self, name):
        return self.rt.rt.get(name)

    def live(self):
        f = self._rt("tvmffi_rt_live_objects")
        return None if f is None else int(f())

    def strong(self, h):
        f = self._rt("tvmffi_rt_strong_count")
        if f is not None:
            return int(f(h))
        return ctypes.c_uint64.from_address(h).value & 0xFFFFFFFF

    def type_index_valid(self, ti):
        f = self._rt("tvmffi_rt_type_index_valid")
        if f is not None:
            return bool(f(ti))
        return 64 <= ti < 79  # without our runtime only static indices are known

    def take_error(self):
        """Move the raised error out: (kind, message) or None."""
        h = c_void_p()
        self.c.TVMFFIErrorMoveFromRaised(byref(h))
        if not h.value:
            return None
        try:
            cell = h.value + 24
            kind = self._ba_bytes(cell, 1 << 12).decode("utf-8", "replace")
            msg = self._ba_bytes(cell + 16, 1 << 12).decode("utf-8", "replace")
            return {"kind": kind, "message": msg}
        finally:
            self.c.TVMFFIObjectDecRef(h)

    def _ba_bytes(self, addr, limit):
        data, size = struct.unpack("<QQ", ctypes.string_at(addr, 16))
        size = min(size, limit)
        if not data or not size or not self.readable(data, size):
            return b""
        return ctypes.string_at(data, size)

    def global_handle(self, name):
        h = self._globals.get(name)
        if h is None:
            h = self.rt.get_global_handle(name)
            if not h:
                raise CannotSynthesize(f"the runtime has no global function {name}")
            self._globals[name] = h
        return h

    def call_global(self, name, arg_raws):
        """Call a runtime global; returns the owned result as 16 raw bytes."""
        args = (ctypes.c_char * max(ANY, ANY * len(arg_raws))).from_buffer_copy(
            b"".join(arg_raws).ljust(ANY, b"\0"))
        out = (ctypes.c_char * ANY)()
        rc = self.c.TVMFFIFunctionCall(self.global_handle(name), ctypes.cast(args, c_void_p),
                                        len(arg_raws), ctypes.cast(out, c_void_p))
        if rc != 0:
            err = self.take_error()
            raise CannotSynthesize(f"{name} failed: {err}")
        return bytes(out)

    # -- loading ---------------------------------------------------------------------
    def load(self, path):
        from ..ffi import runtime

        self.rt = runtime.get_runtime()
        self._bind_raw()
        self.arena = GuardArena()
        describe = None
        loader = self._rt("tvmffi_rt_library_load")
        if loader is not None:
            mod = c_void_p()
            if loader(os.fsencode(path), byref(mod)) != 0:
                err = self.take_error() or {"kind": "UnknownError", "message": "load failed"}
                return {"ok": False, "error": f"{err['kind']}: {err['message']}"}
            self._keep.append(mod)
            desc = self._rt("tvmffi_rt_module_describe")
            if desc is not None:
                out = (ctypes.c_char * ANY)()
                if desc(mod, ctypes.cast(out, ctypes.POINTER(TVMFFIAny))) == 0:
                    text = self.string_of(bytes(out))
                    self.release(bytes(out))
                    try:
                        describe = json.loads(text)
                    except (TypeError, ValueError):
                        describe = None
                else:
                    self.take_error()
            mode = os.RTLD_LAZY | getattr(os, "RTLD_NOLOAD", 0)
        else:
            mode = os.RTLD_LAZY | os.RTLD_LOCAL
        try:
            self.dl = ctypes.CDLL(path, mode=mode)
        except OSError as e:
            return {"ok": False, "error": str(e)}
        return {"ok": True, "describe": describe, "runtime": str(self.rt.path),
                "instrumented": self._rt("tvmffi_rt_live_objects") is not None}

    def symbol(self, name):
        try:
            return ctypes.cast(self.dl[name], c_void_p).value
        except AttributeError:
            return None

    # -- values --------------------------------------------------------------------------
    @staticmethod
    def pod(ti, payload=b"", pad=0):
        return struct.pack("<iI", ti, pad) + payload.ljust(8, b"\0")

    def string_any(self, data, kind=sigs.K_STR):
        ba = (ctypes.c_char * (len(data) + 1)).from_buffer_copy(data + b"\0")
        arr = struct.pack("<QQ", ctypes.addressof(ba), len(data))
        arrbuf = ctypes.create_string_buffer(arr, 16)
        out = (ctypes.c_char * ANY)()
        fn = self.c.TVMFFIStringFromByteArray if kind == sigs.K_STR else \
            self.c.TVMFFIBytesFromByteArray
        if fn(ctypes.addressof(arrbuf), ctypes.addressof(out)):
            raise CannotSynthesize(f"creating a string failed: {self.take_error()}")
        return bytes(out)

    def string_of(self, raw):
        """Bytes of a string-like Any (None when it is not one)."""
        ti, ln = struct.unpack_from("<iI", raw)
        if ti in (sigs.K_SMALLSTR, sigs.K_SMALLBYTES):
            return raw[8:8 + min(ln, 8)]
        if ti in (sigs.K_STR, sigs.K_BYTES):
            (h,) = struct.unpack_from("<Q", raw, 8)
            if not self.readable(h, 40):
                return None
            return self._ba_bytes(h + 24, 1 << 24)
        if ti == sigs.K_RAWSTR:
            (p,) = struct.unpack_from("<Q", raw, 8)
            if not self.readable(p, 1):
                return None
            return ctypes.string_at(p)[: 1 << 24]
        return None

    def release(self, raw):
        ti = struct.unpack_from("<i", raw)[0]
        if ti >= 64:
            (h,) = struct.unpack_from("<Q", raw, 8)
            if h:
                self.c.TVMFFIObjectDecRef(h)

    def make(self, t, owned):
        """Raw bytes of a valid value of declared type t; objects go to `owned`."""
        key = t["type"]
        if key in ("int", "Any"):
            return self.pod(sigs.K_INT, struct.pack("<q", VALID_INT))
        if key == "bool":
            return self.pod(sigs.K_BOOL, struct.pack("<q", 1))
        if key == "float":
            return self.pod(sigs.K_FLOAT, struct.pack("<d", VALID_FLOAT))
        if key == "None":
            return self.pod(sigs.K_NONE)
        if key == "DataType":
            return self.pod(sigs.K_DTYPE, struct.pack("<BBH", 2, 32, 1))  # float32
        if key == "Device":
            return self.pod(sigs.K_DEVICE, struct.pack("<ii", 1, 0))  # cpu:0
        if key in ("ffi.String", "ffi.Object"):
            raw = self.string_any(VALID_STR)
            owned.append(raw)
            return raw
        if key == "ffi.Bytes":
            raw = self.string_any(VALID_STR, sigs.K_BYTES)
            owned.append(raw)
            return raw
        if key == "DLTensor*":
            return self.pod(sigs.K_DLTENSOR, struct.pack("<Q", self.dltensor()))
        if key == "ffi.Tensor":
            raw = self.tensor()
            owned.append(raw)
            return raw
        if key == "ffi.Shape":
            raw = self.call_global("ffi.Shape", [self.pod(sigs.K_INT, struct.pack("<q", 2)),
                                                 self.pod(sigs.K_INT, struct.pack("<q", 3))])
            owned.append(raw)
            return raw
        if key in ("ffi.Array", "ffi.List"):
            elem = t["args"][0] if t["args"] else {"type": "int", "args": []}
            tmp = []
            try:
                items = [self.make(elem, tmp), self.make(elem, tmp)]
                raw = self.call_global("ffi.Array", items)
            finally:
                for o in tmp:
                    self.release(o)
            owned.append(raw)
            return raw
        if key in ("ffi.Map", "ffi.Dict"):
            kt = t["args"][0] if len(t["args"]) == 2 else {"type": "ffi.String", "args": []}
            vt = t["args"][1] if len(t["args"]) == 2 else {"type": "int", "args": []}
            tmp = []
            try:
                raw = self.call_global("ffi.Map", [self.make(kt, tmp), self.make(vt, tmp)])
            finally:
                for o in tmp:
                    self.release(o)
            owned.append(raw)
            return raw
        if key == "Optional":
            if t["args"]:
                try:
                    return self.make(t["args"][0], owned)
                except CannotSynthesize:
                    pass
            return self.pod(sigs.K_NONE)
        if key == "Variant":
            for alt in t["args"]:
                try:
                    return self.make(alt, owned)
                except CannotSynthesize:
                    continue
            raise CannotSynthesize(f"no alternative of {sigs.type_str(t)} can be built")
        if key == "ffi.Function":
            raw = self.function()
            owned.append(raw)
            return raw
        raise CannotSynthesize(f"cannot build a value of type {sigs.type_str(t)}")

    def make_wrong(self, kind, owned):
        if kind == sigs.K_STR:
            raw = self.string_any(WRONG_STR)
            owned.append(raw)
            return raw
        return self.pod(sigs.K_INT, struct.pack("<q", WRONG_INT))

    def dltensor(self):
        from ..abi.structs import DLTensor

        data = (ctypes.c_float * TENSOR_LEN)()
        shape = (c_int64 * 1)(TENSOR_LEN)
        t = DLTensor()
        t.data = ctypes.addressof(data)
        t.device.device_type, t.device.device_id = 1, 0
        t.ndim = 1
        t.dtype.code, t.dtype.bits, t.dtype.lanes = 2, 32, 1
        t.shape = shape
        t.strides = None
        t.byte_offset = 0
        self._keep.extend([data, shape, t])
        return ctypes.addressof(t)

    def tensor(self):
        from ..abi.structs import DLTensor

        shape = (c_int64 * 1)(TENSOR_LEN)
        proto = DLTensor()
        proto.data = None
        proto.device.device_type, proto.device.device_id = 1, 0
        proto.ndim = 1
        proto.dtype.code, proto.dtype.bits, proto.dtype.lanes = 2, 32, 1
        proto.shape = shape
        proto.strides = None
        out = c_void_p()
        if self.c.TVMFFIEnvTensorAlloc(byref(proto), byref(out)) != 0 or not out.value:
            raise CannotSynthesize(f"allocating a tensor failed: {self.take_error()}")
        (data,) = struct.unpack("<Q", ctypes.string_at(out.value + 24, 8))
        if data:
            ctypes.memset(data, 0, 4 * TENSOR_LEN)
        return self.pod(sigs.K_TENSOR, struct.pack("<Q", out.value))

    def function(self):
        def cb(_self, _args, _n, result):
            ctypes.memset(result, 0, ANY)
            return 0

        fn = _SAFE_CALL(cb)
        self._cb_keep.append(fn)
        out = c_void_p()
        if self.c.TVMFFIFunctionCreate(None, ctypes.cast(fn, c_void_p), None, byref(out)) != 0:
            raise CannotSynthesize(f"creating a function failed: {self.take_error()}")
        return self.pod(sigs.K_FUNCTION, struct.pack("<Q", out.value))

    # -- results ---------------------------------------------------------------------
    def result_problems(self, raw, ok):
        """What is wrong with a result Any (list of strings)."""
        ti, pad = struct.unpack_from("<iI", raw)
        payload = raw[8:]
        if not ok:
            if raw != bytes(ANY):
                return [f"the call failed but the result was written (type index {ti}, "
                        f"bytes {raw.hex()}); it must stay None"]
            return []
        if ti in BORROWED_KINDS:
            return [f"the result holds the borrowed kind {BORROWED_KINDS[ti]} ({ti}); an owning "
                    "result must not point into memory the callee keeps"]
        if ti < 64:
            if ti not in POD_KINDS:
                return [f"type index {ti} is not a valid value kind"]
            if ti in (sigs.K_SMALLSTR, sigs.K_SMALLBYTES):
                if pad > 7:
                    return [f"small string length {pad} exceeds 7"]
                if any(payload[pad:]):
                    return [f"bytes after the {pad}-byte small string are not zero"]
                return []
            probs = []
            if pad:
                probs.append(f"padding is {pad:#x}, must be 0")
            if ti == sigs.K_NONE and any(payload):
                probs.append("payload of None is not zero")
            elif ti == sigs.K_BOOL and struct.unpack("<Q", payload)[0] > 1:
                probs.append(f"bool payload is {payload.hex()}, expected 0 or 1")
            elif ti == sigs.K_DTYPE and any(payload[4:]):
                probs.append("unused payload bytes of a DataType are not zero")
            return probs
        probs = []
        if not self.type_index_valid(ti):
            probs.append(f"type index {ti} is neither static nor registered")
        if pad:
            probs.append(f"padding is {pad:#x}, must be 0")
        (h,) = struct.unpack("<Q", payload)
        if not self.readable(h, 24):
            probs.append(f"object pointer {h:#x} is not readable memory")
            return probs
        hti = struct.unpack_from("<i", ctypes.string_at(h + 8, 4))[0]
        if hti != ti:
            probs.append(f"object header type index {hti} differs from the Any's {ti}")
        if self.strong(h) < 1:
            probs.append("object result is dead (strong count 0)")
        return probs

    def fingerprint(self, raw, depth=0):
        """A stable digest of a result's value (not its identity)."""
        h = hashlib.sha1()
        self._fp(raw, h, depth)
        return h.hexdigest()[:16]

    def _fp(self, raw, h, depth):
        ti = struct.unpack_from("<i", raw)[0]
        h.update(struct.pack("<i", ti))
        if ti < 64:
            if ti in (sigs.K_SMALLSTR, sigs.K_SMALLBYTES):
                h.update(self.string_of(raw) or b"")
            else:
                h.update(raw[4:])
            return
        (p,) = struct.unpack_from("<Q", raw, 8)
        if ti in (sigs.K_STR, sigs.K_BYTES):
            h.update(self.string_of(raw) or b"")
        elif ti == sigs.K_SHAPE:
            data, size = struct.unpack("<QQ", ctypes.string_at(p + 24, 16))
            size = min(size, 4096)
            if data and size and self.readable(data, 8 * size):
                h.update(ctypes.string_at(data, 8 * size))
        elif ti == sigs.K_TENSOR:
            cell = ctypes.string_at(p + 24, 48)
            data, dev_t, _dev_id, ndim = struct.unpack_from("<QiiI", cell)
            h.update(cell[8:24])
            (shape_p,) = struct.unpack_from("<Q", cell, 24)
            ndim = min(ndim, 16)
            n = 1
            if shape_p and self.readable(shape_p, 8 * ndim):
                dims = struct.unpack(f"<{ndim}q", ctypes.string_at(shape_p, 8 * ndim))
                h.update(repr(dims).encode())
                for d in dims:
                    n *= max(d, 0)
            code, bits, lanes = struct.unpack_from("<BBH", cell, 20)
            nbytes = n * ((bits * lanes + 7) // 8)
            if dev_t == 1 and data and 0 < nbytes <= 1 << 20 and self.readable(data, nbytes):
                h.update(ctypes.string_at(data, nbytes))
        elif ti == sigs.K_ARRAY and depth < 3:
            try:
                size_raw = self.call_global("ffi.ArraySize", [raw])
                size = min(struct.unpack_from("<q", size_raw, 8)[0], 64)
                h.update(struct.pack("<q", size))
                for i in range(size):
                    item = self.call_global(
                        "ffi.ArrayGetItem", [raw, self.pod(sigs.K_INT, struct.pack("<q", i))])
                    self._fp(item, h, depth + 1)
                    self.release(item)
            except CannotSynthesize:
                pass
        elif ti == sigs.K_MAP:
            try:
                size_raw = self.call_global("ffi.MapSize", [raw])
                h.update(size_raw[8:])
            except CannotSynthesize:
                pass

    # -- one call -------------------------------------------------------------------
    def call(self, addr, raws, guarded=True, owned_objs=()):
        """Call a safe-call function once and record what happened."""
        fn = _SAFE_CALL(addr)
        raw = b"".join(raws)
        args = self.arena.place(raw, guarded)
        objs = self._objects(raws)
        for o in objs:  # an extra reference, so a callee's stray DecRef frees nothing
            self.c.TVMFFIObjectIncRef(o)
        before = [self.strong(o) for o in objs]
        result = (ctypes.c_char * ANY)()
        live0 = self.live()
        rc = fn(None, args, len(raws), ctypes.addressof(result))
        obs = {"num_args": len(raws), "rc": rc, "guarded": guarded}
        after_raw = ctypes.string_at(args, len(raw)) if raw else b""
        obs["args_changed"] = after_raw != raw
        err = self.take_error()
        obs["error"] = err if rc != 0 else None
        obs["stale_error"] = err if rc == 0 else None
        res = bytes(result)
        obs["result_type_index"] = struct.unpack_from("<i", res)[0]
        obs["result_problems"] = self.result_problems(res, rc == 0)
        if rc == 0 and not obs["result_problems"]:
            obs["fingerprint"] = self.fingerprint(res)
            self.release(res)
        obs["live_delta"] = None if live0 is None else self.live() - live0
        after = [self.strong(o) for o in objs]
        obs["refcounts"] = [[b, a] for b, a in zip(before, after)]
        self._restore(objs, before, after, extra=1)
        return obs

    def call_threads(self, addr, raws, n=4):
        """The same call from n threads released together; results compared by
        the parent through their fingerprints."""
        fn = _SAFE_CALL(addr)
        raw = b"".join(raws)
        bufs = [(ctypes.c_char * max(len(raw), ANY)).from_buffer_copy(raw.ljust(ANY, b"\0"))
                for _ in range(n)]
        results = [(ctypes.c_char * ANY)() for _ in range(n)]
        out = [None] * n
        barrier = threading.Barrier(n)
        objs = self._objects(raws)
        for o in objs:  # n extra references: stray DecRefs from n threads free nothing
            for _ in range(n):
                self.c.TVMFFIObjectIncRef(o)
        before = [self.strong(o) for o in objs]

        def work(i):
            barrier.wait()
            rc = fn(None, ctypes.addressof(bufs[i]), len(raws), ctypes.addressof(results[i]))
            err = self.take_error()  # the raised error is thread-local: fetch it here
            out[i] = {"rc": rc}
            if err is not None:
                out[i]["error"] = err

        threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i in range(n):
            res = bytes(results[i])
            if out[i]["rc"] == 0 and not self.result_problems(res, True):
                out[i]["fingerprint"] = self.fingerprint(res)
                self.release(res)
        after = [self.strong(o) for o in objs]
        self._restore(objs, before, after, extra=n)
        return {"calls": out, "refcounts": [[b, a] for b, a in zip(before, after)]}

    @staticmethod
    def _objects(raws):
        return [struct.unpack_from("<Q", r, 8)[0] for r in raws
                if struct.unpack_from("<i", r)[0] >= 64]

    def _restore(self, objs, before, after, extra):
        """Undo a callee's stray releases, then drop our extra references."""
        for o, b, a in zip(objs, before, after):
            for _ in range(max(0, b - a)):
                self.c.TVMFFIObjectIncRef(o)
            for _ in range(extra):
                self.c.TVMFFIObjectDecRef(o)

    def call_getter(self, addr):
        fn = _SAFE_CALL(addr)
        result = (ctypes.c_char * ANY)()
        rc = fn(None, None, 0, ctypes.addressof(result))
        res = bytes(result)
        obs = {"rc": rc, "error": self.take_error(), "result_type_index":
               struct.unpack_from("<i", res)[0]}
        if rc == 0:
            s = self.string_of(res)
            obs["value_hex"] = None if s is None else s.hex()
            if not self.result_problems(res, True):
                self.release(res)
        return obs

    # -- one function --------------------------------------------------------------------
    def plan(self, name, getters):
        """(steps, sig, note) for a function; deterministic so a resumed run
        after a crash computes the same steps."""
        steps = []
        sig = None
        note = None
        if "metadata" in getters:
            steps.append("metadata")
        if "doc" in getters:
            steps.append("doc")
        steps.append("zero-args")
        if "metadata" in getters:
            addr = self.symbol("__tvm_ffi__metadata_" + name)
            # The getter runs again here in every (re)started worker; it is cheap.
            got = self.call_getter(addr) if addr else {"rc": -1}
            if got.get("rc") == 0 and got.get("value_hex") is not None:
                try:
                    _, sig = sigs.parse_metadata(bytes.fromhex(got["value_hex"]).decode("utf-8"))
                except (sigs.SchemaError, UnicodeDecodeError):
                    sig = None
        if sig is None:
            note = "no usable metadata" if "metadata" in getters else "no metadata"
            return steps, sig, note
        n = len(sig.params)
        if n >= 2:
            steps.append("too-few")
        for i, p in enumerate(sig.params):
            if sigs.wrong_kind(p) is not None:
                steps.append(f"wrong-type:{i}")
        steps.append("valid")
        steps.append("threads")
        return steps, sig, note

    def run_step(self, name, step, sig, getters, valid_ok):
        if step in ("metadata", "doc"):
            prefix = "__tvm_ffi__metadata_" if step == "metadata" else "__tvm_ffi__doc_"
            addr = self.symbol(prefix + name)
            if not addr:
                return {"skipped": f"{prefix}{name} cannot be resolved"}
            return self.call_getter(addr)
        addr = self.symbol("__tvm_ffi_" + name)
        if not addr:
            return {"skipped": f"__tvm_ffi_{name} cannot be resolved"}
        base, _, variant = step.partition("/")
        guarded = variant != "readable"
        owned = []
        try:
            if base == "threads":
                if not valid_ok:
                    return {"skipped": "the valid call did not succeed"}
                raws = [self.make(p, owned) for p in sig.params]
                return self.call_threads(addr, raws)
            extra = {}
            if base == "zero-args":
                raws = []
            elif base == "too-few":
                raws = [self.make(p, owned) for p in sig.params[:-1]]
            elif base.startswith("wrong-type:"):
                i = int(base.split(":")[1])
                kind = sigs.wrong_kind(sig.params[i])
                raws = [self.make_wrong(kind, owned) if j == i else self.make(p, owned)
                        for j, p in enumerate(sig.params)]
                extra = {"param": i, "param_type": sigs.type_str(sig.params[i]),
                         "wrong_kind": kind}
            elif base == "valid":
                raws = [self.make(p, owned) for p in sig.params]
            else:
                return {"skipped": f"unknown step {step}"}
            obs = self.call(addr, raws, guarded)
            obs.update(extra)
            if base == "valid" and obs["rc"] == 0 and not obs["result_problems"]:
                obs["return_ok"] = sigs.return_ok(sig.ret, obs["result_type_index"])
                obs["return_type"] = sigs.type_str(sig.ret)
            if obs.get("live_delta"):
                # A first call may fill a cache; only a second leak counts.
                again = self.call(addr, raws, guarded)
                obs["live_delta_repeat"] = again.get("live_delta")
            return obs
        except CannotSynthesize as e:
            return {"skipped": str(e)}
        finally:
            for o in owned:
                self.release(o)

    def probe(self, req):
        name = req["name"]
        getters = set(req.get("getters", ()))
        self.timeout = float(req.get("timeout", self.timeout))
        steps, sig, note = self.plan(name, getters)
        only = req.get("only")
        if only:
            steps = list(only)
        self.emit({"event": "plan", "steps": steps, "note": note,
                   "params": None if sig is None else [sigs.type_str(p) for p in sig.params]})
        skip = set(req.get("skip", ()))
        valid_ok = bool(req.get("valid_ok", False))
        for step in steps:
            if step in skip:
                continue
            self.emit({"event": "start", "step": step})
            self.step, self.step_started = step, time.monotonic()
            obs = self.run_step(name, step, sig, getters, valid_ok)
            self.step = None
            if step == "valid":
                valid_ok = obs.get("rc") == 0 and not obs.get("result_problems")
            obs["event"] = "obs"
            obs["step"] = step
            self.emit(obs)
        self.emit({"event": "done"})

    # -- watchdog -------------------------------------------------------------------
    def watchdog(self):
        while True:
            time.sleep(0.05)
            step, started = self.step, self.step_started
            if step is not None and started is not None and \
                    time.monotonic() - started > self.timeout:
                self.emit({"event": "hang", "step": step, "timeout": self.timeout})
                os.kill(os.getpid(), signal.SIGKILL)


def serve(fd_in, fd_out):
    """Worker loop: one JSON request per line on fd_in, events on fd_out."""
    lock = threading.Lock()

    def emit(obj):
        data = (json.dumps(obj, separators=(",", ":")) + "\n").encode()
        with lock:
            view = memoryview(data)
            while view:
                n = os.write(fd_out, view)
                view = view[n:]

    prober = Prober(emit)
    threading.Thread(target=prober.watchdog, daemon=True).start()
    with os.fdopen(fd_in, "rb", buffering=0) as fin:
        buf = b""
        while True:
            chunk = fin.read(65536)
            if not chunk:
                return
            buf += chunk
            while b"\n" in buf:
                line, buf = buf.split(b"\n", 1)
                req = json.loads(line)
                op = req.get("op")
                if op == "load":
                    prober.timeout = float(req.get("timeout", prober.timeout))
                    prober.step, prober.step_started = "load", time.monotonic()
                    try:
                        info = prober.load(req["path"])
                    except Exception as e:
                        info = {"ok": False, "error": f"{type(e).__name__}: {e}"}
                    prober.step = None
                    info["event"] = "loaded"
                    emit(info)
                elif op == "probe":
                    prober.probe(req)
                elif op == "exit":
                    return


def run(request):
    """One request in this process, events collected in a list (for callers
    that run tasks through tvmffi_cli.sandbox.worker rather than conform's pool)."""
    events = []
    prober = Prober(events.append)
    info = prober.load(request["path"])
    events.append(dict(info, event="loaded"))
    if info.get("ok"):
        for name, getters in request.get("functions", {}).items():
            prober.probe({"name": name, "getters": getters})
    return {"events": events}


if __name__ == "__main__":
    serve(int(sys.argv[1]), int(sys.argv[2]))
