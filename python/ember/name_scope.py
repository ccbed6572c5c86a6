"""``ember.name_scope``: a prefix for the names of variables created inside it ("outer/inner/w:0")."""

import threading

_local = threading.local()


def current_prefix():
    stack = getattr(_local, "stack", None)
    return "".join(s + "/" for s in stack) if stack else ""


class name_scope:  # noqa: N801 - TensorFlow's name
    """``with ember.name_scope("block"): ...``"""

    def __init__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"name_scope name must be a string, got {name!r}")
        self._name = name.rstrip("/")

    @property
    def name(self):
        return current_prefix() + self._name + "/"

    def __enter__(self):
        stack = getattr(_local, "stack", None)
        if stack is None:
            stack = _local.stack = []
        stack.append(self._name)
        return current_prefix()

    def __exit__(self, *exc):
        _local.stack.pop()
        return False
