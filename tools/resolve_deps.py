#!/usr/bin/env python3
"""Resolve tvmffi's runtime + test dependencies to wheels for every Python the
package claims (3.9 .. 3.13), without those Pythons on this machine.

For each version X.Y it runs
    pip install --dry-run --target T --python-version X.Y --only-binary=:all: \
        --ignore-installed --report R <requirements>
with the requirements of pyproject.toml whose environment markers hold on
X.Y (pip would judge the markers of the top-level requirements against the
running interpreter, so they are evaluated here first). Markers of transitive
requirements are still judged by pip against this interpreter.

Prints one line per version (what resolved, or why not) and exits 0 when every
version resolved, 1 when one did not, 2 when the package index could not be
reached at all. Used by .ci/run and tests/test_packaging.py.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLAIMED = ("3.9", "3.10", "3.11", "3.12", "3.13")
EXTRAS = ("test",)
# pip's words for "the index could not be reached" (as opposed to "no wheel").
_NETWORK = re.compile(
    r"Failed to establish a new connection|Network is unreachable|Temporary failure in name "
    r"resolution|Name or service not known|Max retries exceeded|ProxyError|ConnectTimeout|"
    r"ReadTimeout|Could not fetch URL|connection broken|SSLError|Retrying \(Retry",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Resolution:
    python: str
    ok: bool
    offline: bool
    requirements: tuple[str, ...]
    installed: tuple[str, ...]  # name==version of every wheel pip chose
    message: str  # the reason when not ok


def _load_pyproject() -> dict[str, object]:
    try:
        import tomllib
    except ImportError:  # Python 3.9/3.10
        import tomli as tomllib  # type: ignore[no-redef,import-not-found,unused-ignore]
    with open(ROOT / "pyproject.toml", "rb") as f:
        return dict(tomllib.load(f))


def requirements_for(python: str) -> tuple[str, ...]:
    """The runtime + test + build-system requirements whose markers hold on `python` (X.Y), markers dropped."""
    from packaging.requirements import Requirement

    project = _load_pyproject()["project"]
    assert isinstance(project, dict)
    reqs = list(project["dependencies"])
    for extra in EXTRAS:
        reqs += project["optional-dependencies"][extra]
    env = {
        "python_version": python,
        "python_full_version": f"{python}.0",
        "sys_platform": sys.platform,
        "platform_system": "Linux",
        "extra": "",
    }
    build = _load_pyproject()["build-system"]
    assert isinstance(build, dict)
    reqs += build["requires"]  # what building the sdist on X.Y needs
    out = []
    for text in reqs:
        r = Requirement(text)
        if r.marker is None or r.marker.evaluate(env):
            r.marker = None
            out.append(str(r))
    return tuple(out)


def resolve(
    python: str,
    timeout: float = 240.0,
    extra: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
) -> Resolution:
    reqs = requirements_for(python) + extra
    with tempfile.TemporaryDirectory(prefix="tvmffi-resolve-") as tmp:
        report = Path(tmp) / "report.json"
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--dry-run",
            "--quiet",
            "--disable-pip-version-check",
            "--ignore-installed",
            "--retries",
            "1",
            "--timeout",
            "20",
            "--target",
            str(Path(tmp) / "t"),
            "--python-version",
            python,
            "--only-binary=:all:",
            "--report",
            str(report),
            *reqs,
        ]
        try:
            p = subprocess.run(
                cmd,
                check=False,
                capture_output=True,
                text=True,
                timeout=timeout,
                env={**os.environ, "PIP_NO_INPUT": "1", **(env or {})},
            )
        except subprocess.TimeoutExpired:
            return Resolution(python, False, True, reqs, (), f"pip took over {timeout:.0f} s")
        err = "\n".join(
            ln for ln in p.stderr.splitlines() if not ln.startswith("WARNING: Location")
        )
        if p.returncode != 0:
            lines = [ln.strip() for ln in err.splitlines() if ln.strip()]
            why = next((ln for ln in lines if ln.startswith("ERROR")), lines[-1] if lines else "")
            return Resolution(python, False, bool(_NETWORK.search(err)), reqs, (), why)
        doc = json.loads(report.read_text())
        chosen = tuple(
            sorted(f"{i['metadata']['name']}=={i['metadata']['version']}" for i in doc["install"])
        )
        return Resolution(python, True, False, reqs, chosen, "")


def resolve_all(versions: tuple[str, ...] = CLAIMED, timeout: float = 240.0) -> list[Resolution]:
    with ThreadPoolExecutor(max_workers=len(versions)) as pool:
        return list(pool.map(lambda v: resolve(v, timeout), versions))


def main() -> int:
    results = resolve_all()
    for r in results:
        if r.ok:
            print(f"python {r.python}: ok, {len(r.installed)} wheels: {' '.join(r.installed)}")
        else:
            print(
                f"python {r.python}: FAILED ({'index unreachable' if r.offline else 'no wheel'}): "
                f"{r.message}"
            )
    if all(r.offline for r in results):
        return 2
    return 0 if all(r.ok for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
