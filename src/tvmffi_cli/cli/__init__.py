"""The command line: click commands, thin. main.py is the entry point (with the
click-free fast path of `inspect --static --json`), app.py the click group, and
one module per command, each exposing `command` (a click.Command). Commands parse
flags, call the engines and hand results to renderers."""
