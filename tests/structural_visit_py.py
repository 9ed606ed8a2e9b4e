"""Python callbacks driving the ffi.Structural* globals, on one runtime; run
as a script in its own process and print one JSON list of result lines:

    python tests/structural_visit_py.py official      # the tvm_ffi package
    python tests/structural_visit_py.py ours          # our runtime (tvmffi_cli.ffi)

The same steps call the same globals with the same Python values and
callbacks (lists become ffi.Array, dicts ffi.Map, callables ffi.Function),
as tvm_ffi/structural.py does; values are printed in one canonical form.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Callable
from typing import Any


class Side:
    def __init__(self, which: str) -> None:
        self.which = which
        if which == "official":
            import tvm_ffi

            self.tvm_ffi: Any = tvm_ffi
        else:
            from tvmffi_cli.ffi import paths, values
            from tvmffi_cli.ffi.runtime import get_runtime

            self.values: Any = values
            self.rt = get_runtime(paths.runtime_library())

    def g(self, name: str) -> Callable[..., Any]:
        if self.which == "official":
            f: Callable[..., Any] = self.tvm_ffi.get_global_func(name)
            return f
        fn: Callable[..., Any] = self.values.global_func(self.rt, name)
        return fn

    def canon(self, v: Any) -> Any:
        if v is None or isinstance(v, (bool, int, float, str, bytes)):
            return v
        if self.which == "official":
            tf = self.tvm_ffi
            if isinstance(v, (tf.Array, tf.List, list, tuple)):
                return [self.canon(x) for x in v]
            if isinstance(v, (tf.Map, tf.Dict, dict)):
                return {str(self.canon(k)): self.canon(x) for k, x in v.items()}
            if isinstance(v, tf.core.Object):
                key = type(v).__name__
                if hasattr(v, "value") and key == "VisitInterrupt":
                    return ["VisitInterrupt", self.canon(v.value)]
                return f"<{v.__tvm_ffi_type_info__.type_key}>"
            return repr(v)
        if isinstance(v, (list, tuple)):
            return [self.canon(x) for x in v]
        if isinstance(v, dict):
            return {str(self.canon(k)): self.canon(x) for k, x in v.items()}
        if getattr(v, "type_index", None) == 77:  # kTVMFFIVisitInterrupt
            return ["VisitInterrupt", self.canon(v.fields["value"])]
        return f"<{type(v).__name__}>"

    def error(self, e: Exception) -> str:
        kind = getattr(e, "kind", None) or type(e).__name__
        return f"{kind}: {str(e).splitlines()[0] if str(e) else ''}"


def scenarios(s: Side) -> list[Any]:
    out: list[Any] = []
    walk, visit = s.g("ffi.StructuralWalk"), s.g("ffi.StructuralVisit")
    smap, mutate = s.g("ffi.StructuralMap"), s.g("ffi.StructuralMutate")
    vvisit, vdefault = s.g("ffi.StructuralVisitorVisit"), s.g("ffi.StructuralVisitorDefaultVisit")
    vkind, vwith = (
        s.g("ffi.StructuralVisitorDefRegionKind"),
        s.g("ffi.StructuralVisitorWithDefRegionKind"),
    )
    mmut, mdef = s.g("ffi.StructuralMutatorMutate"), s.g("ffi.StructuralMutatorDefaultMutate")
    mkind = s.g("ffi.StructuralMutatorDefRegionKind")
    root = [1, 2.5, "short", "a longer string here", None, True, [3, [4, "x"]], {"k": 5, "j": [6]}]
    INT, FLOAT, STR, ANY = 1, 3, 65, -1

    def run(label: str, f: Callable[[], Any]) -> None:
        try:
            out.append([label, s.canon(f())])
        except Exception as e:  # the error is the result
            out.append([label, "raised " + s.error(e)])

    log: list[Any] = []

    def logger(tag: str) -> Callable[[Any], None]:
        return lambda v: log.append([tag, s.canon(v)])

    for order in (0, 1):
        run(f"walk {order}", functools.partial(walk, root, [(ANY, logger("any"))], [], order))
        out.append([f"walk {order} log", log[:]])
        log.clear()
    run(
        "walk kinds",
        lambda: walk(root, [(INT, logger("int"))], [(STR, lambda v, k: log.append([v, k]))], 1),
    )
    out.append(["walk kinds log", log[:]])
    log.clear()

    def skip_lists(v: Any) -> int:
        log.append(s.canon(v))
        return 1 if isinstance(s.canon(v), list) and v is not None and len(s.canon(v)) == 2 else 0

    run("walk skip", lambda: walk(root, [(ANY, skip_lists)], [], 0))
    out.append(["walk skip log", log[:]])
    log.clear()
    interrupt = s.g("ffi.VisitInterrupt")
    run(
        "walk interrupt",
        lambda: walk(root, [(INT, lambda v: interrupt(v) if v == 4 else None)], [], 1),
    )

    def boom(v: Any) -> None:
        raise ValueError(f"no floats: {v}")

    run("walk raises", lambda: walk(root, [(FLOAT, boom)], [], 0))
    run("walk returns str", lambda: walk(root, [(INT, lambda v: "x")], [], 0))

    def vcb(v: Any, vis: Any) -> Any:
        log.append([s.canon(v), vkind(vis)])
        if s.canon(v) == [3, [4, "x"]]:
            return vwith(vis, 1, lambda: vdefault(vis, v))
        if isinstance(s.canon(v), dict):
            return None
        return vdefault(vis, v)

    run("visit", lambda: visit(root, [(ANY, vcb)]))
    out.append(["visit log", log[:]])
    log.clear()

    def first_only(v: Any, vis: Any) -> Any:
        log.append(s.canon(v))
        return vvisit(vis, v[0]) if isinstance(s.canon(v), list) else None

    run("visit first", lambda: visit([[1, 2], 3], [(ANY, first_only)]))
    out.append(["visit first log", log[:]])
    log.clear()
    run("visit bad result", lambda: visit(root, [(INT, lambda v, vis: 5)]))

    for order in (0, 1):
        run(
            f"map ints {order}", functools.partial(smap, root, [(INT, lambda v: v * 10)], [], order)
        )
    run("map strings", lambda: smap(root, [(STR, lambda v: v + "!")], [], 1))
    run("map kinds", lambda: smap(root, [], [(FLOAT, lambda v, k: [v, k])], 1))
    run("map replace list", lambda: smap(root, [(ANY, lambda v: 0 if v == [4, "x"] else v)], [], 1))

    def mraise(v: Any) -> Any:
        raise RuntimeError(f"bad {v}")

    run("map raises", lambda: smap(root, [(STR, mraise)], [], 1))

    def mcb(v: Any, m: Any, mode: int) -> Any:
        log.append([s.canon(v), mode, mkind(m)])
        return [mmut(m, x) for x in reversed(v)]

    run("mutate", lambda: mutate(root, [(ANY_ARRAY, mcb, True), (INT, lambda v, m: -v, False)]))
    out.append(["mutate log", log[:]])
    log.clear()
    run("mutate default", lambda: mutate(root, [(ANY_ARRAY, lambda v, m: mdef(m, v), False)]))
    run("mutate bad table", lambda: mutate(root, [(INT, lambda v, m: v)]))
    run("walk nargs", lambda: walk(root))
    return out


ANY_ARRAY = 71  # kTVMFFIArray


def main() -> None:
    side = Side(sys.argv[1])
    print(json.dumps(scenarios(side)))


if __name__ == "__main__":
    main()
