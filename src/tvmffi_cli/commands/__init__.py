"""One module per command; each exposes `command` (a click.Command). Commands stay
thin: they parse flags, call the library modules, and hand results to renderers."""
