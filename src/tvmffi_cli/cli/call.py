"""`tvmffi call LIB FUNC [ARGS...]`: call one function of a library in a child
process and print its result.

Typed value flags must stay in command-line order, which click does not keep
across options, so the whole argument tail is parsed by call.argv.parse_argv;
`run` is the command without click (the entry point's fast path,
cli/fastpath.py), the click command only adds --help.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any, Callable, TypeVar, Union

from ..call import argv, engine
from ..call.argv import ArgvSpec
from ..call.describe import JsonDict, JsonValue
from ..call.messages import BenchOk, CallJob, CallOk, ChildFailure, Raised
from ..errors import EXIT_FAILED, InputError
from ..sandbox.messages import Frozen
from ..sandbox.policy import Confinement
from . import sandbox_opts
from .fastpath import echo
from .sandbox_opts import CONFINE_OPTIONS, CONFINE_ROWS

# option: takes a value? (shared with `tvmffi bench`)
SHARED_OPTIONS = {
    "--json": False,
    "--timeout": True,
    "--owned-tensors": False,
    "--runtime": True,
    "-v": False,
    "--verbose": False,
    "--no-sandbox": False,
    "--memory-limit": True,
    "--stream": True,
    **CONFINE_OPTIONS,
}
CALL_OPTIONS = {**SHARED_OPTIONS, "--out": True, "--force": False, "--guard": False}

STREAM_HELP = (
    "--stream tvmffi|default",
    (
        "CUDA tensors (x.npy@cuda:0): run the call on a stream tvmffi creates (tvmffi, the "
        "default) or on the legacy default stream (default); published through "
        "TVMFFIEnvSetStream, synchronized after the call (docs/gpu.md)."
    ),
)

OPTION_HELP = [
    ("--json", "Print one JSON object (result, args after the call; or error)."),
    (
        "--out DIR",
        (
            "Write tensor arguments after the call as DIR/arg<i>.npy and a tensor "
            "result as DIR/result.npy."
        ),
    ),
    ("--force", "Overwrite existing files under --out."),
    (
        "--guard",
        (
            "Place each tensor's data right before an unreadable guard page: a read or "
            "write past its end crashes the call (exit 1) instead of passing."
        ),
    ),
    ("--timeout SECONDS", "Kill the call after this long (default 60)."),
    ("--owned-tensors", "Pass tensors as owned ffi.Tensor objects instead of DLTensor* views."),
    STREAM_HELP,
    (
        "--runtime auto|builtin|official|VERSION|PATH",
        (
            "Runtime that hosts the library (default auto: builtin when it provides every runtime "
            "symbol the library imports, else the official tvm_ffi package's; VERSION such as "
            "0.1.12 fetches that official release). `call` takes it repeated: one call per "
            "runtime, a table with a column per runtime."
        ),
    ),
    *sandbox_opts.HELP_ROWS,
    *CONFINE_ROWS,
    ("-v, --verbose", "Show the backtrace of a raised error and what the sandbox applied."),
    ("-h, --help", "Show this message and exit."),
]

DEFAULT_TIMEOUT = engine.DEFAULT_TIMEOUT


def run(tokens: list[str]) -> int | None:
    """The command: its exit code, or None when help was asked for."""
    parsed = argv.parse_argv(list(tokens), CALL_OPTIONS, cwd=os.getcwd())
    if parsed.help:
        return None
    assert parsed.func is not None  # parse_argv sets LIB and FUNC unless --help
    opts = parsed.options
    as_json = bool(opts.get("--json"))
    verbose = bool(opts.get("-v") or opts.get("--verbose"))
    runtimes = parsed.repeated.get("--runtime", [])
    if len(runtimes) > 1:
        if opts.get("--out"):
            raise InputError("--out takes one --runtime (the runs would write the same files)")
        return call_matrix(parsed, Shared.of(parsed), runtimes, as_json)
    job = base_request(parsed)
    # verbose: a crash keeps the runtime's own report (backtrace)
    request = replace(job.request, guard=bool(opts.get("--guard")), verbose=verbose)
    out_dir = opts.get("--out")
    if out_dir:
        out_dir = os.path.abspath(out_dir)
        if os.path.exists(out_dir) and not os.path.isdir(out_dir):
            raise InputError(f"--out {opts['--out']}: not a directory")
        try:  # before the call: a directory that cannot be made is bad input
            os.makedirs(out_dir, exist_ok=True)
        except OSError as e:
            raise InputError(f"--out {opts['--out']}: cannot create ({e.strerror or e})") from None
        if not os.access(out_dir, os.W_OK | os.X_OK):
            raise InputError(f"--out {opts['--out']}: not writable")
        if not opts.get("--force"):
            from ..call.specs import Positional, TensorArg

            tensor_idx = [
                i
                for i, s in enumerate(parsed.args)
                if isinstance(s.spec if isinstance(s, Positional) else s, TensorArg)
            ]
            from ..call.task import planned_outputs

            for p in planned_outputs(out_dir, tensor_idx):
                if os.path.exists(p):
                    raise InputError(f"{p} exists; pass --force to overwrite")
        request = replace(request, out=out_dir, force=bool(opts.get("--force")))
    job = replace(job, request=request)
    reply = run_in_child(job, as_json, verbose, engine.run_call)
    if isinstance(reply, int):
        return reply
    if isinstance(reply, Raised):
        if as_json:
            emit_json(with_runtime(engine.raised_json(reply), job), request.path)
        else:
            from ..render import call as render

            echo(render.raised_text(reply.error, verbose), err=True)
            note_memory(verbose)
        return EXIT_FAILED
    if as_json:
        emit_json(with_runtime(engine.call_json(reply, parsed.func, request.path), job))
    else:
        from .. import text
        from ..render import call as render
        from ..render.common import fit_lines

        echo(fit_lines(text.terminal(render.call_text(reply))))
        for note in reply.notes:
            echo(f"note: {text.one_line(note)}", err=True)
        note_runtime(job, verbose)
    return 0


class Shared(Frozen):
    """The options call and bench share, typed out of the parsed command line
    (Frozen: made a dataclass on first use, off call's start-up path)."""

    timeout: str | None
    runtime: str | None
    owned_tensors: bool
    stream: str | None
    no_sandbox: bool
    memory_limit: str | None
    confine: Confinement

    @classmethod
    def of(cls, parsed: ArgvSpec, timeout: str | None = None) -> Shared:
        """`timeout`: the default when --timeout is not given (None: call's)."""
        o = parsed.options
        given = o.get("--timeout")
        return cls(
            timeout=timeout if given is None else str(given),
            runtime=o.get("--runtime"),
            owned_tensors=bool(o.get("--owned-tensors")),
            stream=o.get("--stream"),
            no_sandbox=bool(o.get("--no-sandbox")),
            memory_limit=o.get("--memory-limit"),
            confine=sandbox_opts.confine_from(parsed),
        )

    @property
    def tensor_mode(self) -> str:
        return "object" if self.owned_tensors else "dltensor"

    def apply_sandbox(self) -> None:
        sandbox_opts.apply(self.no_sandbox, self.memory_limit, self.confine)


def call_matrix(parsed: ArgvSpec, shared: Shared, runtimes: list[str], as_json: bool) -> int:
    """The same call once per --runtime, one table (or JSON) with a column per runtime."""
    from ..call import matrix

    shared.apply_sandbox()
    assert parsed.lib is not None and parsed.func is not None  # parse_argv sets them
    m = matrix.run_matrix(
        parsed.lib,
        parsed.func,
        parsed.args,
        runtimes,
        timeout=parse_timeout(shared.timeout),
        tensor_mode=shared.tensor_mode,
    )
    if m.exit_code() == 2:
        raise InputError(m.runs[0].message)  # refused on every runtime: as a single run
    if as_json:
        from . import jsonout

        runs: list[JsonValue] = []
        for r in m.runs:  # each run's document is the one a single call prints
            run = r.to_json()
            if r.document is not None:
                err = r.document.get("error")
                run["document"] = jsonout.contract(
                    r.document,
                    library=m.library,
                    runtime=run["runtime"],
                    errors=[err] if isinstance(err, dict) else [],
                )
            runs.append(run)
        emit_json({**m.to_json(), "runs": runs})
        return m.exit_code()
    from ..render import call as render_call
    from ..render import matrix as render_matrix
    from ..render.common import make_console

    def cell(r: matrix.CallRun) -> str:
        if r.reply is not None:
            return "ok " + render_call.call_text(r.reply).splitlines()[0]
        return f"{'FAIL' if r.exit_code == 1 else 'refused'} {r.status}: {r.message}"

    render_matrix.render(
        make_console(),
        f"tvmffi call {m.library} {m.function}",
        [r.label for r in m.runs],
        [("result", [cell(r) for r in m.runs])],
        [r.exit_code == 0 for r in m.runs],
    )
    return m.exit_code()


def base_request(parsed: ArgvSpec, shared: Shared | None = None) -> CallJob:
    """The request shared by call and bench (library, function, argument specs);
    `shared`: the options (None: read from `parsed`, as call reads them)."""
    if shared is None:
        shared = Shared.of(parsed)
    if len(parsed.repeated.get("--runtime", [])) > 1:
        raise InputError("--runtime repeats only on `call` and `conform`")
    assert parsed.lib is not None and parsed.func is not None  # parse_argv sets them
    job = engine.make_request(
        parsed.lib,
        parsed.func,
        parsed.args,
        timeout=parse_timeout(shared.timeout),
        runtime=shared.runtime,
        tensor_mode=shared.tensor_mode,
        stream=shared.stream,
    )
    shared.apply_sandbox()
    return job


def with_runtime(doc: JsonDict, job: CallJob) -> JsonDict:
    """The --json document with the runtime that hosted the library."""
    return {**doc, "runtime": job.runtime.to_json()}


def note_memory(verbose: bool) -> None:
    """-v: how the worker's memory was bounded (the sandbox's mechanism)."""
    if verbose:
        from . import sandbox_opts

        line = sandbox_opts.memory_line()
        if line is not None:
            echo(f"tvmffi: {line}", err=True)


def note_runtime(job: CallJob, verbose: bool) -> None:
    """Say on stderr which runtime hosted the library when it is not the
    builtin one (or always under -v), so stdout stays the result alone."""
    from ..ffi.hosts import lacks_notes

    rc = job.runtime
    if rc.kind != "builtin" or verbose:
        echo(f"runtime: {rc.label()} ({rc.reason})", err=True)
    for note in lacks_notes(rc.lacks) if verbose else []:
        echo(f"note: {note}", err=True)
    note_memory(verbose)


def parse_timeout(text: str | None) -> float:
    from .numbers import seconds

    return DEFAULT_TIMEOUT if text is None else seconds(text, "--timeout")


def emit_json(doc: JsonDict, library: str | None = None) -> None:
    """The --json document with the contract keys (cli/jsonout.py); `errors`
    holds the error that ended the call, if any."""
    from . import jsonout

    err = doc.get("error")
    jsonout.emit(
        doc,
        library=library,
        runtime=doc.get("runtime"),
        errors=[err] if isinstance(err, dict) else [],
    )


_Ok = TypeVar("_Ok", CallOk, BenchOk)


def run_in_child(
    job: CallJob,
    as_json: bool,
    verbose: bool,
    runner: Callable[[CallJob], Union[_Ok, Raised, ChildFailure]],
) -> Union[_Ok, Raised, int]:
    """Run the job in the sandbox (call/engine.py run_call or run_bench).
    Returns the reply, or an exit code after printing a one-line report of a
    crash or timeout (-v adds what the worker wrote on stderr, e.g. the fault
    handler's stack)."""
    try:
        outcome = runner(job)
    finally:
        if not as_json:
            from . import sandbox_opts

            sandbox_opts.report(False)
    if isinstance(outcome, ChildFailure):
        if as_json:
            emit_json(with_runtime(outcome.to_json(), job), job.request.path)
        else:
            from .. import text

            echo(f"tvmffi: error: {text.one_line(outcome.message)}", err=True)
            if verbose and outcome.kind == "Crash" and outcome.stderr:
                echo(text.terminal(outcome.stderr.rstrip()), err=True)
        return EXIT_FAILED
    return outcome


def raw_command_class() -> Any:
    """click.Command whose help lists the options parsed by hand (call, bench)."""
    import click

    class RawCommand(click.Command):
        def __init__(self, *a: Any, option_help: Any = (), **kw: Any) -> None:
            super().__init__(*a, **kw)
            self.option_help = list(option_help)

        def format_usage(self, ctx: Any, formatter: Any) -> None:
            formatter.write_usage(ctx.command_path, "LIB FUNC [ARGS]... [OPTIONS]")

        def format_options(self, ctx: Any, formatter: Any) -> None:
            with formatter.section("Argument flags (in order; do not mix with positional ARGS)"):
                rows = [
                    (f"{k} VALUE" if k != "--none" else k, v) for k, v in argv.ARG_FLAGS.items()
                ]
                formatter.write_dl(rows)
            with formatter.section("Options"):
                formatter.write_dl(self.option_help)

    return RawCommand


def raw_command(name: str, option_help: Any, body: Any, doc: str) -> Any:
    """The click command `name` over body(tokens) -> exit code | None (help)."""
    import click

    def command(ctx: Any, tokens: tuple[str, ...]) -> int:
        rc = body(list(tokens))
        if rc is None:
            click.echo(ctx.get_help())
            return 0
        return int(rc)

    command.__doc__ = doc
    make: Any = click.command  # its overloads cannot see the Any of cls=
    return make(
        name,
        cls=raw_command_class(),
        option_help=option_help,
        add_help_option=False,
        context_settings={"ignore_unknown_options": True, "allow_interspersed_args": False},
    )(click.argument("tokens", nargs=-1, type=click.UNPROCESSED)(click.pass_context(command)))


HELP = """Call FUNC of the library LIB once, in a child process, and print the result.

    \b
    tvmffi call LIB FUNC [ARGS...]
    tvmffi call lib.so add_one --tensor x.npy
    tvmffi call lib.so mul3 2 3 7
    tvmffi call lib.so sum '[1,2,3]'
    tvmffi call lib.so my_ext.add --int 1 --int 2 --json

    FUNC is the export __tvm_ffi_FUNC, else a global function the library
    registers when it loads (dotted names are always globals).

    Positional ARGS are converted by the function's type schema when the
    library has one, else guessed: int, float, true/false, none, a JSON list
    (Array) or object (Map), "quoted" text, an existing .npy file or a tensor
    literal such as float32[2,3]:arange, otherwise a string.

    A tensor with @cuda[:N] (x.npy@cuda, float32[4]:rand@cuda) is placed on that
    CUDA device, copied back after the call (docs/gpu.md).

    Input files are never modified: .npy files are mapped copy-on-write.
    Exit status: 0 success, 1 the function raised, crashed or timed out, or
    the library could not be loaded (a missing dependency), 2 bad arguments.
"""


def lazy_command(
    namespace: dict[str, object], name: str, option_help: Any, body: Any, doc: str
) -> Any:
    """A module __getattr__ that builds the click command on first use, so the
    fast path (and importing the module) never imports click."""

    def __getattr__(attr: str) -> Any:
        if attr == "command":
            cmd = raw_command(name, option_help, body, doc)
            namespace["command"] = cmd
            return cmd
        raise AttributeError(attr)

    return __getattr__


__getattr__ = lazy_command(globals(), "call", OPTION_HELP, run, HELP)
