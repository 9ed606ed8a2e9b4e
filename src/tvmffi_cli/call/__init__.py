"""Calling one function of a library: command-line literals, the child-side call
and bench tasks, and the description of decoded values."""
