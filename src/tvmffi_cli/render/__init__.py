"""Renderers: rich output for people (one module per command) and the shared
console helper in render.common. JSON output needs none of this."""
