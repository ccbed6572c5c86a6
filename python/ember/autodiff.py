"""``ember.autodiff``: TensorFlow's ``tf.autodiff`` namespace."""
from ember.backprop import GradientTape  # noqa: F401
from ember.forward_accumulator import ForwardAccumulator  # noqa: F401
