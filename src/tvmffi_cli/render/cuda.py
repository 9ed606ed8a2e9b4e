"""The "CUDA code" branch of `tvmffi inspect`'s tree: the fat binaries nvcc
linked into a library (the report's "cuda", binary/fatbin.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from .common import human_size

if TYPE_CHECKING:
    from rich.tree import Tree

#: Entries listed one per line; more are summed up.
ENTRY_LINES = 32
#: Kernel names shown, each cut to NAME_WIDTH characters.
KERNEL_NAMES = 3
NAME_WIDTH = 60


def _cut(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 1] + "…"


def short_kernel_name(name: str) -> str:
    """A C++ kernel's own name from its Itanium-mangled symbol, for the tree
    only (`_ZN5liger6detail7moe_fwdILi4EEEvT_` -> `moe_fwd<…>`; the JSON keeps
    the symbol): the last name of the nested name, `<…>` when templated.
    Names that are not mangled (extern "C" kernels) are kept."""
    at = name.find("_Z")
    if at < 0 or (at and not name.startswith("__nv_static_")):
        return name
    i, n = at + 2, len(name)
    i += name[i] == "L" if i < n else 0  # internal linkage
    nested = i < n and name[i] == "N"
    if nested:
        i += 1
        while i < n and name[i] in "rVKRO":  # qualifiers of a member function
            i += 1
    last = ""
    while i < n and name[i].isdigit():
        j = i
        while j < n and name[j].isdigit():
            j += 1
        size = int(name[i:j]) if j - i < 6 else n
        if size > n - j:
            return name
        last, i = name[j : j + size], j + size
        if not nested:
            break
    if not last:
        return name
    return last + ("<…>" if i < n and name[i] == "I" else "")


def _counts(group: dict[str, int]) -> str:
    return ", ".join(f"{k} ×{n}" if n > 1 else k for k, n in group.items())


# Both render the `cuda` object of inspect's --json document (its schema:
# schemas/inspect.schema.json), as inspect and the wheel reports hold it.
def _entry_line(e: dict[str, Any], escape: Callable[[str], str]) -> str:
    label = {"sass": "ELF", "ptx": "PTX"}.get(e["kind"], "?")
    line = f"{label} {escape(e['name'] or e['kind'])}  {human_size(e['size'])}"
    if e["compression"] != "none":
        line += f" {e['compression']}"
        if e.get("uncompressed_size"):
            line += f" (of {human_size(e['uncompressed_size'])})"
    if e["kernel_count"] is not None:
        line += f", {e['kernel_count']} kernel{'' if e['kernel_count'] == 1 else 's'}"
    else:
        line += f", [dim]kernel names not read: {escape(e['kernels_note'] or '?')}[/]"
    if e["truncated"]:
        line += " [red](truncated)[/]"
    return line


def add_cuda(tree: Tree, cuda: dict[str, Any], escape: Callable[[str], str]) -> None:
    """Add the CUDA code branch for a report's non-null "cuda"."""
    where = ", ".join(f"{s['name']} {human_size(s['size'])}" for s in cuda["sections"])
    node = tree.add(f"[bold]CUDA code[/] ({where or 'no fat binary section'})")
    loaded = cuda["loaded"]
    summary = cuda["summary"].get(loaded, {})
    node.add("SASS: " + (", ".join(cuda["sass"]) or "[yellow]none[/]"))
    node.add(
        "PTX: "
        + (
            ", ".join(cuda["ptx"]) + " (the driver JIT-compiles it for GPUs without SASS)"
            if cuda["ptx"]
            else "none (no JIT: only GPUs the SASS is for can run it)"
        )
    )
    comp = summary.get("compression", {})
    total = sum(comp.values())
    packed = {k: n for k, n in comp.items() if k != "none"}
    node.add(
        "compression: "
        + (", ".join(f"{k} {n} of {total}" for k, n in packed.items()) if packed else "none")
    )
    names = cuda["kernels"]
    label = f"kernels ({cuda['kernel_count']}"
    if cuda["kernels_unread"]:
        n = cuda["kernels_unread"]
        label += f"; names of {n} entr{'y' if n == 1 else 'ies'} not read"
    label += ")"
    if names:
        short = list(dict.fromkeys(short_kernel_name(k) for k in names))
        shown = ", ".join(escape(_cut(k)) for k in short[:KERNEL_NAMES])
        label += ": " + shown + (", …" if len(short) > KERNEL_NAMES else "")
    node.add(label)
    entries = [e for e in cuda["entries"] if e["role"] == loaded]
    enode = node.add(f"entries ({total})")
    for e in entries[:ENTRY_LINES]:
        enode.add(_entry_line(e, escape))
    if total > min(len(entries), ENTRY_LINES):
        enode.add(f"[dim]… {total - min(len(entries), ENTRY_LINES)} more (--json lists them)[/]")
    other = cuda["summary"].get("relocatable") if loaded == "executable" else None
    if other:
        n = sum(other.get("compression", {}).values())
        parts = [f"SASS {_counts(other['sass'])}" if other.get("sass") else ""]
        parts.append(f"PTX {_counts(other['ptx'])}" if other.get("ptx") else "")
        node.add(
            f"relocatable device code (input of the device link, not loaded): {n} entries: "
            + "; ".join(p for p in parts if p)
        )
    devices = cuda.get("devices") or ([cuda["device"]] if cuda.get("device") else [])
    for device in devices:
        verdict = {
            "sass": f"[green]SASS {device['arch']}[/]",
            "ptx": f"[yellow]PTX JIT of {device['arch']}[/] (the first load compiles it)",
        }.get(device["verdict"], f"[red]nothing it can run[/] ({escape(device['reason'])})")
        who = device.get("device", "this GPU")
        name = f" {escape(device['name'])}" if device.get("name") else ""
        node.add(f"{who}{name} (compute capability {device['compute_capability']}): {verdict}")
    if not devices and cuda.get("devices_note"):
        node.add(f"[dim]GPUs here: none judged ({escape(cuda['devices_note'])})[/]")
