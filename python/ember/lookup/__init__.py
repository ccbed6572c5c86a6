"""``tf.lookup``: key-value tables (TensorFlow's names and arguments).

A table is a C++ resource (core/lookup_table.h) owned by its Python object, as a variable's value is owned
by its ``ember.Variable``; the table ops (ops/lookup.cc) name it by id, so a table created outside an
``ember.function`` and used inside it becomes graph nodes that automatic control dependencies order (an
``insert`` before a ``lookup`` in program order runs first). Design: docs/lookup.md.
"""

from ember.lookup import experimental
from ember.lookup.tables import (KeyValueTensorInitializer, StaticHashTable, StaticVocabularyTable,
                                 TextFileIndex, TextFileInitializer)

__all__ = ["KeyValueTensorInitializer", "StaticHashTable", "StaticVocabularyTable", "TextFileIndex",
           "TextFileInitializer", "experimental"]
