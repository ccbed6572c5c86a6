"""The dependency graph that object-based checkpoints save: which objects an object holds, by name.

A ``Trackable`` (ember.Module, the Keras optimizers, ember.train.Checkpoint) names its children as
TensorFlow's AutoTrackable does, so a checkpoint's object graph and keys are TensorFlow's:

- an attribute whose value is a Variable, a Trackable, or a list/tuple/dict holding one (at any depth) is
  a child named after the attribute, in the order attributes were first set; other values are not saved;
- a list or tuple is a node whose children are named by index ("0", "1", ...), a dict one whose children
  are named by key (TensorFlow's ListWrapper / _TupleWrapper / DictWrapper); empty ones are nodes too;
- a Variable is a leaf that saves one value, ``VARIABLE_VALUE``.

The base holds no state: ember keeps Module's and the optimizers' attributes as they are (plain lists and
dicts), and ember.train reads them through ``children``. ``attribute_set`` is the hook for
restore-on-create: a restore that left values unmatched registers itself in ``_pending`` and, whenever a
Trackable's attribute is set to a saved kind of value (or an optimizer makes its slots), gets a chance to
match the new objects. ember keeps plain lists and dicts (TensorFlow wraps them), so an object that joins
the graph only by ``some_list.append(obj)`` is matched at the next such event, or when the restore
status is checked.
"""

_pending = []  # weak references to restores with values not yet matched (ember.train); usually empty


class Trackable:
    """Marks a class whose attributes form part of the checkpoint dependency graph."""

    def _trackable_children(self):
        """[(name, value)] of the children, in attribute order. Subclasses with other state override this."""
        return [(name, value) for name, value in vars(self).items()
                if not name.startswith("_ember") and is_trackable_value(value)]

    def __setattr__(self, name, value):
        object.__setattr__(self, name, value)
        if _pending and is_trackable_value(value):  # a new child (not an int or a flag) may be a saved one
            attribute_set()


def attribute_set():
    """Lets pending restores match objects that have appeared since (restore-on-create)."""
    for ref in list(_pending):
        restore = ref()
        if restore is None:
            _pending.remove(ref)
        else:
            restore.match_new_objects()


def is_variable(value):
    return getattr(type(value), "_ember_variable", False)


def is_trackable_value(value):
    """Whether ``value`` is saved: a Variable, a Trackable, or a container that is (TensorFlow tracks every
    list/dict attribute, even an empty one; so does ember)."""
    if is_variable(value) or isinstance(value, Trackable):
        return True
    return isinstance(value, (list, tuple, dict))


def container_children(value):
    """[(name, child)] of a list/tuple/dict node: indices or keys, only children that are themselves saved."""
    if isinstance(value, dict):
        items = []
        for key, child in value.items():
            if not is_trackable_value(child):
                continue
            if not isinstance(key, str):
                raise ValueError(f"Unable to save a dictionary with the non-string key {key!r} and the saved value "
                                 f"{child!r}: checkpoint names are strings (TensorFlow refuses it too)")
            items.append((key, child))
        return items
    return [(str(i), child) for i, child in enumerate(value) if is_trackable_value(child)]


def children(value):
    """[(name, child)] of any node of the graph (a Variable has none)."""
    if isinstance(value, Trackable):
        return value._trackable_children()
    if isinstance(value, (list, tuple, dict)):
        return container_children(value)
    return []
