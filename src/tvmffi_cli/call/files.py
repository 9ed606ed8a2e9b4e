"""Files the user owns, on the parent side of `call` and `bench`.

Inputs reach the worker as private copies: every file an argument names
(.npy, .npz, @bytes) is copied into a fresh directory only this process can
read, and the request points there, so nothing the library does can change
the user's file. --out files are written by the worker into a staging
directory, each with its SHA-256 in the (authenticated) reply; after the
worker is gone, the parent checks every hash and only then links the files
into --out, so what it reports as written is exactly what it checked.
"""

from __future__ import annotations

import dataclasses
import os
import re
from typing import TYPE_CHECKING, Sequence

from ..errors import CheckFailed, InputError
from ..sandbox.files import private_dir
from .specs import ArgSpec, ArrayArg, BytesArg, MapArg, Positional, Spec, TensorArg

if TYPE_CHECKING:
    from .messages import OutFile


def private_inputs(
    args: Sequence[ArgSpec], cwd: str, into: str | None = None
) -> tuple[str, tuple[ArgSpec, ...]]:
    """Copy every input file the argument specs name into a new private
    directory (or `into`). Returns the directory and the specs pointing at
    the copies."""
    d = into or private_dir("tvmffi-inputs-")
    count = len(os.listdir(d))
    cwd = cwd or os.getcwd()

    def copy(p: str) -> str:
        nonlocal count
        dst = os.path.join(d, f"in{count}-{os.path.basename(p)}")
        count += 1
        import shutil  # only when an argument names a file

        try:
            shutil.copyfile(p, dst)
        except OSError as e:
            raise InputError(f"{p}: {e.strerror}") from None
        os.chmod(dst, 0o400)
        return dst

    def spec(s: Spec) -> Spec:
        if isinstance(s, (TensorArg, BytesArg)) and s.path and os.path.isfile(s.path):
            return dataclasses.replace(s, path=copy(s.path))
        if isinstance(s, ArrayArg):
            return ArrayArg(tuple(spec(x) for x in s.items))
        if isinstance(s, MapArg):
            return MapArg(tuple((spec(k), spec(v)) for k, v in s.items))
        return s

    def arg(s: ArgSpec) -> ArgSpec:
        if not isinstance(s, Positional):
            return spec(s)
        raw = s.raw
        if raw:
            # Typed by the function's schema in the worker: a file it names
            # (@file for bytes, x.npy for a tensor, x.npy@cuda on a device)
            # is copied here too.
            at = raw.startswith("@")
            body = raw if at else _file_part(raw, cwd)
            name = os.path.join(cwd, body[1:] if at else body)
            if (at or body.endswith((".npy", ".npz"))) and os.path.isfile(name):
                raw = ("@" if at else "") + copy(name) + raw[len(body) :]
        return Positional(raw, None if s.spec is None else spec(s.spec), s.error)

    return d, tuple(arg(s) for s in args)


#: The file of a tensor's text and what follows it: x.npz:key@bfloat16@cuda:0.
_FILE_PART = re.compile(r"(.+?\.np[yz])(?::[^@]*)?(?:@[A-Za-z0-9_:]+)*")


def _file_part(raw: str, cwd: str) -> str:
    """The file a tensor's text names: x.npz:w@bfloat16@cuda:0 -> x.npz (what
    follows stays on the copy's name); the whole text when it is a file."""
    if os.path.isfile(os.path.join(cwd, raw)):
        return raw
    m = _FILE_PART.fullmatch(raw)
    return m.group(1) if m else raw


def sha256_file(path: str) -> str:
    import hashlib  # on use: loads OpenSSL, which most calls never need

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _copy_checked(src: str, dst: str) -> str:
    """Copy a staged file (a place the worker could write: no link followed,
    regular files only, never blocking) to dst; returns the SHA-256 of
    exactly the bytes copied."""
    import hashlib

    from ..sandbox.files import Untrusted, open_untrusted

    h = hashlib.sha256()
    try:
        f = open_untrusted(src)
    except (Untrusted, OSError):
        raise CheckFailed(
            f"--out: {os.path.basename(src)} is not a regular file the worker staged"
        ) from None
    with f, open(dst, "wb") as o:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
            o.write(chunk)
    return h.hexdigest()


def publish_outputs(
    stage: str, out_dir: str, files: Sequence[OutFile], force: bool
) -> tuple[OutFile, ...]:
    """Check the staged files against the hashes the worker reported and put
    them into out_dir. Returns the file entries with their final paths. Each
    file is read once, hashed while copied next to its destination; nothing
    is published unless every hash matches."""
    os.makedirs(out_dir, exist_ok=True)
    checked: list[tuple[OutFile, str | None, str | None]] = []
    try:
        for f in files:
            staged = f.path
            if not staged:
                checked.append((f, None, None))
                continue
            name = os.path.basename(staged)
            if os.path.dirname(os.path.abspath(staged)) != os.path.abspath(stage):
                raise CheckFailed(f"--out: the worker reported {name!r}, which it did not stage")
            dst = os.path.join(out_dir, name)
            tmp = os.path.join(out_dir, f".tvmffi-{os.getpid()}-{name}.tmp")
            checked.append((f, tmp, dst))
            if _copy_checked(os.path.join(stage, name), tmp) != f.sha256:
                raise CheckFailed(
                    f"--out: {name} changed after tvmffi wrote it (the library "
                    "rewrote its output); nothing written"
                )
    except BaseException:
        for _, tmp_, _ in checked:
            if tmp_ is not None and os.path.exists(tmp_):
                os.unlink(tmp_)
        raise
    out = []
    for f, maybe_tmp, maybe_dst in checked:
        if maybe_tmp is None or maybe_dst is None:
            out.append(f)
            continue
        tmp, dst = maybe_tmp, maybe_dst
        if force:
            os.replace(tmp, dst)
        else:
            try:
                os.link(tmp, dst)
            except FileExistsError:
                os.unlink(tmp)
                raise InputError(f"{dst} exists; pass --force to overwrite") from None
            os.unlink(tmp)
        out.append(dataclasses.replace(f, path=dst, sha256=None))
    return tuple(out)
