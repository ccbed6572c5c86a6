"""What ``Model.compile`` turns its ``loss`` and ``metrics`` arguments into (Keras 2's compile_utils).

``LossesContainer`` gives the total loss of a batch: each output's loss (a Loss object; a plain function
is wrapped so that it is weighted and averaged as Keras does), times its ``loss_weights`` entry, plus the
model's regularization losses; it also tracks the mean of that total over an epoch, weighted by batch
size (the "loss" that fit prints). ``MetricsContainer`` makes each output's metrics; "accuracy"/"acc" and
"crossentropy"/"ce" become the binary, categorical or sparse variant from the shapes of the labels and
predictions, as in Keras 2. Both are built eagerly from the first batch's shapes before the train step is
traced, so their variables exist before ember.function sees them (one trace, not two).

Metrics come from ``ember.keras.metrics``.
"""

from ember import dtypes
from ember.ops import array_ops, math_ops
from ember.util import nest
from ember.keras import losses as losses_mod


def make_mean(name):
    from ember.keras import metrics

    return metrics.Mean(name=name)


def _is_metric_object(m):
    return hasattr(m, "update_state") and hasattr(m, "result")


def resolve_metric(metric, y_true, y_pred, loss):
    """A metric object for ``metric`` (a name, a function or a Metric) given example label/prediction specs
    (ember.keras.metrics.resolve picks "accuracy"'s variant from them as Keras 2 does)."""
    from ember.keras import metrics

    if _is_metric_object(metric):
        return metric
    return metrics.resolve(metric, getattr(y_true, "shape", None), getattr(y_pred, "shape", None), loss)


def match_dtype_and_rank(y_t, y_p, sw):
    """Keras 2's alignment before a loss or metric: 1-D labels and weights against 2-D predictions get a
    trailing axis; labels take the predictions' dtype when both are floating or both integer."""
    from ember.framework.tensor import convert_to_tensor

    y_t = convert_to_tensor(y_t)
    if y_t.shape.rank == 1 and y_p.shape.rank == 2:
        y_t = array_ops.expand_dims(y_t, -1)
    if sw is not None:
        sw = convert_to_tensor(sw)
        if sw.shape.rank == 1 and y_p.shape.rank == 2:
            sw = array_ops.expand_dims(sw, -1)
        sw = math_ops.cast(sw, y_p.dtype)
    if (y_t.dtype.is_floating and y_p.dtype.is_floating) or (y_t.dtype.is_integer and y_p.dtype.is_integer):
        y_t = math_ops.cast(y_t, y_p.dtype)
    return y_t, y_p, sw


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
            yt, yp, sw = match_dtype_and_rank(yt, yp, sw)
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
        # As tf_keras (cast_losses_to_common_dtype): a float16 loss of a mixed precision model meets float32
        # regularization losses in the widest floating dtype among them.
        widest = max((v.dtype for v in total if v.dtype.is_floating), key=lambda d: d.size, default=None)
        if widest is not None:
            total = [v if v.dtype == widest else math_ops.cast(v, widest) for v in total]
        result = total[0]
        for value in total[1:]:
            result = result + value
        self.loss_tracker.update_state(result, sample_weight=batch)
        from ember.distribute import distribute_lib

        if distribute_lib.in_distributed_replica_context():
            # Keras 2: each replica's gradients are summed, so its loss counts 1/replicas of the mean.
            result = result / float(distribute_lib.get_replica_context().num_replicas_in_sync)
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
                    made.append(metric)
                objects.append(made)
            self._per_output.append(objects)
        # A weighted metric named like an unweighted one is told apart by a "weighted_" prefix (Keras 2).
        taken = {m.name for group in self._per_output[0] for m in group}
        for group in self._per_output[1]:
            for metric in group:
                if metric.name in taken:
                    _rename(metric, f"weighted_{metric.name}")
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
            yt, yp, sw = match_dtype_and_rank(yt, yp, flat_sw[i])
            for metric in unweighted[i]:
                metric.update_state(yt, yp)
            for metric in weighted[i]:
                metric.update_state(yt, yp, sample_weight=sw)

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
