"""ember.keras.metrics against tf_keras (Keras 2): the same batches (with and without sample weights) give the
same results and the same state, eagerly and inside ember.function (one trace); reset_state, get/serialize,
and bad input."""

import numpy as np
import pytest
import tf_keras

import ember
from ember.keras import metrics

RNG = np.random.default_rng(3)
N, C = 16, 4
PROBS = RNG.dirichlet(np.ones(C), size=N).astype(np.float32)
LOGITS = RNG.normal(size=(N, C)).astype(np.float32) * 2
LABELS = RNG.integers(0, C, N)
ONE_HOT = np.eye(C, dtype=np.float32)[LABELS]
BIN_TRUE = RNG.integers(0, 2, (N, 1)).astype(np.float32)
BIN_PROB = RNG.uniform(0, 1, (N, 1)).astype(np.float32)
# Predictions on the AUC's threshold grid and ties, where bucketing and comparisons must agree exactly.
BIN_PROB_GRID = np.round(RNG.uniform(0, 1, (N, 1)) * 10).astype(np.float32) / 10
MULTI_TRUE = RNG.integers(0, 2, (N, 3)).astype(np.float32)
MULTI_PROB = RNG.uniform(0, 1, (N, 3)).astype(np.float32)
REAL_TRUE = RNG.normal(size=(N, 3)).astype(np.float32)
REAL_PRED = RNG.normal(size=(N, 3)).astype(np.float32)
POS_TRUE = RNG.uniform(0, 2, (N, 3)).astype(np.float32)
POS_PRED = RNG.uniform(0.1, 2, (N, 3)).astype(np.float32)
WEIGHTS = RNG.uniform(0, 2, N).astype(np.float32)
SEG_TRUE = RNG.integers(0, 3, (N, 5))
SEG_PRED = RNG.integers(0, 3, (N, 5))

# key: (class name, kwargs, y_true, y_pred)
CASES = {
    "Accuracy": ("Accuracy", {}, LABELS, RNG.integers(0, C, N)),
    "BinaryAccuracy": ("BinaryAccuracy", {}, BIN_TRUE, BIN_PROB),
    "BinaryAccuracy-threshold": ("BinaryAccuracy", {"threshold": 0.3}, MULTI_TRUE, MULTI_PROB),
    "CategoricalAccuracy": ("CategoricalAccuracy", {}, ONE_HOT, PROBS),
    "SparseCategoricalAccuracy": ("SparseCategoricalAccuracy", {}, LABELS, PROBS),
    "SparseCategoricalAccuracy-trailing1": ("SparseCategoricalAccuracy", {}, LABELS[:, None], PROBS),
    "TopKCategoricalAccuracy": ("TopKCategoricalAccuracy", {"k": 2}, ONE_HOT, PROBS),
    "SparseTopKCategoricalAccuracy": ("SparseTopKCategoricalAccuracy", {"k": 2}, LABELS, PROBS),
    "AUC": ("AUC", {}, BIN_TRUE, BIN_PROB),
    "AUC-grid": ("AUC", {"num_thresholds": 11}, BIN_TRUE, BIN_PROB_GRID),
    "AUC-PR": ("AUC", {"curve": "PR"}, BIN_TRUE, BIN_PROB),
    "AUC-PR-majoring": ("AUC", {"curve": "PR", "summation_method": "majoring", "num_thresholds": 50},
                        BIN_TRUE, BIN_PROB),
    "AUC-ROC-minoring": ("AUC", {"summation_method": "minoring", "num_thresholds": 7}, BIN_TRUE, BIN_PROB),
    "AUC-thresholds": ("AUC", {"thresholds": [0.2, 0.5, 0.55, 0.9]}, BIN_TRUE, BIN_PROB),
    "AUC-multilabel": ("AUC", {"multi_label": True, "num_thresholds": 20}, MULTI_TRUE, MULTI_PROB),
    "AUC-multilabel-lazy": ("AUC", {"multi_label": True}, MULTI_TRUE, MULTI_PROB),
    "AUC-multilabel-PR-weights": ("AUC", {"multi_label": True, "curve": "PR", "num_labels": 3,
                                          "label_weights": [0.5, 1.0, 2.0]}, MULTI_TRUE, MULTI_PROB),
    "AUC-label-weights": ("AUC", {"label_weights": [0.5, 1.0, 2.0]}, MULTI_TRUE, MULTI_PROB),
    "AUC-logits": ("AUC", {"from_logits": True}, BIN_TRUE, LOGITS[:, :1]),
    "Precision": ("Precision", {}, BIN_TRUE, BIN_PROB),
    "Precision-thresholds": ("Precision", {"thresholds": [0.0, 0.3, 0.7, 1.0]}, MULTI_TRUE, MULTI_PROB),
    "Precision-top_k": ("Precision", {"top_k": 2}, ONE_HOT, PROBS),
    "Precision-class_id": ("Precision", {"class_id": 1}, ONE_HOT, PROBS),
    "Recall": ("Recall", {}, BIN_TRUE, BIN_PROB),
    "Recall-even-thresholds": ("Recall", {"thresholds": [0.0, 0.25, 0.5, 0.75, 1.0]}, BIN_TRUE, BIN_PROB_GRID),
    "Recall-top_k-class_id": ("Recall", {"top_k": 1, "class_id": 2}, ONE_HOT, PROBS),
    "TruePositives": ("TruePositives", {}, BIN_TRUE, BIN_PROB),
    "FalsePositives": ("FalsePositives", {"thresholds": [0.2, 0.8]}, BIN_TRUE, BIN_PROB),
    "TrueNegatives": ("TrueNegatives", {}, MULTI_TRUE, MULTI_PROB),
    "FalseNegatives": ("FalseNegatives", {"thresholds": [0.5, 0.9]}, MULTI_TRUE, MULTI_PROB),
    "SensitivityAtSpecificity": ("SensitivityAtSpecificity", {"specificity": 0.5}, BIN_TRUE, BIN_PROB),
    "SpecificityAtSensitivity": ("SpecificityAtSensitivity", {"sensitivity": 0.6, "num_thresholds": 30},
                                 BIN_TRUE, BIN_PROB),
    "PrecisionAtRecall": ("PrecisionAtRecall", {"recall": 0.7}, BIN_TRUE, BIN_PROB),
    "RecallAtPrecision": ("RecallAtPrecision", {"precision": 0.4, "class_id": 0}, ONE_HOT, PROBS),
    "MeanSquaredError": ("MeanSquaredError", {}, REAL_TRUE, REAL_PRED),
    "MeanAbsoluteError": ("MeanAbsoluteError", {}, REAL_TRUE, REAL_PRED),
    "MeanAbsolutePercentageError": ("MeanAbsolutePercentageError", {}, REAL_TRUE, REAL_PRED),
    "MeanSquaredLogarithmicError": ("MeanSquaredLogarithmicError", {}, POS_TRUE, POS_PRED),
    "RootMeanSquaredError": ("RootMeanSquaredError", {}, REAL_TRUE, REAL_PRED),
    "CosineSimilarity": ("CosineSimilarity", {}, REAL_TRUE, REAL_PRED),
    "LogCoshError": ("LogCoshError", {}, REAL_TRUE, REAL_PRED),
    "MeanRelativeError": ("MeanRelativeError", {"normalizer": [1.0, 2.0, 4.0]}, REAL_TRUE, REAL_PRED),
    "R2Score": ("R2Score", {}, REAL_TRUE, REAL_TRUE + 0.3 * REAL_PRED),
    "R2Score-variance": ("R2Score", {"class_aggregation": "variance_weighted_average"}, REAL_TRUE, REAL_PRED),
    "BinaryCrossentropy": ("BinaryCrossentropy", {}, BIN_TRUE, BIN_PROB),
    "BinaryCrossentropy-logits": ("BinaryCrossentropy", {"from_logits": True, "label_smoothing": 0.1},
                                  BIN_TRUE, LOGITS[:, :1]),
    "CategoricalCrossentropy": ("CategoricalCrossentropy", {"label_smoothing": 0.2}, ONE_HOT, PROBS),
    "SparseCategoricalCrossentropy": ("SparseCategoricalCrossentropy", {"from_logits": True}, LABELS, LOGITS),
    "SparseCategoricalCrossentropy-ignore": ("SparseCategoricalCrossentropy", {"ignore_class": 2}, LABELS, PROBS),
    "KLDivergence": ("KLDivergence", {}, PROBS[::-1].copy(), PROBS),
    "Poisson": ("Poisson", {}, POS_TRUE, POS_PRED),
    "Hinge": ("Hinge", {}, MULTI_TRUE, REAL_PRED),
    "SquaredHinge": ("SquaredHinge", {}, MULTI_TRUE, REAL_PRED),
    "CategoricalHinge": ("CategoricalHinge", {}, ONE_HOT, LOGITS),
    "F1Score": ("F1Score", {}, ONE_HOT, PROBS),
    "F1Score-micro-threshold": ("F1Score", {"average": "micro", "threshold": 0.3}, MULTI_TRUE, MULTI_PROB),
    "FBetaScore-macro": ("FBetaScore", {"average": "macro", "beta": 2.0}, ONE_HOT, PROBS),
    "FBetaScore-weighted": ("FBetaScore", {"average": "weighted", "beta": 0.5, "threshold": 0.5},
                            MULTI_TRUE, MULTI_PROB),
    "MeanIoU": ("MeanIoU", {"num_classes": 3}, SEG_TRUE, SEG_PRED),
    "MeanIoU-ignore": ("MeanIoU", {"num_classes": 3, "ignore_class": 1}, SEG_TRUE, SEG_PRED),
    "IoU": ("IoU", {"num_classes": 3, "target_class_ids": [0, 2]}, SEG_TRUE, SEG_PRED),
    "BinaryIoU": ("BinaryIoU", {"threshold": 0.4}, BIN_TRUE, BIN_PROB),
    "OneHotMeanIoU": ("OneHotMeanIoU", {"num_classes": C}, ONE_HOT, PROBS),
    "OneHotIoU": ("OneHotIoU", {"num_classes": C, "target_class_ids": [1, 3]}, ONE_HOT, PROBS),
}
NO_WEIGHTS = {"R2Score", "R2Score-variance"}  # weights of shape [N] there are covered by test_r2_sample_weight
HALF = N // 2


def batches(key, weighted):
    _, _, y_true, y_pred = CASES[key]
    w = WEIGHTS if weighted else None
    if weighted and y_true is SEG_TRUE:  # IoU's weights go with each label, as tf.math.confusion_matrix's
        w = WEIGHTS[:, None] * np.linspace(0.5, 1.5, 5, dtype=np.float32)
    for part in (slice(0, HALF), slice(HALF, N)):
        yield y_true[part], y_pred[part], (None if w is None else w[part])


def tf_keras_result(key, weighted):
    name, kwargs, _, _ = CASES[key]
    metric = getattr(tf_keras.metrics, name)(**kwargs)
    for y_true, y_pred, w in batches(key, weighted):
        metric.update_state(y_true, y_pred, sample_weight=w)
    return metric.result().numpy(), [v.numpy() for v in metric.variables]


@pytest.mark.parametrize("in_function", [False, True], ids=["eager", "function"])
@pytest.mark.parametrize("key, weighted", [(k, w) for k in sorted(CASES) for w in (False, True)
                                           if not (w and k in NO_WEIGHTS)])
def test_matches_tf_keras(key, weighted, in_function):
    name, kwargs, _, _ = CASES[key]
    metric = getattr(metrics, name)(**kwargs)
    traces = []

    def update(y_true, y_pred, w=None):
        traces.append(1)
        metric.update_state(y_true, y_pred, sample_weight=w)

    step = ember.function(update) if in_function else update
    for y_true, y_pred, w in batches(key, weighted):
        args = [ember.constant(y_true), ember.constant(y_pred)] + ([] if w is None else [ember.constant(w)])
        step(*args)
    want, want_state = tf_keras_result(key, weighted)
    got = metric.result().numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)
    assert len(metric.variables) == len(want_state)
    for mine, theirs in zip(metric.variables, want_state):
        np.testing.assert_allclose(mine.numpy(), theirs, rtol=2e-6, atol=2e-6, err_msg=mine.name)
    if in_function:
        lazy = (kwargs.get("multi_label") and not kwargs.get("num_labels")) or name in ("R2Score", "F1Score",
                                                                                          "FBetaScore")
        assert len(traces) == (2 if lazy else 1)  # a metric that makes its variables on the first update: 2


def test_r2_sample_weight():
    mine, theirs = metrics.R2Score(), tf_keras.metrics.R2Score()
    for y_true, y_pred, w in batches("R2Score", True):
        mine.update_state(y_true, y_pred, w)
        theirs.update_state(y_true, y_pred, w)
    np.testing.assert_allclose(mine.result().numpy(), theirs.result().numpy(), rtol=1e-5)


@pytest.mark.parametrize("weights", ["scalar", "per_entry", "trailing_1", "fewer_axes"])
def test_mean_and_sum_weights_as_tf_keras(weights):
    values = RNG.normal(size=(4, 3, 2)).astype(np.float32)
    w = {"scalar": np.float32(0.5), "per_entry": RNG.uniform(0, 1, (4, 3, 2)).astype(np.float32),
         "trailing_1": RNG.uniform(0, 1, (4, 3, 1)).astype(np.float32),
         # [4] becomes [4, 1], which does not broadcast to [4, 3, 2]: Keras reduces the values to [4, 3] first.
         "fewer_axes": RNG.uniform(0, 1, (4,)).astype(np.float32)}[weights]
    for cls in ("Mean", "Sum"):
        mine, theirs = getattr(metrics, cls)(), getattr(tf_keras.metrics, cls)()
        for _ in range(2):
            mine.update_state(values, sample_weight=w)
            theirs.update_state(values, sample_weight=w)
        np.testing.assert_allclose(mine.result().numpy(), theirs.result().numpy(), rtol=1e-6, err_msg=cls)


def test_mean_tensor_as_tf_keras():
    values = RNG.normal(size=(3, 2)).astype(np.float32)
    for w in (None, np.array([1.0, 0.0, 2.0], np.float32), RNG.uniform(0, 1, (3, 2)).astype(np.float32)):
        mine, theirs = metrics.MeanTensor(), tf_keras.metrics.MeanTensor()
        for k in range(2):
            mine.update_state(values * (k + 1), sample_weight=w)
            theirs.update_state(values * (k + 1), sample_weight=w)
        np.testing.assert_allclose(mine.result().numpy(), theirs.result().numpy(), rtol=1e-6)
    with pytest.raises(ValueError, match="must always have the same shape"):
        mine.update_state(np.zeros((2, 2)))


def test_call_updates_and_returns_the_result_and_reset_state_clears():
    metric = metrics.Mean(name="m")
    assert metric([1.0, 3.0]).numpy() == 2.0
    assert metric(6.0).numpy() == pytest.approx(10.0 / 3)
    metric.reset_state()
    assert metric.result().numpy() == 0.0
    assert [v.name for v in metric.variables] == ["total:0", "count:0"]
    assert metric.trainable_weights == [] and len(metric.non_trainable_weights) == 2
    auc = metrics.AUC(num_thresholds=5)
    auc.update_state([0, 1], [0.2, 0.7])
    auc.reset_state()
    assert all(not v.numpy().any() for v in auc.variables)


def test_merge_state():
    a, b = metrics.Mean(), metrics.Mean()
    a.update_state([1.0, 2.0])
    b.update_state([6.0])
    a.merge_state([b])
    assert a.result().numpy() == 3.0


def test_mean_metric_wrapper_of_a_custom_function():
    metric = metrics.MeanMetricWrapper(lambda y_true, y_pred: ember.abs(y_true - y_pred), name="l1")
    metric.update_state([[1.0, 2.0]], [[2.0, 4.0]])
    assert metric.result().numpy() == 1.5
    assert metric.name == "l1"


def test_metric_subclass_as_tf_keras_documents_it():
    class BinaryTruePositives(metrics.Metric):
        def __init__(self, name="binary_true_positives", **kwargs):
            super().__init__(name=name, **kwargs)
            self.true_positives = self.add_weight(name="tp", initializer="zeros")

        def update_state(self, y_true, y_pred, sample_weight=None):
            y_true = ember.cast(y_true, ember.bool)
            y_pred = ember.cast(y_pred, ember.bool)
            values = ember.cast(ember.logical_and(ember.equal(y_true, True), ember.equal(y_pred, True)), self.dtype)
            self.true_positives.assign_add(ember.reduce_sum(values))

        def result(self):
            return self.true_positives

    m = BinaryTruePositives()
    m.update_state([0, 1, 1, 1], [1, 0, 1, 1])
    assert float(m.result().numpy()) == 2.0
    assert [v.name for v in m.variables] == ["tp:0"]


# ---- get / serialize / resolve


@pytest.mark.parametrize("name", ["accuracy", "acc", "binary_accuracy", "categorical_accuracy",
                                  "sparse_categorical_accuracy", "top_k_categorical_accuracy", "mse", "mae", "mape",
                                  "msle", "kld", "KLD", "MSE", "logcosh", "binary_crossentropy",
                                  "sparse_categorical_crossentropy",
                                  "hinge", "poisson"])
def test_get_resolves_function_names_as_tf_keras(name):
    mine, theirs = metrics.get(name), tf_keras.metrics.get(name)
    if isinstance(theirs, str):  # tf_keras' get('kld') returns the string; its module attribute is the function
        theirs = getattr(tf_keras.metrics, name)
    assert callable(mine) and not isinstance(mine, metrics.Metric)
    assert mine.__name__ == theirs.__name__


@pytest.mark.parametrize("name", ["AUC", "Precision", "Recall", "MeanSquaredError", "KLDivergence", "Accuracy",
                                  "SparseCategoricalAccuracy", "RootMeanSquaredError"])
def test_get_resolves_class_names_to_instances(name):
    mine, theirs = metrics.get(name), tf_keras.metrics.get(name)
    assert type(mine).__name__ == type(theirs).__name__
    mine_config, theirs_config = mine.get_config(), theirs.get_config()
    mine_config.pop("name"), theirs_config.pop("name")
    assert mine_config == theirs_config


@pytest.mark.parametrize("key", ["AUC-PR", "AUC-thresholds", "Precision-top_k", "BinaryAccuracy-threshold",
                                 "F1Score-micro-threshold", "FBetaScore-weighted",
                                 "SparseCategoricalCrossentropy-ignore", "MeanIoU", "CategoricalCrossentropy"])
def test_config_matches_tf_keras_and_round_trips(key):
    name, kwargs, _, _ = CASES[key]
    mine = getattr(metrics, name)(name="m", **kwargs)
    theirs = getattr(tf_keras.metrics, name)(name="m", **kwargs)
    assert mine.get_config() == theirs.get_config()
    again = metrics.deserialize(metrics.serialize(mine))
    assert type(again) is type(mine) and again.get_config() == mine.get_config()
    assert metrics.deserialize(tf_keras.metrics.serialize(theirs)).get_config() == mine.get_config()


@pytest.mark.parametrize("y_true_shape, y_pred_shape, expected", [
    ([None, 1], [None, 1], "binary_accuracy"), ([None], [None, 10], "sparse_categorical_accuracy"),
    ([None, 1], [None, 10], "sparse_categorical_accuracy"), ([None, 10], [None, 10], "categorical_accuracy")])
def test_resolve_accuracy_from_shapes_as_keras(y_true_shape, y_pred_shape, expected):
    metric = metrics.resolve("accuracy", y_true_shape, y_pred_shape)
    assert isinstance(metric, metrics.MeanMetricWrapper) and metric._fn.__name__ == expected
    assert metric.name == "accuracy"


def test_resolve_falls_back_on_the_loss_and_wraps_functions():
    assert metrics.resolve("acc", loss="sparse_categorical_crossentropy")._fn is metrics.sparse_categorical_accuracy
    assert metrics.resolve("acc", loss=ember.keras.losses.BinaryCrossentropy())._fn is metrics.binary_accuracy
    assert metrics.resolve("ce", [None, 3], [None, 3])._fn is metrics.categorical_crossentropy
    mse = metrics.resolve("mse")
    assert isinstance(mse, metrics.MeanMetricWrapper) and mse.name == "mse"
    assert isinstance(metrics.resolve("AUC"), metrics.AUC)
    auc = metrics.AUC()
    assert metrics.resolve(auc) is auc


# ---- bad input


def test_bad_input_names_the_metric_and_what_was_expected():
    with pytest.raises(ember.errors.InvalidArgumentError,
                       match=r"sparse_categorical_accuracy: y_true must hold one class index per prediction, "
                             r"shaped \[3\]; got y_true of shape \[4\]"):
        metrics.SparseCategoricalAccuracy().update_state([0, 1, 2, 0], np.ones((3, 4), np.float32))
    with pytest.raises(ember.errors.InvalidArgumentError, match=r"auc: y_true and y_pred must have the same shape"):
        metrics.AUC(name="auc").update_state(np.zeros((3, 2)), np.zeros((3, 4)))
    with pytest.raises(ember.errors.InvalidArgumentError, match=r"does not broadcast to the values|does not fit"):
        metrics.Mean().update_state(np.zeros((3, 2)), sample_weight=np.ones(5))
    with pytest.raises(ember.errors.InvalidArgumentError, match=r"mean_iou: labels must be class ids in \[0, 3\)"):
        metrics.MeanIoU(3, name="mean_iou").update_state([0, 5], [0, 1])
    with pytest.raises(ember.errors.InvalidArgumentError,
                       match="values must be numeric or boolean; got a tensor of dtype string"):
        metrics.Mean().update_state(["a"])
    with pytest.raises(ember.errors.InvalidArgumentError,
                       match=r"iou: sample_weight of shape \[3, 1\] does not broadcast to the values of "
                             r"shape \[2, 4\]"):
        metrics.MeanIoU(3, name="iou").update_state(np.zeros((2, 4)), np.zeros((2, 4)), sample_weight=np.ones(3))
    with pytest.raises(ValueError, match="Threshold values must be in"):
        metrics.Precision(thresholds=[1.5])
    with pytest.raises(ValueError, match="Invalid AUC curve value"):
        metrics.AUC(curve="XY")
    with pytest.raises(ValueError, match="Could not interpret metric identifier: 3"):
        metrics.get(3)
    with pytest.raises(ValueError, match="Unknown metric function: 'accurracy'"):
        metrics.get("accurracy")


# ---- through compile / fit, as Keras users meet them


def test_fit_with_these_losses_metrics_and_optimizers_matches_tf_keras():
    """A small classifier trained by fit with a schedule, clipping, weight decay, a Loss object and several
    metrics: the history and the final weights equal tf_keras' from equal initial weights."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32) > 0).astype(np.int64)
    built = []
    for lib in (ember.keras, tf_keras):
        model = lib.Sequential([lib.layers.Dense(5, activation="relu", input_shape=(3,)),
                                lib.layers.Dense(2, activation="softmax")])
        schedule = lib.optimizers.schedules.ExponentialDecay(0.05, decay_steps=3, decay_rate=0.7)
        model.compile(lib.optimizers.Adam(learning_rate=schedule, clipnorm=0.5, weight_decay=0.01),
                      lib.losses.SparseCategoricalCrossentropy(),
                      metrics=["accuracy", lib.metrics.SparseTopKCategoricalAccuracy(k=1, name="top1"),
                               "sparse_categorical_crossentropy"])
        built.append(model)
    ours, theirs = built
    theirs.set_weights(ours.get_weights())
    h1 = ours.fit(x, y[:, None], batch_size=16, epochs=3, shuffle=False, verbose=0)
    h2 = theirs.fit(x, y[:, None], batch_size=16, epochs=3, shuffle=False, verbose=0)
    assert list(h1.history) == list(h2.history)
    for key in h2.history:
        np.testing.assert_allclose(h1.history[key], h2.history[key], rtol=1e-4, atol=1e-5, err_msg=key)
    for mine, theirs_w in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(mine, theirs_w, rtol=1e-4, atol=1e-5)


NAN = np.float32("nan")


@pytest.mark.parametrize("name, kwargs, y_true, y_pred", [
    ("AUC", {}, np.array([[0], [1], [1]], np.float32), np.array([[NAN], [0.5], [0.9]], np.float32)),
    ("AUC", {"num_thresholds": 5}, np.array([[0], [1]], np.float32), np.array([[np.inf], [-np.inf]], np.float32)),
    ("AUC", {}, np.zeros((0, 1), np.float32), np.zeros((0, 1), np.float32)),
    ("Precision", {}, np.zeros((0, 1), np.float32), np.zeros((0, 1), np.float32)),
    ("SparseCategoricalAccuracy", {}, np.zeros((0,), np.int64), np.zeros((0, 3), np.float32)),
    ("MeanIoU", {"num_classes": 3}, np.zeros((0,), np.int64), np.zeros((0,), np.int64)),
    ("TopKCategoricalAccuracy", {"k": 10}, np.eye(3)[[0, 1]], PROBS[:2, :3]),
    ("SparseTopKCategoricalAccuracy", {"k": 1}, np.array([5, 1]), PROBS[:2, :3]),
    ("BinaryAccuracy", {}, np.array([[1.0], [0.0]]), np.array([[NAN], [0.2]], np.float32)),
])
def test_edge_inputs_as_tf_keras(name, kwargs, y_true, y_pred):
    """Non-finite predictions, empty batches, k beyond the classes, labels beyond them: no crash, and
    tf_keras' numbers."""
    mine, theirs = getattr(metrics, name)(**kwargs), getattr(tf_keras.metrics, name)(**kwargs)
    mine.update_state(y_true, y_pred)
    theirs.update_state(y_true, y_pred)
    np.testing.assert_allclose(mine.result().numpy(), theirs.result().numpy())


@pytest.mark.parametrize("name, y_true, y_pred, kwargs", [
    ("binary_focal_crossentropy", MULTI_TRUE, MULTI_PROB, {}),
    ("binary_focal_crossentropy", MULTI_TRUE, MULTI_PROB * 4 - 2,
     {"from_logits": True, "apply_class_balancing": True, "gamma": 1.5}),
    ("categorical_focal_crossentropy", ONE_HOT, PROBS, {}),
    ("categorical_focal_crossentropy", ONE_HOT, LOGITS, {"from_logits": True, "alpha": 0.5}),
])
def test_focal_crossentropy_functions_as_tf_keras(name, y_true, y_pred, kwargs):
    ours = getattr(metrics, name)(y_true, y_pred, **kwargs)
    theirs = getattr(tf_keras.metrics, name)(y_true, y_pred, **kwargs)
    np.testing.assert_allclose(np.asarray(ours), theirs.numpy(), rtol=1e-5, atol=1e-6)
    assert metrics.get(name) is getattr(metrics, name)
