"""``tf.distribute.ReduceOp``: how values from several replicas become one."""

import enum


class ReduceOp(enum.Enum):
    """``SUM`` adds the replicas' values; ``MEAN`` adds them and divides by the number of replicas."""

    SUM = "SUM"
    MEAN = "MEAN"

    @staticmethod
    def from_variable_aggregation(aggregation):
        from ember.variables import VariableAggregation

        mapping = {VariableAggregation.SUM: ReduceOp.SUM, VariableAggregation.MEAN: ReduceOp.MEAN}
        if aggregation not in mapping:
            raise ValueError(f"Could not convert from `tf.VariableAggregation` {aggregation} to "
                             "`tf.distribute.ReduceOp` type")
        return mapping[aggregation]


def as_reduce_op(value, what="reduce"):
    """A ReduceOp from a ReduceOp or its name ("sum", "MEAN"), else a ValueError naming ``what``."""
    if isinstance(value, ReduceOp):
        return value
    if isinstance(value, str) and value.upper() in ("SUM", "MEAN"):
        return ReduceOp[value.upper()]
    raise ValueError(f"{what}: reduce_op must be tf.distribute.ReduceOp.SUM or MEAN (or 'sum'/'mean'), "
                     f"got {value!r}")
