"""``ember.keras.metrics``: Keras 2's (``tf_keras``) metrics, as stateful Metric objects and as functions.

``Metric`` (a Layer whose state is non-trainable variables), the reducing ``Sum``/``Mean``/
``MeanMetricWrapper``; accuracies; confusion-matrix metrics (Precision, Recall, AUC, ...); the running means
of the losses; RMSE, R2; IoU metrics. ``get(identifier)`` resolves what ``Model.compile(metrics=...)``
accepts: a name of a function ('accuracy', 'acc', 'mse', 'sparse_categorical_accuracy') gives the function
(``compile`` wraps it in a MeanMetricWrapper and, for 'accuracy'/'acc', picks the binary, categorical or
sparse variant from the shapes, as Keras 2 does), a class name ('AUC') a new instance, a dict from
``serialize`` the object it describes, a Metric or callable itself.
"""

from ember.keras import losses as _losses
from ember.keras.metrics.base_metric import (Mean, MeanMetricWrapper, MeanTensor, Metric, Reduce, Sum,
                                             SumOverBatchSize)
from ember.keras.metrics.accuracy_metrics import (Accuracy, BinaryAccuracy, CategoricalAccuracy,
                                                  SparseCategoricalAccuracy, SparseTopKCategoricalAccuracy,
                                                  TopKCategoricalAccuracy, accuracy, binary_accuracy,
                                                  categorical_accuracy, sparse_categorical_accuracy,
                                                  sparse_top_k_categorical_accuracy, top_k_categorical_accuracy)
from ember.keras.metrics.confusion_metrics import (AUC, FalseNegatives, FalsePositives, Precision,
                                                   PrecisionAtRecall, Recall, RecallAtPrecision,
                                                   SensitivityAtSpecificity, SpecificityAtSensitivity,
                                                   TrueNegatives, TruePositives)
from ember.keras.metrics.f_score_metrics import F1Score, FBetaScore
from ember.keras.metrics.iou_metrics import IoU, BinaryIoU, MeanIoU, OneHotIoU, OneHotMeanIoU
from ember.keras.metrics.probabilistic_metrics import (BinaryCrossentropy, CategoricalCrossentropy,
                                                       CategoricalHinge, Hinge, KLDivergence, Poisson,
                                                       SparseCategoricalCrossentropy, SquaredHinge)
from ember.keras.metrics.regression_metrics import (CosineSimilarity, LogCoshError, MeanAbsoluteError,
                                                    MeanAbsolutePercentageError, MeanRelativeError,
                                                    MeanSquaredError, MeanSquaredLogarithmicError, R2Score,
                                                    RootMeanSquaredError)

# The loss functions, under the names Keras 2's metrics module gives them.
mean_squared_error = mse = _losses.mean_squared_error
mean_absolute_error = mae = _losses.mean_absolute_error
mean_absolute_percentage_error = mape = _losses.mean_absolute_percentage_error
mean_squared_logarithmic_error = msle = _losses.mean_squared_logarithmic_error
binary_crossentropy = _losses.binary_crossentropy
categorical_crossentropy = _losses.categorical_crossentropy
sparse_categorical_crossentropy = _losses.sparse_categorical_crossentropy
binary_focal_crossentropy = _losses.binary_focal_crossentropy
categorical_focal_crossentropy = _losses.categorical_focal_crossentropy
hinge = _losses.hinge
squared_hinge = _losses.squared_hinge
kl_divergence = kld = kullback_leibler_divergence = _losses.kl_divergence
poisson = _losses.poisson
log_cosh = logcosh = _losses.log_cosh
acc = accuracy

_CLASSES = [Metric, Reduce, Sum, Mean, MeanMetricWrapper, MeanTensor, SumOverBatchSize, Accuracy, BinaryAccuracy,
            CategoricalAccuracy, SparseCategoricalAccuracy, TopKCategoricalAccuracy, SparseTopKCategoricalAccuracy,
            AUC, Precision, Recall, TruePositives, FalsePositives, TrueNegatives, FalseNegatives,
            SensitivityAtSpecificity, SpecificityAtSensitivity, PrecisionAtRecall, RecallAtPrecision, IoU,
            BinaryIoU, MeanIoU, OneHotIoU, OneHotMeanIoU, BinaryCrossentropy, CategoricalCrossentropy,
            SparseCategoricalCrossentropy, KLDivergence, Poisson, Hinge, SquaredHinge, CategoricalHinge,
            MeanSquaredError, MeanAbsoluteError, MeanAbsolutePercentageError, MeanSquaredLogarithmicError,
            RootMeanSquaredError, CosineSimilarity, LogCoshError, MeanRelativeError, R2Score, FBetaScore, F1Score]
_FUNCTIONS = {
    "accuracy": accuracy, "acc": accuracy, "binary_accuracy": binary_accuracy,
    "categorical_accuracy": categorical_accuracy, "sparse_categorical_accuracy": sparse_categorical_accuracy,
    "top_k_categorical_accuracy": top_k_categorical_accuracy,
    "sparse_top_k_categorical_accuracy": sparse_top_k_categorical_accuracy,
    "mean_squared_error": mean_squared_error, "mse": mse, "mean_absolute_error": mean_absolute_error, "mae": mae,
    "mean_absolute_percentage_error": mape, "mape": mape, "mean_squared_logarithmic_error": msle, "msle": msle,
    "binary_crossentropy": binary_crossentropy, "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "binary_focal_crossentropy": binary_focal_crossentropy,
    "categorical_focal_crossentropy": categorical_focal_crossentropy,
    "hinge": hinge, "squared_hinge": squared_hinge, "categorical_hinge": _losses.categorical_hinge,
    "kl_divergence": kld, "kld": kld, "kullback_leibler_divergence": kld,
    "poisson": poisson, "log_cosh": log_cosh, "logcosh": log_cosh,
}
# tf_keras' upper-case short names are the functions too.
MSE, MAE, MAPE, MSLE, KLD = mse, mae, mape, msle, kld
_FUNCTIONS.update(MSE=mse, MAE=mae, MAPE=mape, MSLE=msle, KLD=kld)
_OBJECTS = {**{cls.__name__: cls for cls in _CLASSES}, **_FUNCTIONS}


def serialize(metric, use_legacy_format=False):
    """A metric as tf_keras writes it: ``{'module', 'class_name', 'config', 'registered_name'}``; a function
    as its name."""
    del use_legacy_format
    if isinstance(metric, Metric):
        return {"module": "keras.metrics", "class_name": type(metric).__name__, "config": metric.get_config(),
                "registered_name": None}
    if callable(metric) and hasattr(metric, "__name__"):
        return metric.__name__
    raise ValueError(f"Cannot serialize {metric!r}: expected a Metric or a metric function")


def deserialize(config, custom_objects=None, use_legacy_format=False):
    del use_legacy_format
    return _losses._deserialize(config, custom_objects, "metric function", _OBJECTS)


def get(identifier):
    """A metric from what ``compile(metrics=...)`` accepts (see the module docstring)."""
    if isinstance(identifier, (str, dict)):
        return deserialize(identifier)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret metric identifier: {identifier}")


def resolve(identifier, y_true_shape=None, y_pred_shape=None, loss=None, name=None):
    """The Metric object ``compile`` makes for one entry of ``metrics``: 'accuracy'/'acc' and
    'crossentropy'/'ce' become the binary, sparse or categorical variant as Keras 2 picks it (from the shapes
    of the labels and predictions; when those are unknown, from the loss), other names and functions a
    MeanMetricWrapper named as given, a Metric itself."""
    if isinstance(identifier, Metric):
        return identifier
    if isinstance(identifier, str) and identifier in ("accuracy", "acc", "crossentropy", "ce"):
        kind = _kind_from_shapes(y_true_shape, y_pred_shape) or _kind_from_loss(loss) or "categorical"
        fn = {("accuracy", "binary"): binary_accuracy, ("accuracy", "sparse"): sparse_categorical_accuracy,
              ("accuracy", "categorical"): categorical_accuracy, ("ce", "binary"): binary_crossentropy,
              ("ce", "sparse"): sparse_categorical_crossentropy,
              ("ce", "categorical"): categorical_crossentropy}[
            ("accuracy" if identifier in ("accuracy", "acc") else "ce", kind)]
        return MeanMetricWrapper(fn, name=name or identifier)
    metric = get(identifier)
    if isinstance(metric, type) and issubclass(metric, Metric):
        metric = metric()
    if isinstance(metric, Metric):
        return metric
    metric_name = name or (identifier if isinstance(identifier, str) else getattr(metric, "__name__", "metric"))
    return MeanMetricWrapper(metric, name=metric_name)


def _as_list(shape):
    if shape is None:
        return None
    if hasattr(shape, "as_list"):
        return shape.as_list() if shape.rank is not None else None
    return list(shape)


def _kind_from_shapes(y_true_shape, y_pred_shape):
    y_true_shape, y_pred_shape = _as_list(y_true_shape), _as_list(y_pred_shape)
    if y_true_shape is None or y_pred_shape is None or not y_pred_shape:
        return None
    y_t_last = y_true_shape[-1] if y_true_shape else None
    y_p_last = y_pred_shape[-1]
    if y_p_last == 1:
        return "binary"
    if len(y_true_shape) < len(y_pred_shape) or (y_t_last == 1 and y_p_last is not None and y_p_last > 1):
        return "sparse"
    return "categorical"


def _kind_from_loss(loss):
    name = loss if isinstance(loss, str) else getattr(loss, "name", None) or getattr(loss, "__name__", None)
    if isinstance(loss, _losses.LossFunctionWrapper):
        name = loss.fn.__name__
    name = str(name or "")
    if "sparse_categorical" in name:
        return "sparse"
    if "binary" in name:
        return "binary"
    if "categorical" in name:
        return "categorical"
    return None
