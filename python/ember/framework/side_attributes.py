"""Attributes kept beside tensors. ember's Tensor has no instance dictionary (its objects are made in C), so
what Keras and TensorFlow hang on a tensor object (``_keras_mask``, ``_keras_logits``) lives in a side table
keyed by the tensor's id, each entry dropped by a weak reference's callback when its tensor dies."""

import weakref


class SideAttribute:
    """One attribute kept beside the objects that have it: id(object) -> (weak reference, value)."""

    def __init__(self, name):
        self.name = name
        self.table = {}

    def get(self, obj):
        entry = self.table.get(id(obj))
        if entry is None or entry[0]() is not obj:
            return None
        return entry[1]

    def set(self, obj, value):
        key, table = id(obj), self.table
        if value is None:
            table.pop(key, None)
            return
        table[key] = (weakref.ref(obj, lambda _, key=key: table.pop(key, None)), value)


# The input of a tf.nn.softmax traced into a function, by its output: Keras' cross-entropies take a graph
# tensor made by a (last-axis) Softmax as probabilities whose logits are that input, as tf_keras does.
softmax_input = SideAttribute("softmax_input")
