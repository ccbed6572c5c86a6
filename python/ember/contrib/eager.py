"""``ember.contrib.eager``: aliases for the names the seed documents use."""

from ember.framework.tensor_spec import TensorSpec  # noqa: F401
from ember.polymorphic_function import defun, function  # noqa: F401
