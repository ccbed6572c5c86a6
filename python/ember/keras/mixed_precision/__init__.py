"""``tf.keras.mixed_precision``: dtype policies (``Policy``, ``global_policy``, ``set_global_policy``), the
variables that read as the compute dtype inside a layer's call, and ``LossScaleOptimizer`` (docs/keras.md,
"Mixed precision")."""

from ember.keras.mixed_precision.policy import Policy, global_policy, set_global_policy  # noqa: F401
from ember.keras.mixed_precision.loss_scale_optimizer import LossScaleOptimizer  # noqa: F401

__all__ = ["Policy", "global_policy", "set_global_policy", "LossScaleOptimizer"]
