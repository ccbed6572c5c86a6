"""``ember.keras.losses``: Keras 2's losses (the ``tf_keras`` package), as classes and as functions.

A loss function maps ``(y_true, y_pred)`` to one value per sample (it reduces the last axis); a ``Loss``
object wraps one, weights those values by ``sample_weight`` and reduces them as its ``reduction`` says:
``sum_over_batch_size`` (the default; ``auto`` means it outside a distribution strategy) divides the
weighted sum by the number of values, zero weights included, ``sum`` adds them up, ``none`` keeps them.
The formulas are tf_keras' (``tf_keras/src/losses.py`` and ``backend.py``) op for op, epsilon 1e-7
included, so float32 values agree with it to rounding.

``get(identifier)`` resolves what ``Model.compile(loss=...)`` accepts: a name ('mse',
'sparse_categorical_crossentropy', 'MeanSquaredError'), a dict from ``serialize``, a Loss, a callable.
"""

import math
import warnings

from ember import dtypes, errors
from ember.framework import side_attributes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.name_scope import name_scope
from ember.ops import array_ops, math_ops, nn_ops

EPSILON = 1e-7  # tf_keras.backend.epsilon()


def _invalid(what, message):
    return errors.InvalidArgumentError(None, None, f"{what}: {message}")


class Reduction:
    """The ways a Loss object reduces its per-sample values (tf.keras.losses.Reduction)."""

    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls):
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)

    @classmethod
    def validate(cls, key):
        if key not in cls.all():
            raise ValueError(f'Invalid Reduction Key: {key}. Expected keys are "{cls.all()}"')


# ---- shapes and weights (tf_keras' losses_utils)

def _as_float(x, name, what):
    try:
        x = x if isinstance(x, Tensor) else convert_to_tensor(x)
    except (TypeError, ValueError) as e:
        raise _invalid(what, f"{name} must be a tensor or something convertible to one; got {x!r} ({e})")
    if not (x.dtype.is_floating or x.dtype.is_integer or x.dtype.is_bool):
        raise _invalid(what, f"{name} must be numeric; got a tensor of dtype {x.dtype.name}")
    return x


def _static_shape(x):
    return x.shape.as_list() if x.shape.rank is not None else None


def _check_broadcastable(a, b, what, a_name="y_true", b_name="y_pred"):
    """Static shapes that cannot broadcast are an InvalidArgumentError naming the loss and both shapes."""
    sa, sb = _static_shape(a), _static_shape(b)
    if sa is None or sb is None:
        return
    for da, db in zip(reversed(sa), reversed(sb)):
        if da is not None and db is not None and da != db and da != 1 and db != 1:
            raise _invalid(what, f"{a_name} and {b_name} must have compatible shapes; got {a_name} of shape "
                                 f"{sa} and {b_name} of shape {sb}")


def squeeze_or_expand_dimensions(y_pred, y_true=None, sample_weight=None):
    """Drops a trailing 1 from y_true or y_pred when their ranks differ by one, and matches sample_weight's
    rank to y_pred's (squeezing or expanding its last axis), as Keras 2 does before a loss."""
    y_pred_rank = y_pred.shape.rank
    if y_true is not None:
        y_true_rank = y_true.shape.rank
        if y_pred_rank is not None and y_true_rank is not None:
            if y_true_rank - y_pred_rank == 1 and y_true.shape[-1] == 1:
                y_true = array_ops.squeeze(y_true, [-1])
            elif y_pred_rank - y_true_rank == 1 and y_pred.shape[-1] == 1:
                y_pred = array_ops.squeeze(y_pred, [-1])
    if sample_weight is None:
        return y_pred, y_true, None
    weights_rank = sample_weight.shape.rank
    if weights_rank and y_pred_rank is not None:
        if weights_rank - y_pred_rank == 1 and sample_weight.shape[-1] in (1, None):
            sample_weight = array_ops.squeeze(sample_weight, [-1])
        elif y_pred_rank - weights_rank == 1:
            sample_weight = array_ops.expand_dims(sample_weight, -1)
    return y_pred, y_true, sample_weight


def _num_elements(x):
    return math_ops.cast(array_ops.size(x), x.dtype)


def compute_weighted_loss(losses, sample_weight=None, reduction=Reduction.SUM_OVER_BATCH_SIZE, what="loss"):
    """Weights per-sample losses and reduces them (tf_keras' losses_utils.compute_weighted_loss)."""
    Reduction.validate(reduction)
    if reduction == Reduction.AUTO:
        reduction = Reduction.SUM_OVER_BATCH_SIZE
    losses = _as_float(losses, "losses", what)
    if not losses.dtype.is_floating:
        losses = math_ops.cast(losses, dtypes.float32)
    input_dtype = losses.dtype
    # float16 losses are reduced in float32, as Keras 2 does, and cast back.
    if input_dtype in (dtypes.float16, dtypes.bfloat16):
        losses = math_ops.cast(losses, dtypes.float32)
    if sample_weight is not None:
        sample_weight = math_ops.cast(_as_float(sample_weight, "sample_weight", what), losses.dtype)
        losses, _, sample_weight = squeeze_or_expand_dimensions(losses, None, sample_weight)
        _check_broadcastable(sample_weight, losses, what, "sample_weight", "the per-sample losses")
        losses = losses * sample_weight
    if reduction != Reduction.NONE:
        total = math_ops.reduce_sum(losses)
        if reduction == Reduction.SUM_OVER_BATCH_SIZE:
            count = _num_elements(losses)
            # divide_no_nan: an empty batch gives 0, not NaN.
            safe = array_ops.where(math_ops.equal(count, 0), array_ops.ones_like(count), count)
            total = array_ops.where(math_ops.equal(count, 0), array_ops.zeros_like(total), total / safe)
        losses = total
    return math_ops.cast(losses, input_dtype)


# ---- the loss functions

def _prepare(y_true, y_pred, what):
    y_pred = _as_float(y_pred, "y_pred", what)
    if not y_pred.dtype.is_floating:
        y_pred = math_ops.cast(y_pred, dtypes.float32)
    y_true = math_ops.cast(_as_float(y_true, "y_true", what), y_pred.dtype)
    _check_broadcastable(y_true, y_pred, what)
    return y_true, y_pred


def _mean(x):
    return math_ops.reduce_mean(x, axis=-1)


def mean_squared_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_error")
    return _mean(math_ops.squared_difference(y_pred, y_true))


def mean_absolute_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_error")
    return _mean(math_ops.abs(y_pred - y_true))


def mean_absolute_percentage_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred, "mean_absolute_percentage_error")
    diff = math_ops.abs((y_true - y_pred) / math_ops.maximum(math_ops.abs(y_true), EPSILON))
    return 100.0 * _mean(diff)


def mean_squared_logarithmic_error(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred, "mean_squared_logarithmic_error")
    first_log = math_ops.log(math_ops.maximum(y_pred, EPSILON) + 1.0)
    second_log = math_ops.log(math_ops.maximum(y_true, EPSILON) + 1.0)
    return _mean(math_ops.squared_difference(first_log, second_log))


def _maybe_convert_labels(y_true):
    """Hinge losses take labels in {-1, 1}; labels that are all 0 or 1 are mapped there, as Keras 2 does."""
    is_binary = math_ops.reduce_all(math_ops.logical_or(math_ops.equal(y_true, 0), math_ops.equal(y_true, 1)))
    return array_ops.where(is_binary, 2.0 * y_true - 1.0, y_true)


def hinge(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred, "hinge")
    y_true = _maybe_convert_labels(y_true)
    return _mean(math_ops.maximum(1.0 - y_true * y_pred, 0.0))


def squared_hinge(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred, "squared_hinge")
    y_true = _maybe_convert_labels(y_true)
    return _mean(math_ops.square(math_ops.maximum(1.0 - y_true * y_pred, 0.0)))


def categorical_hinge(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred, "categorical_hinge")
    pos = math_ops.reduce_sum(y_true * y_pred, axis=-1)
    neg = math_ops.reduce_max((1.0 - y_true) * y_pred, axis=-1)
    return math_ops.maximum(neg - pos + 1.0, 0.0)


def huber(y_true, y_pred, delta=1.0):
    y_true, y_pred = _prepare(y_true, y_pred, "huber")
    # Keras 2 computes Huber in floatx (float32) whatever the inputs' dtype.
    y_true, y_pred = math_ops.cast(y_true, dtypes.float32), math_ops.cast(y_pred, dtypes.float32)
    delta = math_ops.cast(delta, y_pred.dtype)
    error = y_pred - y_true
    abs_error = math_ops.abs(error)
    quadratic = 0.5 * math_ops.square(error)
    linear = delta * abs_error - 0.5 * math_ops.square(delta)
    return _mean(array_ops.where(abs_error <= delta, quadratic, linear))


def log_cosh(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred, "log_cosh")
    x = y_pred - y_true
    # log(cosh(x)) = x + softplus(-2x) - log(2): no overflow for large |x|.
    return _mean(x + math_ops.softplus(-2.0 * x) - math.log(2.0))


def kl_divergence(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred, "kl_divergence")
    y_true = array_ops.clip_by_value(y_true, EPSILON, 1.0)
    y_pred = array_ops.clip_by_value(y_pred, EPSILON, 1.0)
    return math_ops.reduce_sum(y_true * math_ops.log(y_true / y_pred), axis=-1)


def poisson(y_true, y_pred):
    y_true, y_pred = _prepare(y_true, y_pred, "poisson")
    return _mean(y_pred - y_true * math_ops.log(y_pred + EPSILON))


def cosine_similarity(y_true, y_pred, axis=-1):
    y_true, y_pred = _prepare(y_true, y_pred, "cosine_similarity")
    y_true = nn_ops.l2_normalize(y_true, axis=axis)
    y_pred = nn_ops.l2_normalize(y_pred, axis=axis)
    return -math_ops.reduce_sum(y_true * y_pred, axis=axis)


def _check_axis(x, axis, what):
    rank = x.shape.rank
    if rank is not None and not -rank <= axis < max(rank, 1):
        raise _invalid(what, f"axis must be in [-{rank}, {rank}) for y_pred of rank {rank}; got axis={axis}")


def _activation_logits(y_pred, from_logits, activation, what):
    """(y_pred, from_logits) for a cross-entropy, after tf_keras' rule: probabilities that a Keras
    ``activation`` (sigmoid or softmax) made carry their logits (``_keras_logits``), and the loss uses those,
    which keeps its value and gradient finite where the probabilities round to 0 or 1. With
    from_logits=True too, the logits are still used, with a warning (the output was not logits)."""
    from ember.keras.engine.keras_tensor import get_logits

    logits = get_logits(y_pred)
    if logits is None:
        logits = _graph_activation_input(y_pred, activation)
    if logits is None:
        return y_pred, from_logits
    if from_logits:
        warnings.warn(f"{what}: from_logits=True, but y_pred came out of a {activation} activation, so it holds "
                      f"probabilities, not logits; the loss uses the activation's input (its logits)",
                      stacklevel=3)
    return logits, True


def _graph_activation_input(y_pred, activation):
    """The input of the tf.nn.softmax (over the last axis) that made the graph tensor ``y_pred``, or None:
    inside a function tf_keras takes a tensor made by a Softmax op as probabilities whatever made it
    (tf.nn.softmax in a model's call, a Softmax layer) and uses the op's input as the logits. (tf_keras does
    the same for a Sigmoid op; ember's tf.sigmoid is dispatched in C and records nothing, so only a Keras
    sigmoid activation's output gets its logits used.)"""
    if activation != "softmax" or not isinstance(y_pred, Tensor) or not y_pred._is_symbolic:
        return None
    return side_attributes.softmax_input.get(y_pred)


def _binary_crossentropy_entries(y_true, y_pred, from_logits):
    if from_logits:
        if y_true.shape != y_pred.shape:
            y_true = array_ops.broadcast_to(y_true, array_ops.shape(y_pred))
        return nn_ops.sigmoid_cross_entropy_with_logits(labels=y_true, logits=y_pred)
    y_pred = array_ops.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
    return -(y_true * math_ops.log(y_pred + EPSILON) + (1.0 - y_true) * math_ops.log(1.0 - y_pred + EPSILON))


def binary_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_pred, from_logits = _activation_logits(y_pred, from_logits, "sigmoid", "binary_crossentropy")
    y_true, y_pred = _prepare(y_true, y_pred, "binary_crossentropy")
    _check_axis(y_pred, axis, "binary_crossentropy")
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    return math_ops.reduce_mean(_binary_crossentropy_entries(y_true, y_pred, from_logits), axis=axis)


def binary_focal_crossentropy(y_true, y_pred, apply_class_balancing=False, alpha=0.25, gamma=2.0,
                              from_logits=False, label_smoothing=0.0, axis=-1):
    """Binary cross-entropy scaled by (1 - p_t)^gamma (Lin et al.), p_t the probability given to the true
    label; ``apply_class_balancing`` also weighs positives by alpha and negatives by 1 - alpha."""
    # The cross-entropy factor follows binary_crossentropy's rule for a sigmoid's output (its logits);
    # (1 - p_t)^gamma reads y_pred as given, as tf_keras' does.
    logits, entries_from_logits = _activation_logits(y_pred, from_logits, "sigmoid", "binary_focal_crossentropy")
    swapped = logits is not y_pred
    y_true, y_pred = _prepare(y_true, y_pred, "binary_focal_crossentropy")
    _check_axis(y_pred, axis, "binary_focal_crossentropy")
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    probabilities = math_ops.sigmoid(y_pred) if from_logits else y_pred
    p_t = y_true * probabilities + (1 - y_true) * (1 - probabilities)
    entries = _binary_crossentropy_entries(y_true, logits if swapped else y_pred, entries_from_logits)
    focal = math_ops.pow(1.0 - p_t, math_ops.cast(gamma, y_pred.dtype)) * entries
    if apply_class_balancing:
        focal = (y_true * alpha + (1 - y_true) * (1 - alpha)) * focal
    return math_ops.reduce_mean(focal, axis=axis)


def categorical_crossentropy(y_true, y_pred, from_logits=False, label_smoothing=0.0, axis=-1):
    y_pred, from_logits = _activation_logits(y_pred, from_logits, "softmax", "categorical_crossentropy")
    y_true, y_pred = _prepare(y_true, y_pred, "categorical_crossentropy")
    _check_axis(y_pred, axis, "categorical_crossentropy")
    if y_pred.shape.rank == 0:
        raise _invalid("categorical_crossentropy", "y_pred must have a class axis (rank >= 1); got a scalar")
    if label_smoothing:
        num_classes = math_ops.cast(array_ops.shape(y_true)[axis], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / num_classes
    if from_logits:
        return nn_ops.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    # Probabilities: renormalised to sum to 1, clipped away from 0 and 1.
    y_pred = y_pred / math_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    y_pred = array_ops.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
    return -math_ops.reduce_sum(y_true * math_ops.log(y_pred), axis=axis)


def categorical_focal_crossentropy(y_true, y_pred, alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0,
                                   axis=-1):
    """Categorical cross-entropy with each class's term scaled by alpha * (1 - p)^gamma (Lin et al.)."""
    y_true, y_pred = _prepare(y_true, y_pred, "categorical_focal_crossentropy")
    _check_axis(y_pred, axis, "categorical_focal_crossentropy")
    if label_smoothing:
        num_classes = math_ops.cast(array_ops.shape(y_true)[axis], y_pred.dtype)
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / num_classes
    if from_logits:
        y_pred = nn_ops.softmax(y_pred, axis=axis)
    y_pred = y_pred / math_ops.reduce_sum(y_pred, axis=axis, keepdims=True)
    y_pred = array_ops.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON)
    cce = -y_true * math_ops.log(y_pred)
    weighting = math_ops.pow(1.0 - y_pred, math_ops.cast(gamma, y_pred.dtype)) * alpha
    return math_ops.reduce_sum(weighting * cce, axis=axis)


def sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1, ignore_class=None):
    return _sparse_categorical_crossentropy(y_true, y_pred, from_logits, axis, ignore_class)[0]


def _sparse_categorical_crossentropy(y_true, y_pred, from_logits=False, axis=-1, ignore_class=None):
    """The per-sample values and, with ignore_class, the mask of the samples that count (else None)."""
    what = "sparse_categorical_crossentropy"
    y_pred, from_logits = _activation_logits(y_pred, from_logits, "softmax", what)
    y_pred = _as_float(y_pred, "y_pred", what)
    if not y_pred.dtype.is_floating:
        y_pred = math_ops.cast(y_pred, dtypes.float32)
    y_true = _as_float(y_true, "y_true", what)
    if y_pred.shape.rank == 0:
        raise _invalid(what, "y_pred must have a class axis (rank >= 1); got a scalar")
    _check_axis(y_pred, axis, what)
    if axis not in (-1, y_pred.shape.rank - 1):
        perm = [d for d in range(y_pred.shape.rank) if d != axis % y_pred.shape.rank] + [axis % y_pred.shape.rank]
        y_pred = array_ops.transpose(y_pred, perm)
    labels = math_ops.cast(y_true, dtypes.int64)
    if labels.shape.rank is not None and y_pred.shape.rank is not None \
            and labels.shape.rank == y_pred.shape.rank and labels.shape[-1] == 1:
        labels = array_ops.squeeze(labels, [-1])
    expected = y_pred.shape.as_list()[:-1] if y_pred.shape.rank is not None else None
    if expected is not None and labels.shape.rank is not None:
        got = labels.shape.as_list()
        if len(got) != len(expected) or any(a is not None and b is not None and a != b
                                            for a, b in zip(got, expected)):
            raise _invalid(what, f"y_true must hold one class index per prediction, shaped {expected} "
                                 f"(y_pred's shape without its class axis); got y_true of shape "
                                 f"{y_true.shape.as_list()} for y_pred of shape {y_pred.shape.as_list()}")
    valid = None
    if ignore_class is not None:
        valid = math_ops.not_equal(labels, ignore_class)
        labels = array_ops.where(valid, labels, array_ops.zeros_like(labels))
    logits = y_pred if from_logits else math_ops.log(array_ops.clip_by_value(y_pred, EPSILON, 1.0 - EPSILON))
    result = nn_ops.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)
    if valid is not None:
        result = array_ops.where(valid, result, array_ops.zeros_like(result))
    return result, valid


# Keras 2's short names for the functions.
mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error
mape = MAPE = mean_absolute_percentage_error
msle = MSLE = mean_squared_logarithmic_error
kld = KLD = kullback_leibler_divergence = kl_divergence
logcosh = log_cosh
huber_loss = huber


# ---- the Loss classes

class Loss:
    """The base of Keras losses: ``__call__`` runs ``call(y_true, y_pred)`` (per-sample values) and weights and
    reduces them. A subclass overrides ``call``."""

    def __init__(self, reduction=Reduction.AUTO, name=None):
        Reduction.validate(reduction)
        self.reduction = reduction
        self.name = name

    def __call__(self, y_true, y_pred, sample_weight=None):
        scope = self.name or type(self).__name__
        with name_scope(scope.replace(" ", "_")):
            in_mask = getattr(y_pred, "_keras_mask", None)  # set by masking layers (Embedding(mask_zero=True))
            losses, mask = self._call_with_mask(y_true, y_pred)
            if in_mask is not None:
                mask = in_mask if mask is None else math_ops.logical_and(math_ops.cast(in_mask, dtypes.bool), mask)
            if mask is not None:
                # Masked entries weigh 0, and the mean runs over the unmasked ones only (Keras 2).
                mask = math_ops.cast(mask, losses.dtype)
                if self._get_reduction() == Reduction.SUM_OVER_BATCH_SIZE:
                    mask = mask / math_ops.maximum(math_ops.reduce_mean(mask), EPSILON)
                if sample_weight is None:
                    sample_weight = mask
                else:
                    sample_weight = math_ops.cast(_as_float(sample_weight, "sample_weight", scope), losses.dtype)
                    mask, _, sample_weight = squeeze_or_expand_dimensions(mask, None, sample_weight)
                    sample_weight = sample_weight * mask
            return compute_weighted_loss(losses, sample_weight, self._get_reduction(), what=scope)

    def _call_with_mask(self, y_true, y_pred):
        """The per-sample losses and a mask of those that count (None: all do)."""
        return self.call(y_true, y_pred), None

    def _get_reduction(self):
        return Reduction.SUM_OVER_BATCH_SIZE if self.reduction == Reduction.AUTO else self.reduction

    def call(self, y_true, y_pred):
        raise NotImplementedError(f"{type(self).__name__} must implement call(y_true, y_pred)")

    def get_config(self):
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


class LossFunctionWrapper(Loss):
    """A Loss made from a loss function and its keyword arguments."""

    def __init__(self, fn, reduction=Reduction.AUTO, name=None, **kwargs):
        super().__init__(reduction=reduction, name=name)
        if not callable(fn):
            raise TypeError(f"LossFunctionWrapper needs a callable loss function; got {fn!r}")
        self.fn = fn
        self._fn_kwargs = kwargs

    def call(self, y_true, y_pred):
        y_pred = _as_float(y_pred, "y_pred", self.name or "loss")
        y_true = _as_float(y_true, "y_true", self.name or "loss")
        y_pred, y_true, _ = squeeze_or_expand_dimensions(y_pred, y_true)
        return self.fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self):
        return {**super().get_config(), **self._fn_kwargs, "fn": getattr(self.fn, "__name__", None)}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        fn_name = config.pop("fn", None)
        if cls is LossFunctionWrapper:
            config["fn"] = get(fn_name)
        return cls(**config)


def _loss_class(class_name, fn, default_name, doc, **defaults):
    """A LossFunctionWrapper subclass taking ``defaults`` as keyword arguments, as tf_keras' classes do."""

    def __init__(self, *args, reduction=Reduction.AUTO, name=default_name, **kwargs):
        names = list(defaults)
        if len(args) > len(names):
            raise TypeError(f"{class_name} takes at most {len(names)} positional arguments ({names}); "
                            f"got {len(args)}")
        options = dict(defaults)
        options.update(zip(names, args))
        unknown = sorted(set(kwargs) - set(names))
        if unknown:
            raise TypeError(f"{class_name} got unexpected keyword argument(s) {unknown}; it takes {names}, "
                            f"reduction and name")
        options.update(kwargs)
        LossFunctionWrapper.__init__(self, fn, reduction=reduction, name=name, **options)

    return type(class_name, (LossFunctionWrapper,), {"__init__": __init__, "__doc__": doc,
                                                      "__module__": __name__})


MeanSquaredError = _loss_class("MeanSquaredError", mean_squared_error, "mean_squared_error",
                               "mean((y_pred - y_true)^2) over the last axis.")
MeanAbsoluteError = _loss_class("MeanAbsoluteError", mean_absolute_error, "mean_absolute_error",
                                "mean(|y_pred - y_true|) over the last axis.")
MeanAbsolutePercentageError = _loss_class(
    "MeanAbsolutePercentageError", mean_absolute_percentage_error, "mean_absolute_percentage_error",
    "100 * mean(|y_true - y_pred| / max(|y_true|, eps)) over the last axis.")
MeanSquaredLogarithmicError = _loss_class(
    "MeanSquaredLogarithmicError", mean_squared_logarithmic_error, "mean_squared_logarithmic_error",
    "mean((log(y_pred + 1) - log(y_true + 1))^2) over the last axis.")
BinaryCrossentropy = _loss_class("BinaryCrossentropy", binary_crossentropy, "binary_crossentropy",
                                 "Cross-entropy of independent binary labels (probabilities or logits).",
                                 from_logits=False, label_smoothing=0.0, axis=-1)
CategoricalCrossentropy = _loss_class("CategoricalCrossentropy", categorical_crossentropy,
                                      "categorical_crossentropy",
                                      "Cross-entropy of one-hot (or soft) labels against class probabilities.",
                                      from_logits=False, label_smoothing=0.0, axis=-1)


class SparseCategoricalCrossentropy(_loss_class("SparseCategoricalCrossentropy", sparse_categorical_crossentropy,
                                                "sparse_categorical_crossentropy", None,
                                                from_logits=False, ignore_class=None)):
    """Cross-entropy of integer class labels against class probabilities (or logits); labels equal to
    ``ignore_class`` weigh nothing, and the mean runs over the others."""

    def _call_with_mask(self, y_true, y_pred):
        y_pred = _as_float(y_pred, "y_pred", self.name)
        y_true = _as_float(y_true, "y_true", self.name)
        y_pred, y_true, _ = squeeze_or_expand_dimensions(y_pred, y_true)
        return _sparse_categorical_crossentropy(y_true, y_pred, **self._fn_kwargs)

BinaryFocalCrossentropy = _loss_class("BinaryFocalCrossentropy", binary_focal_crossentropy,
                                      "binary_focal_crossentropy", binary_focal_crossentropy.__doc__,
                                      apply_class_balancing=False, alpha=0.25, gamma=2.0, from_logits=False,
                                      label_smoothing=0.0, axis=-1)
CategoricalFocalCrossentropy = _loss_class("CategoricalFocalCrossentropy", categorical_focal_crossentropy,
                                           "categorical_focal_crossentropy", categorical_focal_crossentropy.__doc__,
                                           alpha=0.25, gamma=2.0, from_logits=False, label_smoothing=0.0, axis=-1)
Hinge = _loss_class("Hinge", hinge, "hinge", "mean(max(1 - y_true * y_pred, 0)), labels in {-1, 1} or {0, 1}.")
SquaredHinge = _loss_class("SquaredHinge", squared_hinge, "squared_hinge",
                           "mean(max(1 - y_true * y_pred, 0)^2), labels in {-1, 1} or {0, 1}.")
CategoricalHinge = _loss_class("CategoricalHinge", categorical_hinge, "categorical_hinge",
                               "max(max((1 - y_true) * y_pred) - sum(y_true * y_pred) + 1, 0).")
Huber = _loss_class("Huber", huber, "huber_loss", "Quadratic for |error| <= delta, linear beyond.", delta=1.0)
LogCosh = _loss_class("LogCosh", log_cosh, "log_cosh", "mean(log(cosh(y_pred - y_true))) over the last axis.")
KLDivergence = _loss_class("KLDivergence", kl_divergence, "kl_divergence",
                           "sum(y_true * log(y_true / y_pred)) over the last axis, both clipped to [eps, 1].")
Poisson = _loss_class("Poisson", poisson, "poisson", "mean(y_pred - y_true * log(y_pred + eps)).")
CosineSimilarity = _loss_class("CosineSimilarity", cosine_similarity, "cosine_similarity",
                               "-sum(l2_normalize(y_true) * l2_normalize(y_pred)) over axis.", axis=-1)

_CLASSES = [Loss, LossFunctionWrapper, MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError,
            MeanSquaredLogarithmicError, BinaryCrossentropy, CategoricalCrossentropy,
            SparseCategoricalCrossentropy, BinaryFocalCrossentropy, CategoricalFocalCrossentropy, Hinge,
            SquaredHinge, CategoricalHinge, Huber, LogCosh, KLDivergence, Poisson, CosineSimilarity]
_FUNCTIONS = {
    "mean_squared_error": mean_squared_error, "mse": mse, "MSE": MSE,
    "mean_absolute_error": mean_absolute_error, "mae": mae, "MAE": MAE,
    "mean_absolute_percentage_error": mean_absolute_percentage_error, "mape": mape, "MAPE": MAPE,
    "mean_squared_logarithmic_error": mean_squared_logarithmic_error, "msle": msle, "MSLE": MSLE,
    "binary_crossentropy": binary_crossentropy, "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "binary_focal_crossentropy": binary_focal_crossentropy,
    "categorical_focal_crossentropy": categorical_focal_crossentropy,
    "hinge": hinge, "squared_hinge": squared_hinge, "categorical_hinge": categorical_hinge,
    "huber": huber, "huber_loss": huber, "log_cosh": log_cosh, "logcosh": logcosh,
    "kl_divergence": kl_divergence, "kld": kld, "KLD": KLD, "kullback_leibler_divergence": kl_divergence,
    "poisson": poisson, "cosine_similarity": cosine_similarity,
}
_OBJECTS = {**{c.__name__: c for c in _CLASSES}, **_FUNCTIONS}


# ---- serialization

def serialize(loss):
    """A Loss as tf_keras writes it: ``{'module', 'class_name', 'config', 'registered_name'}``; a function
    as its name inside the same dict."""
    if loss is None:
        return None
    if isinstance(loss, Loss):
        return {"module": "keras.losses", "class_name": type(loss).__name__, "config": loss.get_config(),
                "registered_name": None}
    if callable(loss) and hasattr(loss, "__name__"):
        return {"module": "builtins", "class_name": "function", "config": loss.__name__,
                "registered_name": "function"}
    raise ValueError(f"Cannot serialize {loss!r}: expected a keras Loss or a loss function")


def _lookup(name, custom_objects, kind, table):
    from ember.keras.utils.object_registration import effective_custom_objects

    custom_objects = effective_custom_objects(custom_objects)
    if name in custom_objects:
        return custom_objects[name]
    if name in table:
        return table[name]
    raise ValueError(f"Unknown {kind}: '{name}'. Expected one of the built-in names {sorted(table)} or a name "
                     "in custom_objects.")


def _deserialize(config, custom_objects, kind, table):
    if isinstance(config, str):
        obj = _lookup(config, custom_objects, kind, table)
        return obj() if isinstance(obj, type) else obj
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret serialized {kind}: expected a name or a dict with 'class_name' "
                         f"and 'config'; got {config!r}")
    class_name, inner = config["class_name"], config.get("config")
    if class_name == "function":
        return _lookup(inner, custom_objects, kind, table)
    cls = _lookup(class_name, custom_objects, kind, table)
    if not isinstance(cls, type):
        return cls
    return cls.from_config(dict(inner or {}))


def deserialize(name, custom_objects=None, use_legacy_format=False):
    del use_legacy_format
    return _deserialize(name, custom_objects, "loss function", _OBJECTS)


def get(identifier):
    """A loss from what ``compile(loss=...)`` accepts: None, a name, a serialized dict, a Loss, a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, str):
        return deserialize(identifier)
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret loss function identifier: {identifier}")


def is_categorical_crossentropy(loss):
    """Whether ``loss`` is categorical cross-entropy in any form (Keras uses it to pick the accuracy)."""
    return (isinstance(loss, CategoricalCrossentropy)
            or (isinstance(loss, LossFunctionWrapper) and loss.fn is categorical_crossentropy)
            or getattr(loss, "__name__", None) == "categorical_crossentropy"
            or loss == "categorical_crossentropy")
