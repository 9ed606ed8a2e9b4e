"""Run library code in a child process: process.py (parent side: Worker,
run_task), worker.py (child main). Tasks are modules named by dotted path under
tvmffi_cli (e.g. "call.task") defining run(request) and/or serve(fd_in, fd_out)."""
