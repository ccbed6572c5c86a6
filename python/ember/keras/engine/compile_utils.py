"""What ``Model.compile`` turns its ``loss`` and ``metrics`` arguments into (Keras 2's compile_utils).

``LossesContainer`` gives the total loss of a batch: each output's loss (a Loss object; a plain function
is wrapped so that it is weighted and averaged as Keras does), times its ``loss_weights`` entry, plus the
model's regularization losses; it also tracks the mean of that total over an epoch, weighted by batch
size (the "loss" that fit prints). ``MetricsContainer`` makes each output's metrics; "accuracy"/"acc" and
"crossentropy"/"ce" become the binary, categorical or sparse variant from the shapes of the labels and
predictions, as in Keras 2. Both are built eagerly from the first batch's shapes before the train step is
traced, so their variables exist before ember.function sees them (one trace, not two).

Metrics come from ``ember.keras.metrics`` when that module exists; until then a small internal Mean and
MeanMetricWrapper stand in (the same names and results).
"""

import importlib.util

from ember import dtypes
from ember.framework.tensor import convert_to_tensor
from ember.ops import array_ops, math_ops
from ember.util import nest
from ember.variables import Variable
from ember.keras import losses as losses_mod


def _metrics_module():
    if importlib.util.find_spec("ember.keras.metrics") is None:
        return None
    from ember.keras import metrics

    return metrics


# ---- internal metrics, used only while ember.keras.metrics does not exist
class _Mean:
    """Weighted mean of values: total and count variables (Keras' Mean)."""

    def __init__(self, name="mean", dtype=dtypes.float32):
        self.name = name
        self._dtype = dtypes.as_dtype(dtype)
        self.total = Variable(lambda: array_ops.zeros([], self._dtype), trainable=False, name="total")
        self.count = Variable(lambda: array_ops.zeros([], self._dtype), trainable=False, name="count")

    @property
    def variables(self):
        return [self.total, self.count]

    def update_state(self, values, sample_weight=None):
        values = math_ops.cast(convert_to_tensor(values), self._dtype)
        if sample_weight is None:
            self.total.assign_add(math_ops.reduce_sum(values))
            self.count.assign_add(math_ops.cast(array_ops.size(values), self._dtype))
            return
        weight = math_ops.cast(convert_to_tensor(sample_weight), self._dtype)
        if weight.shape.rank is not None and values.shape.rank is not None and weight.shape.rank < values.shape.rank:
            values = math_ops.reduce_mean(values, axis=list(range(weight.shape.rank, values.shape.rank)))
        weight = weight * array_ops.ones_like(values)
        self.total.assign_add(math_ops.reduce_sum(values * weight))
        self.count.assign_add(math_ops.reduce_sum(weight))

    def result(self):
        total, count = self.total.read_value(), self.count.read_value()
        safe = array_ops.where(count > 0, count, array_ops.ones_like(count))
        return array_ops.where(count > 0, total / safe, array_ops.zeros_like(total))

    def reset_state(self):
        self.total.assign(0.0)
        self.count.assign(0.0)


class _MeanMetricWrapper(_Mean):
    def __init__(self, fn, name=None, dtype=dtypes.float32, **kwargs):
        super().__init__(name=name or fn.__name__, dtype=dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def update_state(self, y_true, y_pred, sample_weight=None):
        y_true, y_pred = convert_to_tensor(y_true), convert_to_tensor(y_pred)
        y_pred, y_true, _ = losses_mod.squeeze_or_expand_dimensions(y_pred, y_true)
        super().update_state(self._fn(y_true, y_pred, **self._fn_kwargs), sample_weight)


def _binary_accuracy(y_true, y_pred, threshold=0.5):
    y_pred = math_ops.cast(y_pred > math_ops.cast(threshold, y_pred.dtype), y_pred.dtype)
    return math_ops.reduce_mean(math_ops.cast(math_ops.equal(math_ops.cast(y_true, y_pred.dtype), y_pred),
                                              dtypes.float32), axis=-1)


def _categorical_accuracy(y_true, y_pred):
    return math_ops.cast(math_ops.equal(math_ops.argmax(y_true, axis=-1), math_ops.argmax(y_pred, axis=-1)),
                         dtypes.float32)


def _sparse_categorical_accuracy(y_true, y_pred):
    y_true = convert_to_tensor(y_true)
    if y_true.shape.rank is not None and y_pred.shape.rank is not None and y_true.shape.rank == y_pred.shape.rank:
        y_true = array_ops.squeeze(y_true, axis=-1)
    predicted = math_ops.argmax(y_pred, axis=-1)
    return math_ops.cast(math_ops.equal(math_ops.cast(y_true, predicted.dtype), predicted), dtypes.float32)


_INTERNAL = {"binary_accuracy": _binary_accuracy, "categorical_accuracy": _categorical_accuracy,
             "sparse_categorical_accuracy": _sparse_categorical_accuracy,
             "mse": losses_mod.mean_squared_error, "mean_squared_error": losses_mod.mean_squared_error,
             "mae": losses_mod.mean_absolute_error, "mean_absolute_error": losses_mod.mean_absolute_error,
             "binary_crossentropy": losses_mod.binary_crossentropy,
             "categorical_crossentropy": losses_mod.categorical_crossentropy,
             "sparse_categorical_crossentropy": losses_mod.sparse_categorical_crossentropy}


def make_mean(name):
    metrics = _metrics_module()
    return metrics.Mean(name=name) if metrics is not None else _Mean(name=name)


def _wrap_function(fn, name):
    metrics = _metrics_module()
    if metrics is not None:
        return metrics.MeanMetricWrapper(fn, name=name)
    return _MeanMetricWrapper(fn, name=name)


def _metric_function(name):
    metrics = _metrics_module()
    if metrics is not None:
        return metrics.get(name)
    if name not in _INTERNAL:
        raise ValueError(f"Unknown metric function: '{name}' (ember.keras.metrics is not available yet; the "
                         f"internal ones are {sorted(_INTERNAL)})")
    return _INTERNAL[name]


def _is_metric_object(m):
    return hasattr(m, "update_state") and hasattr(m, "result")


def _shape_rank(x):
    return x.shape.rank if x is not None else None


def resolve_metric(metric, y_true, y_pred, loss):
    """A metric object for ``metric`` (a name, a function or a Metric) given example label/prediction specs."""
    if _is_metric_object(metric):
        return metric
    if isinstance(metric, str) and metric in ("accuracy", "acc", "crossentropy", "ce"):
        y_t_rank, y_p_rank = _shape_rank(y_true), _shape_rank(y_pred)
        y_p_last = y_pred.shape[-1] if y_p_rank else None
        y_t_last = y_true.shape[-1] if y_t_rank else None
        is_binary = y_p_last == 1
        is_sparse = (y_t_rank is not None and y_p_rank is not None and y_t_rank < y_p_rank) or \
            (y_t_last == 1 and y_p_last is not None and y_p_last > 1)
        loss_name = getattr(loss, "__name__", None) or type(loss).__name__
        if "binary" in str(loss_name).lower() and "crossentropy" in str(loss_name).lower():
            is_binary = True
        if metric in ("accuracy", "acc"):
            fn = "binary_accuracy" if is_binary else (
                "sparse_categorical_accuracy" if is_sparse else "categorical_accuracy")
        else:
            fn = "binary_crossentropy" if is_binary else (
                "sparse_categorical_crossentropy" if is_sparse else "categorical_crossentropy")
        return _wrap_function(_metric_function(fn), metric)
    if isinstance(metric, str):
        fn = _metric_function(metric)
        if _is_metric_object(fn):
            return fn
        if isinstance(fn, type):
            return fn()
        return _wrap_function(fn, metric)
    if callable(metric):
        return _wrap_function(metric, getattr(metric, "__name__", "metric"))
    raise ValueError(f"Could not interpret metric identifier: {metric!r}")


def _per_output(value, output_names, what):
    """``value`` spread over the outputs: a single value for each, or a list/dict matched to them."""
    if isinstance(value, dict):
        unknown = set(value) - set(output_names)
        if unknown:
            raise ValueError(f"Found unexpected {what} keys {sorted(unknown)}: the model's outputs are "
                             f"{output_names}")
        return [value.get(n) for n in output_names]
    if isinstance(value, (list, tuple)) and len(output_names) > 1:
        if len(value) != len(output_names):
            raise ValueError(f"When passing a list as {what}, it should have one entry per model output. The model "
                             f"has {len(output_names)} outputs, but you passed {what}={value}")
        return list(value)
    return [value] * len(output_names)


class LossesContainer:
    def __init__(self, loss, loss_weights=None, output_names=None):
        self._user_loss = loss
        self._user_weights = loss_weights
        self._output_names = output_names
        self.built = False

    def build(self, y_pred, output_names):
        names = output_names or [f"output_{i + 1}" for i in range(len(nest.flatten(y_pred)))]
        self._output_names = names
        losses = _per_output(self._user_loss, names, "loss")
        weights = _per_output(self._user_weights, names, "loss_weights") if self._user_weights is not None \
            else [None] * len(names)
        self._losses = []
        for loss in losses:
            loss = losses_mod.get(loss) if loss is not None else None
            if loss is not None and not isinstance(loss, losses_mod.Loss):
                loss = losses_mod.LossFunctionWrapper(loss, name=getattr(loss, "__name__", "loss"))
            self._losses.append(loss)
        self._weights = [1.0 if w is None else float(w) for w in weights]
        self.loss_tracker = make_mean("loss")
        multi = len(names) > 1
        self.per_output_trackers = [make_mean(f"{n}_loss") if multi and l is not None else None
                                    for n, l in zip(names, self._losses)]
        self.built = True

    @property
    def metrics(self):
        if not self.built:
            return []
        return [self.loss_tracker] + [m for m in self.per_output_trackers if m is not None]

    def __call__(self, y_true, y_pred, sample_weight=None, regularization_losses=None):
        flat_pred = nest.flatten(y_pred)
        flat_true = _match(y_true, flat_pred, self._output_names, "y")
        flat_sw = _match(sample_weight, flat_pred, self._output_names, "sample_weight") \
            if sample_weight is not None else [None] * len(flat_pred)
        batch = math_ops.cast(array_ops.shape(flat_pred[0])[0], dtypes.float32) if flat_pred[0].shape.rank else None
        total = []
        for i, (loss, yt, yp, sw) in enumerate(zip(self._losses, flat_true, flat_pred, flat_sw)):
            if loss is None or yt is None:
                continue
            value = loss(yt, yp, sample_weight=sw)
            tracker = self.per_output_trackers[i]
            if tracker is not None:
                tracker.update_state(value, sample_weight=batch)
            total.append(value * self._weights[i] if self._weights[i] != 1.0 else value)
        if regularization_losses:
            reg = regularization_losses[0]
            for r in regularization_losses[1:]:
                reg = reg + r
            total.append(math_ops.cast(reg, dtypes.float32))
        if not total:
            raise ValueError("No loss to compute. Provide a `loss` argument in `compile()`.")
        result = total[0]
        for value in total[1:]:
            result = result + value
        self.loss_tracker.update_state(result, sample_weight=batch)
        return result

    def reset_state(self):
        for m in self.metrics:
            m.reset_state()


class MetricsContainer:
    def __init__(self, metrics=None, weighted_metrics=None, output_names=None):
        self._user_metrics = metrics
        self._user_weighted = weighted_metrics
        self.built = False
        self._metrics = []

    def build(self, y_true, y_pred, output_names, losses):
        flat_pred = nest.flatten(y_pred)
        flat_true = _match(y_true, flat_pred, output_names, "y")
        multi = len(flat_pred) > 1
        self._per_output = []
        for kind, user in (("metrics", self._user_metrics), ("weighted", self._user_weighted)):
            if not user:
                self._per_output.append([[] for _ in flat_pred])
                continue
            if isinstance(user, dict):
                per = [nest.flatten(user.get(n, [])) for n in output_names]
            elif isinstance(user, (list, tuple)) and multi and len(user) == len(flat_pred) and \
                    all(isinstance(u, (list, tuple)) for u in user):
                per = [list(u) for u in user]
            else:
                per = [list(nest.flatten(user)) for _ in flat_pred]
            objects = []
            for i, items in enumerate(per):
                made = []
                for item in items:
                    metric = resolve_metric(item, flat_true[i], flat_pred[i], losses[i] if losses else None)
                    if multi:
                        _rename(metric, f"{output_names[i]}_{metric.name}")
                    elif kind == "weighted" and not _is_metric_object(item):
                        _rename(metric, f"weighted_{metric.name}")
                    made.append(metric)
                objects.append(made)
            self._per_output.append(objects)
        self.built = True

    @property
    def metrics(self):
        if not self.built:
            return []
        out = []
        for group in self._per_output:
            for made in group:
                out.extend(made)
        return out

    def update_state(self, y_true, y_pred, sample_weight=None):
        flat_pred = nest.flatten(y_pred)
        names = [None] * len(flat_pred)
        flat_true = _match(y_true, flat_pred, names, "y")
        flat_sw = _match(sample_weight, flat_pred, names, "sample_weight") if sample_weight is not None \
            else [None] * len(flat_pred)
        unweighted, weighted = self._per_output
        for i, (yt, yp) in enumerate(zip(flat_true, flat_pred)):
            if yt is None:
                continue
            for metric in unweighted[i]:
                metric.update_state(yt, yp)
            for metric in weighted[i]:
                metric.update_state(yt, yp, sample_weight=flat_sw[i])

    def reset_state(self):
        for m in self.metrics:
            m.reset_state()


def _rename(metric, name):
    try:
        metric.name = name
    except AttributeError:
        metric._name = name


def _match(values, flat_pred, output_names, what):
    """``values`` (labels or weights) as a flat list aligned with the outputs."""
    if values is None:
        return [None] * len(flat_pred)
    if isinstance(values, dict) and output_names and all(n is not None for n in output_names):
        return [values.get(n) for n in output_names]
    flat = nest.flatten(values)
    if len(flat_pred) == 1:
        return [values if not isinstance(values, (list, tuple)) or len(flat) != 1 else flat[0]]
    if len(flat) != len(flat_pred):
        raise ValueError(f"The model has {len(flat_pred)} outputs, but {what} has {len(flat)} entries")
    return flat
