"""The seeds' pre-2.0 spellings (``tf.contrib.eager.defun``); ember's names are the TF 2 ones."""

from ember.contrib import eager  # noqa: F401
