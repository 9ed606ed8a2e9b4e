"""The inspect engine: what a library exports and declares (engine.py, no click)
and the child-side introspection task (task.py)."""
