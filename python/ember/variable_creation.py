"""The variable-creation rules of ember.function (000 "Functions that create state"): a function may
create variables only while it is traced for the first time; if it did, it is traced once more and that
trace must create none; any later trace that creates one is an error naming the function."""

import threading

_local = threading.local()


class CreationPolicy:
    __slots__ = ("function_name", "allowed", "created")

    def __init__(self, function_name, allowed):
        self.function_name = function_name
        self.allowed = allowed
        self.created = []


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
