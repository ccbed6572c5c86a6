"""``tf.autograph.experimental``: do_not_convert, Feature, set_loop_options."""

import enum

from ember.autograph.api import do_not_convert


class Feature(enum.Enum):
    """Optional conversions (``tf.autograph.experimental.Feature``); ember accepts them all. Assert
    statements on tensors are always converted (``ASSERT_STATEMENTS`` is on)."""

    ALL = "ALL"
    AUTO_CONTROL_DEPS = "AUTO_CONTROL_DEPS"
    ASSERT_STATEMENTS = "ASSERT_STATEMENTS"
    BUILTIN_FUNCTIONS = "BUILTIN_FUNCTIONS"
    EQUALITY_OPERATORS = "EQUALITY_OPERATORS"
    LISTS = "LISTS"
    NAME_SCOPES = "NAME_SCOPES"


def set_loop_options(parallel_iterations=None, swap_memory=None, maximum_iterations=None, shape_invariants=None):
    """Options of the staged loop whose body calls this first (read by the converter; a no-op when it
    runs): ``shape_invariants=[(var, shape), ...]`` lets ``var`` change shape within ``shape``."""
    del parallel_iterations, swap_memory, maximum_iterations, shape_invariants


__all__ = ["do_not_convert", "Feature", "set_loop_options"]
