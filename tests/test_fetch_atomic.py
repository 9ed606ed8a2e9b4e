"""A wheel appears in the shared cache whole or not at all.

Several processes (xdist workers, concurrent pytest runs, two `tvmffi call
--runtime 0.1.12`) fetch the same wheel into one cache. A local index serves
the wheel slowly, three processes fetch it at once, and this process polls
the cache the whole time: every wheel it sees must be an intact zip, the
wheel is downloaded once (the others wait for it), and all get one path.
Both fetchers are checked: the tests' (tests/releases.py) and the package's
(`--runtime VERSION`, ffi/fetch.py). Cost: about 4 s per case (pip start-ups
and a 1 s download of 24 MB).
"""

from __future__ import annotations

import hashlib
import http.server
import io
import os
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

from tvmffi_cli.ffi.fetch import readable_zip

TESTS = Path(__file__).resolve().parent
CHUNKS, CHUNK_DELAY = 40, 0.025  # about 1 s for the whole wheel


def _wheel_bytes(dist: str, version: str) -> bytes:
    stem = dist.replace("-", "_")
    info = f"{stem}-{version}.dist-info"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_STORED) as z:
        z.writestr(f"{stem}/payload.bin", os.urandom(24 << 20))  # stored, so copies take a while
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        z.writestr(
            f"{info}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        )
        z.writestr(f"{info}/RECORD", "")
    return buf.getvalue()


class SlowIndex:
    """A PEP 503 index on 127.0.0.1 with one wheel, sent in slow chunks."""

    def __init__(self, dist: str, version: str) -> None:
        self.name = f"{dist.replace('-', '_')}-{version}-py3-none-any.whl"
        self.data = _wheel_bytes(dist, version)
        self.downloads = 0
        index = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith(f"/simple/{dist}"):
                    sha = hashlib.sha256(index.data).hexdigest()
                    body = f'<a href="/files/{index.name}#sha256={sha}">{index.name}</a>'.encode()
                    self._send(body, "text/html", slow=False)
                elif self.path == f"/files/{index.name}":
                    index.downloads += 1
                    self._send(index.data, "application/octet-stream", slow=True)
                else:
                    self.send_error(404)

            def _send(self, body: bytes, ctype: str, slow: bool) -> None:
                self.send_response(200)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                step = -(-len(body) // CHUNKS) if slow else len(body)
                for i in range(0, len(body), step):
                    self.wfile.write(body[i : i + step])
                    self.wfile.flush()
                    if slow:
                        time.sleep(CHUNK_DELAY)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/simple/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


FETCHERS = {
    # (distribution, version, cache variable, where the wheels land, code that fetches)
    "tests": (
        "fakepkg",
        "1.0",
        "TVMFFI_WHEEL_CACHE",
        "",
        "import releases; print(releases.fetch_wheel('fakepkg', '1.0'))",
    ),
    "package": (
        "apache-tvm-ffi",
        "0.1.12",
        "TVMFFI_RUNTIME_CACHE",
        "wheels",
        "from tvmffi_cli.ffi import fetch; print(fetch._wheel('0.1.12'))",
    ),
}


@pytest.mark.parametrize("which", sorted(FETCHERS))
def test_concurrent_fetches_never_show_a_partial_wheel(tmp_path: Path, which: str) -> None:
    dist, version, cache_var, sub, code = FETCHERS[which]
    index = SlowIndex(dist, version)
    cache = tmp_path / "cache"
    wheels = cache / sub if sub else cache
    wheels.mkdir(parents=True)
    env = dict(
        os.environ,
        PYTHONPATH=str(TESTS),
        PIP_CONFIG_FILE=os.devnull,  # only this index: no user config, find-links or cache
        PIP_INDEX_URL=index.url,
        PIP_EXTRA_INDEX_URL="",
        PIP_FIND_LINKS="",
        PIP_NO_CACHE_DIR="1",
        **{cache_var: str(cache)},
    )
    try:
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(3)
        ]
        looks, seen, broken = 0, 0, []
        while any(p.poll() is None for p in procs):
            for w in wheels.glob(f"{dist.replace('-', '_')}-{version}-*.whl"):
                seen += 1
                if not readable_zip(w):  # a cut-off zip lacks its central directory
                    broken.append(w.stat().st_size if w.exists() else -1)
            looks += 1
            time.sleep(0.001)
        outs = [p.communicate() for p in procs]
    finally:
        index.close()
    assert [p.returncode for p in procs] == [0, 0, 0], [err[-500:] for _, err in outs]
    paths = {out.strip() for out, _ in outs}
    assert paths == {str(wheels / index.name)}, outs
    assert broken == [], f"{len(broken)} of {seen} sightings in {looks} looks were partial"
    assert index.downloads == 1  # one process fetched; the others waited for it
    assert Path(paths.pop()).read_bytes() == index.data  # whole, every byte
    # Nothing of the download is left beside the wheel (the lock file stays).
    assert sorted(p.name for p in wheels.iterdir() if p.suffix != ".lock") == [index.name]
