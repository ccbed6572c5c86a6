"""``tf.distribute.OneDeviceStrategy(device)``: one replica on one device; variables live there."""

from ember.distribute import distribute_lib
from ember.distribute.mirrored_strategy import canonicalize_device


class OneDeviceStrategy(distribute_lib.Strategy):
    def __init__(self, device):
        super().__init__(distribute_lib.StrategyExtended(self, [canonicalize_device(device)]))

    def reduce(self, reduce_op, value, axis=None):
        from ember.distribute import reduce_util
        from ember.ops import math_ops

        reduce_op = reduce_util.as_reduce_op(reduce_op, "OneDeviceStrategy.reduce")
        if axis is None:
            return value
        fn = math_ops.reduce_sum if reduce_op == reduce_util.ReduceOp.SUM else math_ops.reduce_mean
        from ember.distribute import values as values_lib

        return values_lib._map(lambda v: fn(v, axis=axis), value)

    def __repr__(self):
        return f"<tf.distribute.OneDeviceStrategy device={self._extended.worker_devices[0]!r}>"
