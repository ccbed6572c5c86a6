"""``ember.config``: run-time switches."""

_state = {"run_functions_eagerly": False}


def run_functions_eagerly(run_eagerly):
    """When True, ``ember.function``-decorated functions run as plain Python (breakpoints work)."""
    _state["run_functions_eagerly"] = bool(run_eagerly)
    from ember import _C

    _C.set_run_functions_eagerly(bool(run_eagerly))


def functions_run_eagerly():
    return _state["run_functions_eagerly"]


experimental_run_functions_eagerly = run_functions_eagerly
