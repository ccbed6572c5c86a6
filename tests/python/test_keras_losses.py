"""ember.keras.losses against tf_keras (Keras 2): the same inputs give the same values, for every loss as a
function and as a class, under each reduction and with sample weights, eagerly and inside ember.function."""

import numpy as np
import pytest
import tf_keras

import ember
from ember.keras import losses

RNG = np.random.default_rng(7)
PROBS = RNG.dirichlet(np.ones(4), size=(3, 5)).astype(np.float32)          # [3, 5, 4], rows sum to 1
ONE_HOT = np.eye(4, dtype=np.float32)[RNG.integers(0, 4, (3, 5))]          # [3, 5, 4]
SPARSE = RNG.integers(0, 4, (3, 5))                                        # [3, 5]
REAL_TRUE = RNG.normal(size=(3, 5, 4)).astype(np.float32)
REAL_PRED = RNG.normal(size=(3, 5, 4)).astype(np.float32)
POSITIVE_TRUE = RNG.uniform(0.0, 3.0, (3, 5, 4)).astype(np.float32)
POSITIVE_PRED = RNG.uniform(0.1, 3.0, (3, 5, 4)).astype(np.float32)
BINARY = RNG.integers(0, 2, (3, 5, 4)).astype(np.float32)
SIGNS = 2 * BINARY - 1
LOGITS = RNG.normal(size=(3, 5, 4)).astype(np.float32) * 3

# name: (class kwargs, y_true, y_pred)
CASES = {
    "MeanSquaredError": ({}, REAL_TRUE, REAL_PRED),
    "MeanAbsoluteError": ({}, REAL_TRUE, REAL_PRED),
    "MeanAbsolutePercentageError": ({}, REAL_TRUE, REAL_PRED),
    "MeanSquaredLogarithmicError": ({}, POSITIVE_TRUE, POSITIVE_PRED),
    "BinaryCrossentropy": ({}, BINARY, PROBS),
    "BinaryCrossentropy-logits": ({"from_logits": True}, BINARY, LOGITS),
    "BinaryCrossentropy-smoothing": ({"label_smoothing": 0.2}, BINARY, PROBS),
    "BinaryCrossentropy-logits-smoothing": ({"from_logits": True, "label_smoothing": 0.1}, BINARY, LOGITS),
    "CategoricalCrossentropy": ({}, ONE_HOT, PROBS),
    "CategoricalCrossentropy-unnormalised": ({}, ONE_HOT, PROBS * 3.0),
    "CategoricalCrossentropy-logits": ({"from_logits": True}, ONE_HOT, LOGITS),
    "CategoricalCrossentropy-smoothing": ({"label_smoothing": 0.1}, ONE_HOT, PROBS),
    "CategoricalCrossentropy-logits-smoothing": ({"from_logits": True, "label_smoothing": 0.3}, ONE_HOT, LOGITS),
    "BinaryFocalCrossentropy": ({}, BINARY, PROBS),
    "BinaryFocalCrossentropy-balanced-logits": ({"apply_class_balancing": True, "alpha": 0.4, "gamma": 1.5,
                                                 "from_logits": True, "label_smoothing": 0.1}, BINARY, LOGITS),
    "CategoricalFocalCrossentropy": ({}, ONE_HOT, PROBS * 2),
    "CategoricalFocalCrossentropy-logits": ({"alpha": 0.5, "gamma": 3.0, "from_logits": True,
                                             "label_smoothing": 0.2}, ONE_HOT, LOGITS),
    "SparseCategoricalCrossentropy": ({}, SPARSE, PROBS),
    "SparseCategoricalCrossentropy-logits": ({"from_logits": True}, SPARSE, LOGITS),
    "SparseCategoricalCrossentropy-trailing1": ({}, SPARSE[..., None], PROBS),
    "Hinge": ({}, SIGNS, REAL_PRED),
    "Hinge-01labels": ({}, BINARY, REAL_PRED),
    "SquaredHinge": ({}, SIGNS, REAL_PRED),
    "SquaredHinge-01labels": ({}, BINARY, REAL_PRED),
    "CategoricalHinge": ({}, ONE_HOT, REAL_PRED),
    "Huber": ({}, REAL_TRUE, REAL_PRED * 2),
    "Huber-delta": ({"delta": 0.5}, REAL_TRUE, REAL_PRED * 2),
    "LogCosh": ({}, REAL_TRUE, REAL_PRED * 20),
    "KLDivergence": ({}, PROBS[::-1].copy(), PROBS),
    "Poisson": ({}, POSITIVE_TRUE, POSITIVE_PRED),
    "CosineSimilarity": ({}, REAL_TRUE, REAL_PRED),
    "CosineSimilarity-axis": ({"axis": 1}, REAL_TRUE, REAL_PRED),
}

WEIGHTS = {
    "none": None,
    "per_sample": RNG.uniform(0, 2, (3,)).astype(np.float32),
    "per_entry": RNG.uniform(0, 2, (3, 5)).astype(np.float32),
    "trailing_1": RNG.uniform(0, 2, (3, 5, 1)).astype(np.float32),
    "scalar": np.float32(0.5),
}


def class_of(key):
    return key.split("-")[0]


def tf_keras_value(key, reduction, sample_weight):
    kwargs, y_true, y_pred = CASES[key]
    loss = getattr(tf_keras.losses, class_of(key))(reduction=reduction, **kwargs)
    return loss(y_true, y_pred, sample_weight=sample_weight).numpy()


@pytest.mark.parametrize("reduction", ["auto", "sum", "none", "sum_over_batch_size"])
@pytest.mark.parametrize("key", sorted(CASES))
def test_loss_class_matches_tf_keras(key, reduction):
    kwargs, y_true, y_pred = CASES[key]
    loss = getattr(losses, class_of(key))(reduction=reduction, **kwargs)
    got = loss(y_true, y_pred).numpy()
    want = tf_keras_value(key, reduction, None)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("weights", sorted(WEIGHTS))
@pytest.mark.parametrize("key", ["MeanSquaredError", "CategoricalCrossentropy", "SparseCategoricalCrossentropy",
                                 "BinaryCrossentropy-logits", "Huber", "CosineSimilarity"])
def test_sample_weight_matches_tf_keras(key, weights):
    kwargs, y_true, y_pred = CASES[key]
    for reduction in ("sum_over_batch_size", "sum", "none"):
        loss = getattr(losses, class_of(key))(reduction=reduction, **kwargs)
        got = loss(y_true, y_pred, sample_weight=WEIGHTS[weights]).numpy()
        np.testing.assert_allclose(got, tf_keras_value(key, reduction, WEIGHTS[weights]), rtol=2e-6, atol=2e-6,
                                   err_msg=reduction)


FUNCTIONS = ["mean_squared_error", "mse", "mae", "mape", "msle", "binary_crossentropy", "categorical_crossentropy",
             "sparse_categorical_crossentropy", "binary_focal_crossentropy", "categorical_focal_crossentropy", "hinge",
             "squared_hinge", "categorical_hinge", "huber", "log_cosh", "logcosh", "kl_divergence", "kld", "poisson",
             "cosine_similarity"]
FUNCTION_INPUTS = {"msle": (POSITIVE_TRUE, POSITIVE_PRED), "poisson": (POSITIVE_TRUE, POSITIVE_PRED),
                   "binary_crossentropy": (BINARY, PROBS), "categorical_crossentropy": (ONE_HOT, PROBS),
                   "sparse_categorical_crossentropy": (SPARSE, PROBS), "binary_focal_crossentropy": (BINARY, PROBS),
                   "categorical_focal_crossentropy": (ONE_HOT, PROBS), "kl_divergence": (PROBS[::-1].copy(), PROBS),
                   "kld": (PROBS[::-1].copy(), PROBS), "hinge": (SIGNS, REAL_PRED)}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_loss_function_matches_tf_keras(name):
    y_true, y_pred = FUNCTION_INPUTS.get(name, (REAL_TRUE, REAL_PRED))
    got = losses.get(name)(y_true, y_pred).numpy()
    want = tf_keras.losses.get(name)(y_true, y_pred).numpy()
    assert getattr(losses, name) is losses.get(name)
    np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("key", ["MeanSquaredError", "CategoricalCrossentropy-logits-smoothing",
                                 "SparseCategoricalCrossentropy", "BinaryCrossentropy-smoothing", "Hinge-01labels",
                                 "KLDivergence", "CosineSimilarity-axis"])
def test_eager_and_function_agree(key):
    kwargs, y_true, y_pred = CASES[key]
    loss = getattr(losses, class_of(key))(**kwargs)
    weights = WEIGHTS["per_sample"]
    traces = []

    @ember.function
    def f(y_true, y_pred, w):
        traces.append(1)
        return loss(y_true, y_pred, sample_weight=w)

    eager = loss(y_true, y_pred, sample_weight=weights).numpy()
    for _ in range(2):
        np.testing.assert_allclose(f(ember.constant(y_true), ember.constant(y_pred), ember.constant(weights)).numpy(),
                                   eager, rtol=1e-6)
    assert len(traces) == 1


def test_a_none_batch_dimension_traces_once():
    loss = losses.SparseCategoricalCrossentropy(from_logits=True)
    traces = []

    @ember.function(input_signature=[ember.TensorSpec([None], ember.int32), ember.TensorSpec([None, 4], ember.float32)])
    def f(y_true, y_pred):
        traces.append(1)
        return loss(y_true, y_pred)

    for n in (5, 2):
        want = tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)(SPARSE[0, :n], LOGITS[0, :n]).numpy()
        np.testing.assert_allclose(f(SPARSE[0, :n].astype(np.int32), LOGITS[0, :n]).numpy(), want, rtol=1e-6)
    assert len(traces) == 1


def test_gradient_matches_tf_keras():
    import tensorflow as real_tf
    x = ember.Variable(LOGITS)
    with ember.GradientTape() as tape:
        value = losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)(ONE_HOT, x)
    got = tape.gradient(value, x).numpy()
    y = real_tf.Variable(LOGITS)
    with real_tf.GradientTape() as tape:
        value = tf_keras.losses.CategoricalCrossentropy(from_logits=True, label_smoothing=0.1)(ONE_HOT, y)
    np.testing.assert_allclose(got, tape.gradient(value, y).numpy(), rtol=1e-5, atol=1e-7)


def test_ignore_class_matches_tf_keras():
    labels = SPARSE.copy()
    labels[0, :3] = 3
    for reduction in ("sum_over_batch_size", "sum", "none"):
        for weights in (None, WEIGHTS["per_entry"]):
            got = losses.SparseCategoricalCrossentropy(ignore_class=3, reduction=reduction)(labels, PROBS, weights)
            want = tf_keras.losses.SparseCategoricalCrossentropy(ignore_class=3, reduction=reduction)(
                labels, PROBS, weights)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-6, atol=2e-6, err_msg=reduction)


def test_empty_batch_is_zero_not_nan():
    empty = np.zeros((0, 4), np.float32)
    assert losses.MeanSquaredError()(empty, empty).numpy() == 0.0
    assert tf_keras.losses.MeanSquaredError()(empty, empty).numpy() == 0.0


# ---- get / serialize / deserialize


@pytest.mark.parametrize("name", ["mse", "MSE", "mean_squared_error", "mae", "mape", "msle", "kld",
                                  "kullback_leibler_divergence", "huber_loss", "logcosh", "binary_crossentropy",
                                  "categorical_crossentropy", "sparse_categorical_crossentropy"])
def test_get_resolves_names_to_functions_as_tf_keras(name):
    got, want = losses.get(name), tf_keras.losses.get(name)
    assert callable(got) and not isinstance(got, losses.Loss)
    assert got.__name__ == want.__name__


@pytest.mark.parametrize("name", ["MeanSquaredError", "BinaryCrossentropy", "SparseCategoricalCrossentropy",
                                  "Huber", "CosineSimilarity", "KLDivergence"])
def test_get_resolves_class_names_to_instances(name):
    got, want = losses.get(name), tf_keras.losses.get(name)
    assert type(got).__name__ == type(want).__name__
    assert got.get_config() == want.get_config()


@pytest.mark.parametrize("key", ["BinaryCrossentropy-logits-smoothing", "Huber-delta", "CosineSimilarity-axis",
                                 "SparseCategoricalCrossentropy-logits", "MeanSquaredError"])
def test_serialize_round_trips_and_matches_tf_keras(key):
    kwargs, _, _ = CASES[key]
    loss = getattr(losses, class_of(key))(reduction="sum", name="my_loss", **kwargs)
    theirs = getattr(tf_keras.losses, class_of(key))(reduction="sum", name="my_loss", **kwargs)
    assert losses.serialize(loss) == tf_keras.losses.serialize(theirs)
    again = losses.get(losses.serialize(loss))
    assert type(again) is type(loss) and again.get_config() == loss.get_config()
    # and what tf_keras serialized, ember reads
    assert losses.deserialize(tf_keras.losses.serialize(theirs)).get_config() == loss.get_config()


def test_get_passes_instances_and_callables_through():
    loss = losses.Huber()
    assert losses.get(loss) is loss
    fn = lambda y_true, y_pred: y_pred  # noqa: E731
    assert losses.get(fn) is fn
    assert losses.get(None) is None


def test_loss_function_wrapper_and_subclass():
    wrapped = losses.LossFunctionWrapper(losses.mean_absolute_error, reduction="sum", name="l1")
    np.testing.assert_allclose(wrapped(REAL_TRUE, REAL_PRED).numpy(),
                               np.abs(REAL_TRUE - REAL_PRED).mean(-1).sum(), rtol=1e-5)
    assert losses.LossFunctionWrapper.from_config(wrapped.get_config()).fn is losses.mean_absolute_error

    class Cubed(losses.Loss):
        def call(self, y_true, y_pred):
            return ember.reduce_mean((y_pred - y_true) ** 3, axis=-1)

    np.testing.assert_allclose(Cubed()(REAL_TRUE, REAL_PRED).numpy(), ((REAL_PRED - REAL_TRUE) ** 3).mean(),
                               rtol=1e-5)


# ---- bad input


def test_bad_identifiers_are_value_errors():
    with pytest.raises(ValueError, match="Unknown loss function: 'nope'"):
        losses.get("nope")
    with pytest.raises(ValueError, match="Could not interpret loss function identifier: 3"):
        losses.get(3)
    with pytest.raises(ValueError, match="Invalid Reduction Key: bad"):
        losses.MeanSquaredError(reduction="bad")
    with pytest.raises(TypeError, match="unexpected keyword argument.*from_logit"):
        losses.BinaryCrossentropy(from_logit=True)


def test_incompatible_shapes_name_the_loss_and_both_shapes():
    with pytest.raises(ember.errors.InvalidArgumentError,
                       match=r"mean_squared_error: y_true and y_pred must have compatible shapes; got y_true "
                             r"of shape \[2, 3\] and y_pred of shape \[2, 4\]"):
        losses.MeanSquaredError()(np.zeros((2, 3)), np.zeros((2, 4)))
    with pytest.raises(ember.errors.InvalidArgumentError, match=r"y_true must hold one class index per "
                                                                r"prediction, shaped \[2\].*got y_true of shape \[3\]"):
        losses.sparse_categorical_crossentropy(np.array([0, 1, 2]), np.ones((2, 4), np.float32))
    with pytest.raises(ember.errors.InvalidArgumentError, match="sample_weight and the per-sample losses"):
        losses.MeanSquaredError()(np.zeros((2, 3)), np.zeros((2, 3)), sample_weight=np.ones(5))
    with pytest.raises(ember.errors.InvalidArgumentError,
                       match=r"y_pred must be numeric; got a tensor of dtype string"):
        losses.mean_squared_error(["a"], ["b"])
    with pytest.raises(ember.errors.InvalidArgumentError, match="axis must be in"):
        losses.CategoricalCrossentropy(axis=3)(ONE_HOT[0], PROBS[0])


@pytest.mark.parametrize("key", ["MeanSquaredError", "MeanAbsoluteError", "MeanAbsolutePercentageError",
                                 "MeanSquaredLogarithmicError", "BinaryCrossentropy", "BinaryCrossentropy-logits",
                                 "CategoricalCrossentropy", "CategoricalCrossentropy-unnormalised",
                                 "BinaryFocalCrossentropy-balanced-logits", "CategoricalFocalCrossentropy",
                                 "SparseCategoricalCrossentropy", "SparseCategoricalCrossentropy-logits", "Hinge",
                                 "SquaredHinge", "CategoricalHinge", "Huber", "LogCosh", "KLDivergence", "Poisson",
                                 "CosineSimilarity"])
def test_gradients_match_tf_keras(key):
    """d loss / d y_pred, with sample weights, against TensorFlow's autodiff of tf_keras' loss."""
    import tensorflow as real_tf
    kwargs, y_true, y_pred = CASES[key]
    weights = WEIGHTS["per_entry"]
    x = ember.Variable(y_pred)
    with ember.GradientTape() as tape:
        value = getattr(losses, class_of(key))(**kwargs)(y_true, x, sample_weight=weights)
    got = tape.gradient(value, x).numpy()
    y = real_tf.Variable(y_pred)
    with real_tf.GradientTape() as tape:
        value = getattr(tf_keras.losses, class_of(key))(**kwargs)(y_true, y, sample_weight=weights)
    np.testing.assert_allclose(got, tape.gradient(value, y).numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("reduction", ["sum_over_batch_size", "sum", "none"])
def test_a_mask_on_y_pred_weighs_masked_entries_zero_as_tf_keras(reduction):
    """Keras 2 reads y_pred's _keras_mask (left by Embedding(mask_zero=True) and the layers after it)."""
    import tensorflow as real_tf
    from ember.keras.engine.keras_tensor import set_mask
    mask = RNG.integers(0, 2, (3, 5)).astype(bool)
    mask[0, 0] = True
    for weights in (None, WEIGHTS["per_sample"]):
        ours = ember.constant(PROBS)
        set_mask(ours, ember.constant(mask))
        theirs = real_tf.constant(PROBS)
        theirs._keras_mask = real_tf.constant(mask)
        got = losses.CategoricalCrossentropy(reduction=reduction)(ONE_HOT, ours, weights).numpy()
        want = tf_keras.losses.CategoricalCrossentropy(reduction=reduction)(ONE_HOT, theirs, weights).numpy()
        np.testing.assert_allclose(got, want, rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("key", ["MeanSquaredError", "CategoricalCrossentropy", "BinaryCrossentropy", "Huber",
                                 "KLDivergence", "SparseCategoricalCrossentropy-logits", "CosineSimilarity"])
def test_float64_inputs_keep_tf_keras_dtype_and_values(key):
    kwargs, y_true, y_pred = CASES[key]
    y_true = y_true.astype(np.float64) if y_true.dtype.kind == "f" else y_true
    got = getattr(losses, class_of(key))(**kwargs)(y_true, y_pred.astype(np.float64)).numpy()
    want = getattr(tf_keras.losses, class_of(key))(**kwargs)(y_true, y_pred.astype(np.float64)).numpy()
    assert got.dtype == want.dtype  # float64, except Huber, which Keras 2 computes in float32
    np.testing.assert_allclose(got, want, rtol=1e-6 if want.dtype == np.float32 else 1e-12)
