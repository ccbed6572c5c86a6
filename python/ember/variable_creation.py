"""The variable-creation rules of ember.function (000 "Functions that create state"): a function may
create variables only while it is traced for the first time; if it did, it is traced once more and that
trace must create none; any later trace that creates one is an error naming the function.

A variable created on the first trace from a value computed from the function's inputs (TF 2:
``tf.Variable(2.0 * x)``) is created at once holding zeros and recorded in ``deferred`` with its symbolic
initial value; after that trace, ember.function computes the value from the call's tensors (a graph pruned
to it, so no other op of the first trace runs) and assigns it before the second trace."""

import threading

_local = threading.local()


class CreationPolicy:
    __slots__ = ("function_name", "allowed", "created", "deferred", "from_specs", "initializes", "resources")

    def __init__(self, function_name, allowed, from_specs=False, initializes=False):
        self.function_name = function_name
        self.allowed = allowed
        self.created = []
        self.deferred = []  # (variable, symbolic initial value), in creation order
        self.from_specs = from_specs  # traced without values for its inputs: none to initialize from
        self.initializes = initializes  # whether the tracer computes `deferred` (ember.function does)
        self.resources = []  # other state made while tracing that the graph names (lookup tables)


def _stack():
    stack = getattr(_local, "stack", None)
    if stack is None:
        stack = _local.stack = []
    return stack


def push(policy):
    _stack().append(policy)


def pop():
    _stack().pop()


def check_creation(variable):
    """Called by Variable.__init__ while a function traces: records the variable or raises."""
    stack = _stack()
    if not stack:
        return  # a trace not made by ember.function (e.g. C++): no rule to apply
    policy = stack[-1]
    if not policy.allowed:
        raise ValueError(
            f"ember.function '{policy.function_name}' tried to create a variable on a trace other than its "
            "first. A function may create variables only the first time it is traced; it is then traced once "
            "more, and that trace and every later one must create none. Create variables outside the "
            "function, or only when they do not exist yet (e.g. `if self.v is None: self.v = "
            "ember.Variable(...)`).")
    policy.created.append(variable)


def keep_with_trace(resource):
    """Called by a resource other than a variable (a StaticHashTable) made while a function traces: the
    traced function keeps it alive, since its graph names it by id and nothing else may hold it."""
    stack = _stack()
    if stack:
        stack[-1].resources.append(resource)


def defer_initial_value(variable, value, name):
    """Called by Variable.__init__ for a symbolic initial value: records it for ember.function to compute
    after the first trace, or raises a ValueError saying why it cannot."""
    stack = _stack()
    if not stack or not stack[-1].allowed or not stack[-1].initializes:
        raise ValueError(f"ember.Variable {name!r}: the initial value is a symbolic tensor; create variables "
                         "from concrete values, or from the function's inputs on the first call of an "
                         "ember.function")
    policy = stack[-1]
    if policy.from_specs:
        raise ValueError(f"ember.Variable {name!r}: the initial value is computed from the inputs of "
                         f"ember.function '{policy.function_name}', which is being traced without values for "
                         "its inputs (from TensorSpecs, by get_concrete_function, or inside another trace): "
                         "there is no value to initialize it from. Call the function with tensors first, or "
                         "initialize from concrete values")
    if not value.shape.is_fully_defined():
        raise ValueError(f"ember.Variable {name!r}: the initial value is computed from the inputs of "
                         f"ember.function '{policy.function_name}' and its shape {value.shape} is not fully "
                         "known while tracing: ember creates such a variable during the first trace and needs "
                         "its exact shape. Give the function a fully known input_signature, or pass `shape` "
                         "and an initial value of concrete values")
    policy.deferred.append((variable, value))


# ---- variable creator scopes (tf.variable_creator_scope): a creator is called as
# `creator(next_creator, **kwargs)` and returns a variable, usually by calling `next_creator(**kwargs)`.
def _creators():
    creators = getattr(_local, "creators", None)
    if creators is None:
        creators = _local.creators = []
    return creators


class variable_creator_scope:  # noqa: N801 - TensorFlow's name
    """``with ember.variable_creator_scope(creator): ...``: ``ember.Variable(...)`` calls ``creator``."""

    def __init__(self, creator):
        if not callable(creator):
            raise TypeError(f"variable_creator_scope: creator must be callable, got {creator!r}")
        self._creator = creator

    def __enter__(self):
        _creators().append(self._creator)
        return self

    def __exit__(self, *exc):
        _creators().pop()
        return False


_POSITIONAL = ("initial_value", "trainable", "name", "dtype", "shape")


def create_variable(construct, args, kwargs):
    """Builds a Variable through the creators in scope (innermost first), ending at ``construct``."""
    creators = list(_creators())
    if not creators:
        return construct(*args, **kwargs)
    if len(args) > len(_POSITIONAL):
        raise TypeError(f"ember.Variable takes at most {len(_POSITIONAL)} positional arguments, got {len(args)}")
    kwargs = dict(kwargs, **dict(zip(_POSITIONAL, args)))

    def chain(index):
        if index < 0:
            return lambda **kw: construct(**kw)
        return lambda **kw: creators[index](chain(index - 1), **kw)

    return chain(len(creators) - 1)(**kwargs)


def state_for_thread():
    """This thread's stacks, for a thread that acts on its behalf (a tf.distribute replica)."""
    return {"stack": _stack(), "creators": list(_creators())}


def adopt_state(state):
    _local.stack = state["stack"]
    _local.creators = list(state["creators"])
