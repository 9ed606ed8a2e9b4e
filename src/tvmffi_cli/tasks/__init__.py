"""Tasks that run inside the worker child process (tvmffi_cli.worker).

A task is a module tvmffi_cli.tasks.<name> with `run(request: dict) -> dict`;
both are JSON values. A task that needs a streaming protocol may also define
`serve(fd_in, fd_out)` (worker --serve <name>). Library code runs only in
tasks, never in the parent CLI process.
"""
