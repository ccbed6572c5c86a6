"""``ember.Module``: a container of variables and submodules found through its attributes (lists,
tuples and dicts included), with a name scope, as ``tf.Module``. Its attributes are its checkpoint
dependencies (ember/trackable.py), so ember.train.Checkpoint saves a Module as TensorFlow saves a tf.Module."""

import re

from ember.name_scope import name_scope
from ember.trackable import Trackable
from ember.variables import Variable

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-/]*$")


class Module(Trackable):
    def __init__(self, name=None):
        if name is None:
            name = _camel_to_snake(type(self).__name__)
        elif not _NAME.match(name):
            raise ValueError(f"'{name}' is not a valid module name: use letters, digits, '_', '.', '-', '/'")
        self._name = name

    @property
    def name(self):
        return self._name

    @property
    def name_scope(self):
        """``with self.name_scope:`` prefixes the names of variables created inside with the module's."""
        return name_scope(self._name)

    @property
    def variables(self):
        """Every variable reachable from this module's attributes, each once, in attribute order."""
        return tuple(self._flatten(lambda v: isinstance(v, Variable)))

    @property
    def trainable_variables(self):
        return tuple(v for v in self.variables if v.trainable)

    @property
    def non_trainable_variables(self):
        return tuple(v for v in self.variables if not v.trainable)

    @property
    def submodules(self):
        """Every module reachable from this one's attributes (not itself), breadth first."""
        return tuple(self._flatten(lambda v: isinstance(v, Module), include_self=False))

    def _flatten(self, predicate, include_self=False):
        seen, out = {id(self)}, []
        queue = [self]
        while queue:
            module = queue.pop(0)
            for value in _walk(vars(module)):
                if id(value) in seen:
                    continue
                seen.add(id(value))
                if predicate(value):
                    out.append(value)
                if isinstance(value, Module):
                    queue.append(value)
        return out

    def __repr__(self):
        return f"<{type(self).__name__} name={self._name}>"


def _walk(value):
    """Leaves of attribute values: into dicts, lists and tuples, not into other objects."""
    if isinstance(value, dict):
        for k in sorted(value, key=str):
            if isinstance(k, str) and k.startswith("_ember"):
                continue
            yield from _walk(value[k])
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _walk(v)
    else:
        yield value


def _camel_to_snake(name):
    """'MyDense' -> 'my_dense', 'MLP' -> 'mlp', 'HTTPLayer' -> 'http_layer'."""
    out = []
    for i, c in enumerate(name):
        if c.isupper() and i > 0:
            prev_lower = name[i - 1].islower() or name[i - 1].isdigit()
            starts_word = i + 1 < len(name) and name[i + 1].islower() and name[i - 1].isupper()
            if prev_lower or starts_word:
                out.append("_")
        out.append(c.lower())
    return "".join(out)
