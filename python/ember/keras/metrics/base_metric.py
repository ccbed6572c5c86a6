"""The base of ``ember.keras.metrics``: ``Metric`` (a stateful Layer), and the reducing metrics ``Sum``,
``Mean`` and ``MeanMetricWrapper`` on which most others are built, with Keras 2's (``tf_keras``) semantics.

A metric keeps its state in non-trainable variables made by ``add_weight`` (zeros by default, created
eagerly even when the first update is traced), accumulates it with ``update_state(...)``, reads it with
``result()`` and clears it with ``reset_state()``; calling the metric does an update and returns the
result. Every update is made of ember ops, so the same metric updates eagerly and inside ember.function.

Sample weights follow Keras 2: a weight of rank one less than the values gains a trailing axis, one of rank
one more loses its trailing 1; a weight that still does not broadcast to the values makes the values be
averaged (summed, for Sum) over their trailing axes first. A weight that fits neither way raises an
InvalidArgumentError naming the metric and both shapes.
"""

from ember import errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.keras import losses as losses_lib
from ember.keras.engine.base_layer import Layer
from ember.ops import array_ops, math_ops, no_nan_ops


def _invalid(what, message):
    return errors.InvalidArgumentError(None, None, f"{what}: {message}")


def to_tensor(x, what, name, dtype=None):
    """``x`` as a tensor (cast to ``dtype``), or an InvalidArgumentError naming the metric and argument."""
    try:
        x = x if isinstance(x, Tensor) else convert_to_tensor(x)
    except (TypeError, ValueError) as e:
        raise _invalid(what, f"{name} must be a tensor or something convertible to one; got {x!r} ({e})")
    if not (x.dtype.is_floating or x.dtype.is_integer or x.dtype.is_bool):
        raise _invalid(what, f"{name} must be numeric or boolean; got a tensor of dtype {x.dtype.name}")
    return math_ops.cast(x, dtype) if dtype is not None and x.dtype != dtype else x


def divide_no_nan(x, y):
    """x / y, and 0 where y is 0 (tf.math.divide_no_nan, as tf_keras's metrics call it)."""
    return no_nan_ops.divide_no_nan(x, y)


def broadcastable_weights(weights, values):
    """Whether ``weights`` broadcast to ``values`` as TensorFlow's broadcast_weights allows: a scalar, or the
    same rank with each dimension 1 or equal (unknown dimensions are taken to agree)."""
    if weights.shape.rank == 0:
        return True
    if weights.shape.rank is None or values.shape.rank is None:
        return True
    if weights.shape.rank != values.shape.rank:
        return False
    return all(w is None or v is None or w == 1 or w == v
               for w, v in zip(weights.shape.as_list(), values.shape.as_list()))


def broadcast_weights(weights, values, what):
    if not broadcastable_weights(weights, values):
        raise _invalid(what, f"sample_weight of shape {weights.shape.as_list()} does not broadcast to the values "
                             f"of shape {values.shape.as_list()}")
    return weights * array_ops.ones_like(values)


def _global_result(result):
    """``result`` read once for all replicas inside a tf.distribute replica (Keras 2's result wrapper): the
    state is synchronized on read, so only a cross-replica read sees every replica's updates."""
    import functools

    @functools.wraps(result)
    def wrapper(self):
        from ember.distribute import distribute_lib

        if distribute_lib.in_distributed_replica_context():
            return distribute_lib.get_replica_context().merge_call(lambda _: result(self))
        return result(self)

    return wrapper


class Metric(Layer):
    """The base of Keras metrics: state in variables, ``update_state``, ``result``, ``reset_state``."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "result" in cls.__dict__:
            cls.result = _global_result(cls.__dict__["result"])

    def __init__(self, name=None, dtype=None, **kwargs):
        from ember.keras import backend

        # A metric's state keeps floatx() under a mixed precision policy (its variables are not autocast).
        super().__init__(name=name, dtype=dtype if dtype is not None else backend.floatx(), **kwargs)
        self.stateful = True
        self.built = True

    def __call__(self, *args, **kwargs):
        """Accumulates ``update_state(*args, **kwargs)`` and returns the result so far."""
        self.update_state(*args, **kwargs)
        return self.result()

    def __str__(self):
        args = ",".join(f"{k}={v}" for k, v in self.get_config().items())
        return f"{type(self).__name__}({args})"

    def update_state(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must implement update_state()")

    def result(self):
        raise NotImplementedError(f"{type(self).__name__} must implement result()")

    def reset_state(self):
        """Sets every state variable back to zero."""
        for v in self.variables:
            v.assign(array_ops.zeros(v.shape.as_list(), v.dtype))

    def reset_states(self):  # Keras 2's deprecated spelling
        return self.reset_state()

    def merge_state(self, metrics):
        """Adds the state of ``metrics`` (of the same kind) to this one's."""
        for metric in metrics:
            if len(self.weights) != len(metric.weights):
                raise ValueError(f"Metric {metric} is not compatible with {self}")
            for weight, other in zip(self.weights, metric.weights):
                weight.assign_add(other)

    def add_weight(self, name, shape=(), aggregation=None, synchronization=None, initializer="zeros", dtype=None):
        """A non-trainable state variable (zeros unless ``initializer`` says otherwise)."""
        # Synchronized on read, as Keras' metrics are: under a tf.distribute strategy each replica updates its
        # own copy and reading the metric in cross-replica context adds the copies up.
        from ember.variables import VariableAggregation, VariableSynchronization

        synchronization = synchronization or VariableSynchronization.ON_READ
        aggregation = aggregation or VariableAggregation.SUM
        return super().add_weight(name=name, shape=shape, dtype=self._dtype if dtype is None else dtype,
                                  synchronization=synchronization, aggregation=aggregation,
                                  trainable=False, initializer=initializer)

    def get_config(self):
        return {"name": self.name, "dtype": self.dtype}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class Reduce(Metric):
    """Sums values ('sum'), or divides the sum by their number ('sum_over_batch_size') or by the sum of the
    weights ('weighted_mean')."""

    def __init__(self, reduction, name, dtype=None):
        super().__init__(name=name, dtype=dtype)
        if reduction not in ("sum", "sum_over_batch_size", "weighted_mean"):
            raise ValueError(f'Reduction "{reduction}" not implemented. Expected "sum", "weighted_mean", or '
                             '"sum_over_batch_size".')
        self.reduction = reduction
        self.total = self.add_weight("total")
        if reduction in ("sum_over_batch_size", "weighted_mean"):
            self.count = self.add_weight("count")

    def update_state(self, values, sample_weight=None):
        values = to_tensor(values, self.name, "values", self._dtype)
        if sample_weight is not None:
            sample_weight = to_tensor(sample_weight, self.name, "sample_weight", self._dtype)
            values, _, sample_weight = losses_lib.squeeze_or_expand_dimensions(values, None, sample_weight)
            if broadcastable_weights(sample_weight, values):
                sample_weight = sample_weight * array_ops.ones_like(values)
            else:
                # Keras 2: reduce the values over the axes the weight lacks, then weight what is left.
                ndim, weight_ndim = values.shape.rank, sample_weight.shape.rank
                reduce = math_ops.reduce_sum if self.reduction == "sum" else math_ops.reduce_mean
                reduced = reduce(values, axis=list(range(weight_ndim, ndim))) if weight_ndim < ndim else values
                if weight_ndim >= ndim or not broadcastable_weights(sample_weight, reduced):
                    raise _invalid(self.name, f"sample_weight of shape {sample_weight.shape.as_list()} does not "
                                              f"fit values of shape {values.shape.as_list()}")
                values = reduced
            values = values * sample_weight
        self.total.assign_add(math_ops.reduce_sum(values))
        if self.reduction == "sum":
            return
        if self.reduction == "weighted_mean" and sample_weight is not None:
            num_values = math_ops.reduce_sum(sample_weight)
        else:
            num_values = math_ops.cast(array_ops.size(values), self._dtype)
        self.count.assign_add(num_values)

    def result(self):
        if self.reduction == "sum":
            return array_ops.identity(self.total.read_value())
        return divide_no_nan(self.total.read_value(), self.count.read_value())


class Sum(Reduce):
    """The (weighted) sum of the values seen."""

    def __init__(self, name="sum", dtype=None):
        super().__init__(reduction="sum", name=name, dtype=dtype)


class Mean(Reduce):
    """The weighted mean of the values seen: sum(values * weights) / sum(weights)."""

    def __init__(self, name="mean", dtype=None):
        super().__init__(reduction="weighted_mean", name=name, dtype=dtype)


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred, **kwargs)`` over the samples seen (how a metric function, such as
    'accuracy' or a loss function, becomes a Metric)."""

    def __init__(self, fn, name=None, dtype=None, **kwargs):
        super().__init__(name=name, dtype=dtype)
        if not callable(fn):
            raise TypeError(f"MeanMetricWrapper needs a callable metric function; got {fn!r}")
        self._fn = fn
        self._fn_kwargs = kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true = to_tensor(y_true, self.name, "y_true", self._dtype)
        y_pred = to_tensor(y_pred, self.name, "y_pred", self._dtype)
        y_pred, y_true, _ = losses_lib.squeeze_or_expand_dimensions(y_pred, y_true)
        matches = self._fn(y_true, y_pred, **self._fn_kwargs)
        return super().update_state(matches, sample_weight=sample_weight)

    def get_config(self):
        config = {k: (v.numpy() if hasattr(v, "numpy") else v) for k, v in self._fn_kwargs.items()}
        if type(self) is MeanMetricWrapper:
            config["fn"] = self._fn
        return {**super().get_config(), **config}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        fn = config.pop("fn", None)
        if cls is MeanMetricWrapper:
            from ember.keras.metrics import get
            return cls(get(fn), **config)
        return cls(**config)


class SumOverBatchSize(Reduce):
    def __init__(self, name="sum_over_batch_size", dtype=None):
        super().__init__(reduction="sum_over_batch_size", name=name, dtype=dtype)



class MeanTensor(Metric):
    """The element-wise weighted mean of same-shaped tensors; its variables take the shape of the first
    update (or ``shape``)."""

    def __init__(self, name="mean_tensor", dtype=None, shape=None):
        super().__init__(name=name, dtype=dtype)
        self._shape = None
        self._ember_built = False
        if shape is not None:
            self._build(shape)

    def _build(self, shape):
        self._shape = [int(d) for d in shape]
        self._total = self.add_weight("total", shape=self._shape)
        self._count = self.add_weight("count", shape=self._shape)
        self._ember_built = True

    @property
    def total(self):
        return self._total if self._ember_built else None

    @property
    def count(self):
        return self._count if self._ember_built else None

    def update_state(self, values, sample_weight=None):
        values = to_tensor(values, self.name, "values", self._dtype)
        if not self._ember_built:
            if values.shape.rank is None or None in values.shape.as_list():
                raise _invalid(self.name, f"the first values must have a fully known shape; got {values.shape}")
            self._build(values.shape.as_list())
        elif values.shape.as_list() != self._shape:
            raise ValueError(f"MeanTensor input values must always have the same shape. Expected shape (set during "
                             f"the first call): {self._shape}. Got: {values.shape.as_list()}.")
        num_values = array_ops.ones_like(values)
        if sample_weight is not None:
            sample_weight = to_tensor(sample_weight, self.name, "sample_weight", self._dtype)
            values, _, sample_weight = losses_lib.squeeze_or_expand_dimensions(values, None, sample_weight)
            if broadcastable_weights(sample_weight, values):
                sample_weight = sample_weight * array_ops.ones_like(values)
            else:
                ndim, weight_ndim = values.shape.rank, sample_weight.shape.rank
                if weight_ndim >= ndim:
                    raise _invalid(self.name, f"sample_weight of shape {sample_weight.shape.as_list()} does not "
                                              f"fit values of shape {values.shape.as_list()}")
                values = math_ops.reduce_mean(values, axis=list(range(weight_ndim, ndim)))
            num_values = num_values * sample_weight
            values = values * sample_weight
        self._total.assign_add(values)
        self._count.assign_add(num_values)

    def result(self):
        if not self._ember_built:
            raise ValueError("MeanTensor does not have any value yet. Please call the MeanTensor instance or use "
                             "`.update_state(value)` before retrieving the result.")
        return divide_no_nan(self._total.read_value(), self._count.read_value())

    def reset_state(self):
        if self._ember_built:
            super().reset_state()

    def get_config(self):
        return {**super().get_config(), "shape": self._shape}
