"""AutoGraph: Python control flow on tensors, staged into graph ops by ``ember.function``.

    @ember.function                      # autograph=True is the default
    def f(x, y):
        if ember.equal(y, 0.0):          # a tensor condition: staged as ember.cond
            return y
        return x / y

``ember.function`` traces the converted function: ``if``/``while``/``for`` whose condition or iterable is
a graph tensor become ``ember.cond``/``ember.while_loop``; on Python values they run as Python while
tracing (unrolled). ``to_code(f)`` shows what a function becomes. See ``api.py`` for how a function is
converted and ``operators.py`` for what the converted code calls.
"""

from ember.autograph import experimental
from ember.autograph.api import AutoGraphWarning, ConversionError, set_verbosity, to_code, to_graph, trace

__all__ = ["experimental", "set_verbosity", "to_code", "to_graph", "trace", "AutoGraphWarning", "ConversionError"]
