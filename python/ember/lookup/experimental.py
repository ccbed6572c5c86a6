"""``tf.lookup.experimental``: the mutable tables."""

from ember.lookup.tables import DenseHashTable, MutableHashTable

__all__ = ["DenseHashTable", "MutableHashTable"]
