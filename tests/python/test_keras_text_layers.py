"""StringLookup, IntegerLookup and TextVectorization (python/ember/keras/layers/text_lookup.py) against
tf_keras on TensorFlow 2.21: vocabularies (given, from a file, adapted from lists, arrays and tf.data),
every output mode, masks, OOV buckets, invert, configs, and use in a functional model and in fit."""
import numpy as np
import pytest
import tensorflow
import tf_keras

import ember

TEXTS = ["The Cat sat.", "the cat, the HAT!", "a dog", "Dogs and cats; a hat?"]


def _plain(value):
    """Outputs, vocabularies and configs as plain Python (NumPy scalars, ragged and dense tensors, lists)."""
    if hasattr(value, "to_list"):
        return _plain(value.to_list())
    if hasattr(value, "numpy"):
        value = value.numpy()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, (list, tuple)) or type(value).__name__ == "ListWrapper":
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float):
        return round(value, 5)
    return value


def _both(build):
    """build(tf, keras) with ember and with TensorFlow + tf_keras, as plain Python."""
    return _plain(build(ember, ember.keras)), _plain(build(tensorflow, tf_keras))


def _same(build):
    ours, theirs = _both(build)
    assert ours == theirs


@pytest.mark.parametrize("options", [
    {}, {"mask_token": ""}, {"num_oov_indices": 2}, {"num_oov_indices": 3, "mask_token": "[MASK]"},
    {"max_tokens": 4}, {"oov_token": "<oov>"},
])
def test_string_lookup_adapt_and_int_output(options):
    data = ["a", "b", "c", "a", "b", "a", "d", "e", "e"]

    def build(tf, keras):
        layer = keras.layers.StringLookup(**options)
        layer.adapt(data)
        out = layer(tf.constant([["a", "zz", "e"], ["", "q", "b"]]))
        return layer.get_vocabulary(), layer.get_vocabulary(include_special_tokens=False), \
            layer.vocabulary_size(), out, out.dtype.name

    _same(build)


@pytest.mark.parametrize("output_mode", ["one_hot", "multi_hot", "count", "tf_idf"])
@pytest.mark.parametrize("inputs", [["a", "c", "x"], [["a", "c"], ["x", "a"]]])
def test_string_lookup_output_modes(output_mode, inputs):
    if output_mode == "one_hot" and isinstance(inputs[0], list):
        inputs = [["a"], ["x"]]

    def build(tf, keras):
        weights = {"idf_weights": [0.5, 1.0, 2.0]} if output_mode == "tf_idf" else {}
        layer = keras.layers.StringLookup(vocabulary=["a", "b", "c"], output_mode=output_mode, **weights)
        return layer(tf.constant(inputs))

    _same(build)


def _sparse_parts(value):
    assert type(value).__name__ == "SparseTensor", type(value)
    return value.indices, value.values, value.dense_shape, value.dtype.name


@pytest.mark.parametrize("output_mode", ["one_hot", "multi_hot", "count", "tf_idf"])
def test_sparse_outputs_as_tf_keras(output_mode):
    """sparse=True: the encoding's nonzero entries as a SparseTensor, in row-major order, for StringLookup,
    IntegerLookup and TextVectorization, eagerly and inside a function."""
    inputs = [["a"], ["x"], ["c"]] if output_mode == "one_hot" else [["a", "c", "a"], ["x", "b", "x"]]
    weights = {"idf_weights": [0.5, 1.0, 2.0]} if output_mode == "tf_idf" else {}

    def build(tf, keras):
        strings = keras.layers.StringLookup(vocabulary=["a", "b", "c"], output_mode=output_mode, sparse=True,
                                            **weights)
        integers = keras.layers.IntegerLookup(vocabulary=[5, 7, 9], output_mode=output_mode, sparse=True, **weights)
        numbers = tf.constant([[5], [4], [9]] if output_mode == "one_hot" else [[5, 9, 5], [4, 7, 4]], tf.int64)
        traced = tf.function(lambda x: strings(x))
        return [_sparse_parts(out) for out in (strings(tf.constant(inputs)), integers(numbers),
                                                traced(tf.constant(inputs)))]

    _same(build)
    if output_mode != "one_hot":
        def vectorize(tf, keras):
            layer = keras.layers.TextVectorization(vocabulary=["a", "b", "c"], output_mode=output_mode,
                                                   sparse=True, **weights)
            return _sparse_parts(layer(tf.constant(["a c a", "x b x"])))

        _same(vectorize)


def test_sparse_int_output_is_refused_as_tf_keras():
    for keras in (ember.keras, tf_keras):
        with pytest.raises(ValueError, match="`sparse` may only be true if `output_mode` is `'one_hot'`"):
            keras.layers.StringLookup(vocabulary=["a"], sparse=True)


def test_string_lookup_tf_idf_adapt_and_pad_to_max_tokens():
    def build(tf, keras):
        adapted = keras.layers.StringLookup(output_mode="tf_idf")
        adapted.adapt(tf.constant([["a", "b"], ["a", "c"], ["c", "b"], ["a", "d"]]))
        padded = keras.layers.StringLookup(vocabulary=["a", "b"], output_mode="multi_hot", max_tokens=6,
                                           pad_to_max_tokens=True, mask_token="")
        return adapted(tf.constant([["a", "b"], ["c", "x"]])), adapted.get_vocabulary(), \
            padded(tf.constant([["b", "", "q"]]))

    _same(build)


def test_string_lookup_invert_and_ragged():
    def build(tf, keras):
        forward = keras.layers.StringLookup(vocabulary=["a", "b", "c"], mask_token="[M]")
        inverse = keras.layers.StringLookup(vocabulary=["a", "b", "c"], mask_token="[M]", invert=True)
        ids = forward(tf.constant([["a", "[M]", "c", "zz"]]))
        return ids, inverse(ids), forward(tf.ragged.constant([["a", "b"], [], ["c"]]))

    _same(build)


def test_string_lookup_vocabulary_file(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("earth\nwind\nfire\n")

    def build(tf, keras):
        layer = keras.layers.StringLookup(vocabulary=str(path), num_oov_indices=2)
        inverse = keras.layers.StringLookup(vocabulary=str(path), invert=True)
        return layer(tf.constant(["fire", "water", "earth"])), layer.get_vocabulary(), \
            inverse(tf.constant([1, 3, 9])), layer.vocabulary_size()

    _same(build)


def test_integer_lookup():
    def build(tf, keras):
        given = keras.layers.IntegerLookup(vocabulary=[12, 36, 1138], mask_token=0, num_oov_indices=2)
        adapted = keras.layers.IntegerLookup(max_tokens=4)
        adapted.adapt(np.array([[12, 1138, 42], [42, 1000, 36], [42, 12, 7]]))
        hot = keras.layers.IntegerLookup(vocabulary=[12, 36], output_mode="count")
        inverse = keras.layers.IntegerLookup(vocabulary=[12, 36, 1138], invert=True)
        return (given(tf.constant([[12, 0, 5], [1138, 36, 77]])), given.get_vocabulary(), adapted.get_vocabulary(),
                adapted(tf.constant([42, 99], tf.int64)), hot(tf.constant([[12, 12, 36, 5]])),
                inverse(tf.constant([1, 3, 0], tf.int64)))

    _same(build)


def test_lookup_errors_as_tf_keras():
    for keras in (ember.keras, tf_keras):
        with pytest.raises(ValueError, match="`output_mode` must be `'int'` when `invert` is true"):
            keras.layers.StringLookup(vocabulary=["a"], invert=True, output_mode="count")
        with pytest.raises(ValueError, match="repeated term"):
            keras.layers.StringLookup(vocabulary=["a", "a"])
        with pytest.raises(ValueError, match="`idf_weights` must be set"):
            keras.layers.StringLookup(vocabulary=["a"], output_mode="tf_idf")
        with pytest.raises(RuntimeError, match="you must set the layer's vocabulary"):
            keras.layers.StringLookup(output_mode="count")(["a"])
        with pytest.raises(ValueError, match="Cannot adapt"):
            keras.layers.StringLookup(vocabulary=["a"]).adapt(["a"])
    strict = ember.keras.layers.StringLookup(vocabulary=["a"], num_oov_indices=0)
    assert strict(ember.constant(["a"])).numpy().tolist() == [0]
    with pytest.raises(ember.errors.InvalidArgumentError, match="all inputs should be in vocabulary"):
        strict(ember.constant(["a", "b"]))


@pytest.mark.parametrize("layer_class,kwargs", [
    ("StringLookup", {"vocabulary": ["a", "b"], "mask_token": "", "output_mode": "count"}),
    ("StringLookup", {"vocabulary": ["a", "b"], "output_mode": "tf_idf", "idf_weights": [1.0, 0.5]}),
    ("IntegerLookup", {"vocabulary": [12, 36], "mask_token": 0, "num_oov_indices": 2}),
    ("TextVectorization", {"max_tokens": 6, "ngrams": 2, "vocabulary": ["a", "b"], "output_sequence_length": 3}),
    ("TextVectorization", {"output_mode": "multi_hot", "vocabulary": ["a", "b"], "standardize": "lower",
                           "split": "character"}),
])
def test_configs_match_tf_keras_and_round_trip(layer_class, kwargs):
    ours, theirs = _both(lambda tf, keras: {k: v for k, v in getattr(keras.layers, layer_class)(**kwargs)
                                            .get_config().items() if k != "name"})
    assert ours == theirs
    layer = getattr(ember.keras.layers, layer_class)(**kwargs)
    clone = type(layer).from_config(layer.get_config())
    sample = ember.constant(["a b", "b c"]) if layer_class != "IntegerLookup" else ember.constant([12, 5, 0])
    np.testing.assert_array_equal(clone(sample).numpy(), layer(sample).numpy())
    keras_clone = getattr(tf_keras.layers, layer_class).from_config(theirs)
    np.testing.assert_array_equal(keras_clone(tensorflow.constant(sample.numpy())).numpy(), layer(sample).numpy())


@pytest.mark.parametrize("options", [
    {}, {"max_tokens": 5, "output_sequence_length": 4}, {"output_sequence_length": 8}, {"ngrams": 2},
    {"ngrams": (1, 3)}, {"standardize": None, "split": "whitespace"}, {"standardize": "lower", "ragged": True},
    {"split": "character", "max_tokens": 8}, {"output_mode": "multi_hot"}, {"output_mode": "count", "ngrams": 2},
    {"output_mode": "tf_idf"}, {"output_mode": "multi_hot", "max_tokens": 10, "pad_to_max_tokens": True},
])
def test_text_vectorization_matches_tf_keras(options):
    def build(tf, keras):
        layer = keras.layers.TextVectorization(**options)
        layer.adapt(TEXTS)
        return layer.get_vocabulary(), layer(tf.constant(["the dog sat on a mat", "Cat!", ""])), \
            layer.vocabulary_size()

    _same(build)


@pytest.mark.parametrize("source", ["list", "array", "tensor", "dataset"])
def test_text_vectorization_adapt_sources(source):
    def build(tf, keras):
        data = {"list": TEXTS, "array": np.array(TEXTS), "tensor": tf.constant(TEXTS),
                "dataset": tf.data.Dataset.from_tensor_slices(TEXTS).batch(3)}[source]
        layer = keras.layers.TextVectorization(max_tokens=7, output_mode="tf_idf")
        layer.adapt(data)
        return layer.get_vocabulary(), layer(tf.constant(["the cat and the dog"]))

    _same(build)


def test_text_vectorization_given_vocabulary_and_2d_input():
    def build(tf, keras):
        layer = keras.layers.TextVectorization(vocabulary=["cat", "dog", "the"], output_sequence_length=3)
        return layer(tf.constant([["The dog"], ["a cat the cat"]])), layer.get_vocabulary()

    _same(build)


def test_in_a_functional_model_and_in_fit():
    vocabulary = ["good", "bad", "fine", "awful"]
    sentences = np.array(["good fine", "bad awful", "good good", "awful", "fine", "bad"])
    labels = np.array([[1.0], [0.0], [1.0], [0.0], [1.0], [0.0]], np.float32)

    def build(tf, keras):
        inputs = keras.Input(shape=(1,), dtype="string")
        counts = keras.layers.TextVectorization(vocabulary=vocabulary, output_mode="count")(inputs)
        ids = keras.layers.TextVectorization(vocabulary=vocabulary, output_sequence_length=3)(inputs)
        outputs = keras.layers.Dense(1, kernel_initializer="zeros", activation="sigmoid")(counts)
        model = keras.Model(inputs, outputs)
        preprocess = keras.Model(inputs, [counts, ids])
        model.compile(optimizer=keras.optimizers.SGD(0.5), loss="binary_crossentropy")
        history = model.fit(sentences[:, None], labels, batch_size=6, epochs=3, shuffle=False, verbose=0)
        return preprocess.predict(sentences[:, None], verbose=0), history.history["loss"], \
            model.predict(sentences[:, None], verbose=0)

    ours, theirs = _both(build)
    assert ours[0] == theirs[0]
    np.testing.assert_allclose(ours[1], theirs[1], rtol=1e-5)
    np.testing.assert_allclose(ours[2], theirs[2], rtol=1e-5)
    assert ours[1][-1] < ours[1][0]


def test_lookup_layer_inside_ember_function():
    layer = ember.keras.layers.StringLookup(vocabulary=["a", "b"], num_oov_indices=2)
    traced = ember.function(lambda x: layer(x))
    eager = layer(ember.constant(["a", "zz", "b", "q"]))
    np.testing.assert_array_equal(traced(ember.constant(["a", "zz", "b", "q"])).numpy(), eager.numpy())


# ---- weights: tf_keras lists an adaptable layer's vocabulary (a VocabWeightHandler) and "tf_idf" state

DOCS = [["a", "b", "a"], ["c", "a"], ["d"]]
INTS = [[1, 2, 1], [3, 1], [4]]

WEIGHT_CASES = {
    "text_int": ("TextVectorization", dict(output_mode="int"), TEXTS),
    "text_multi_hot": ("TextVectorization", dict(output_mode="multi_hot"), TEXTS),
    "text_count": ("TextVectorization", dict(output_mode="count", ngrams=2), TEXTS),
    "text_tf_idf": ("TextVectorization", dict(output_mode="tf_idf"), TEXTS),
    "text_tf_idf_padded": ("TextVectorization", dict(output_mode="tf_idf", max_tokens=20, pad_to_max_tokens=True),
                           TEXTS),
    "text_tf_idf_vocabulary": ("TextVectorization", dict(output_mode="tf_idf", vocabulary=["the", "cat", "hat"],
                                                         idf_weights=[0.5, 0.25, 0.125]), None),
    "string_one_hot": ("StringLookup", dict(output_mode="one_hot"), ["a", "b", "a"]),
    "string_tf_idf": ("StringLookup", dict(output_mode="tf_idf"), DOCS),
    "string_tf_idf_mask_oov2": ("StringLookup", dict(output_mode="tf_idf", mask_token="", num_oov_indices=2), DOCS),
    "string_tf_idf_vocabulary": ("StringLookup", dict(output_mode="tf_idf", vocabulary=["a", "b"],
                                                      idf_weights=[0.5, 0.25]), None),
    "string_int_vocabulary": ("StringLookup", dict(vocabulary=["a", "b"]), None),
    "integer_tf_idf": ("IntegerLookup", dict(output_mode="tf_idf"), INTS),
    "integer_count_padded": ("IntegerLookup", dict(output_mode="count", max_tokens=8, pad_to_max_tokens=True), INTS),
    "integer_tf_idf_vocabulary": ("IntegerLookup", dict(output_mode="tf_idf", vocabulary=[1, 2],
                                                        idf_weights=[0.5, 0.25]), None),
}


def _adapted(tf, keras, name):
    class_name, kwargs, data = WEIGHT_CASES[name]
    layer = getattr(keras.layers, class_name)(**kwargs)
    if data is not None:
        layer.adapt(tf.ragged.constant(data) if isinstance(data[0], list) else tf.constant(data))
    return layer


def _probe(tf, name):
    class_name = WEIGHT_CASES[name][0]
    if name == "string_one_hot":
        return tf.constant(["a", "zz", "b"])
    if class_name == "TextVectorization":
        return tf.constant(["the cat", "a hat zz"])
    if class_name == "IntegerLookup":
        return tf.constant([[1, 3], [9, 2]], dtype=tf.int64)
    return tf.constant([["a", "c"], ["zz", "b"]])


def _weight_kinds(layer):
    return [("handler", None) if not hasattr(w, "shape") else ("variable", w.dtype.name, w.shape.rank)
            for w in layer.weights]


@pytest.mark.parametrize("name", sorted(WEIGHT_CASES))
def test_lookup_weights_match_tf_keras(name):
    """The weight list (its order, kinds and dtypes) and get_weights (values, in order) equal tf_keras'."""
    ours, theirs = _adapted(ember, ember.keras, name), _adapted(tensorflow, tf_keras, name)
    assert _weight_kinds(ours) == _weight_kinds(theirs)
    assert _plain(ours.get_weights()) == _plain(theirs.get_weights())
    assert _plain(ours.non_trainable_weights and ours.get_weights()) == _plain(theirs.get_weights())
    assert ours.trainable_weights == []


@pytest.mark.parametrize("name", [n for n, case in WEIGHT_CASES.items() if case[2] is not None])
def test_set_weights_of_an_adapted_layer_rebuilds_it_as_tf_keras(name):
    """A fresh layer given another's weights (ember's or tf_keras') computes what tf_keras' does."""
    theirs_source = _adapted(tensorflow, tf_keras, name)
    class_name, kwargs, _ = WEIGHT_CASES[name]
    theirs = getattr(tf_keras.layers, class_name)(**kwargs)
    theirs.set_weights(theirs_source.get_weights())
    expected = _plain(theirs(_probe(tensorflow, name)))
    for source in (theirs_source, _adapted(ember, ember.keras, name)):
        ours = getattr(ember.keras.layers, class_name)(**kwargs)
        ours.set_weights(source.get_weights())
        assert _plain(ours(_probe(ember, name))) == expected
        assert _plain(ours.get_weights()) == _plain(theirs.get_weights())


def test_set_weights_takes_idf_weights_of_another_length_as_tf_keras():
    for tf, keras in ((ember, ember.keras), (tensorflow, tf_keras)):
        layer = keras.layers.StringLookup(output_mode="tf_idf", vocabulary=["a", "b"], idf_weights=[0.5, 0.25])
        layer.set_weights([np.array([1.0, 2.0], np.float32)])
        assert _plain(layer.get_weights()) == [[1.0, 2.0]]
        with pytest.raises(ValueError, match="expecting 1 weights"):
            layer.set_weights([np.zeros(3, np.float32), np.zeros(3, np.float32)])


def test_a_vocabulary_weight_is_not_a_variable_nor_a_parameter():
    layer = _adapted(ember, ember.keras, "text_tf_idf")
    assert len(layer.weights) == 3 and len(layer.variables) == 2 and len(layer.non_trainable_variables) == 2


def test_summary_counts_lookup_parameters_as_tf_keras():
    """tf_keras counts num_documents only: the idf weights have an unknown length, the vocabulary no shape."""
    counts = []
    for tf, keras in ((ember, ember.keras), (tensorflow, tf_keras)):
        layer = _adapted(tf, keras, "text_tf_idf")
        inp = keras.Input(shape=(), dtype="string")
        model = keras.Model(inp, layer(inp))
        lines = []
        model.summary(print_fn=lines.append)
        counts.append((layer.count_params(), model.count_params(), [l for l in lines if "params" in l]))
    assert counts[0] == counts[1]


# ---- lookup layers built while a function traces (tf_keras builds them in the graph)

def _build_in_function(tf, keras, class_name, kwargs, x):
    @tf.function
    def build_and_call():
        layer = getattr(keras.layers, class_name)(**kwargs)
        built.append(layer)
        return layer(tf.constant(x)) if x is not None else tf.constant(0)

    built = []
    return build_and_call(), built[-1]


@pytest.mark.parametrize("class_name,kwargs,x", [
    ("StringLookup", dict(vocabulary=["a", "b"]), ["a", "zz", "b"]),
    ("StringLookup", dict(vocabulary=["a", "b"], output_mode="multi_hot", num_oov_indices=2), ["a", "zz"]),
    ("IntegerLookup", dict(vocabulary=[5, 7], mask_token=0), [7, 0, 3]),
    ("TextVectorization", dict(vocabulary=["the", "cat"]), ["the cat", "a cat"]),
    ("TextVectorization", dict(vocabulary=["the", "cat"], output_mode="count"), ["the cat", "a cat"]),
])
def test_lookup_layer_with_a_vocabulary_built_inside_a_function_as_tf_keras(class_name, kwargs, x):
    (ours, _), (theirs, _) = (_build_in_function(ember, ember.keras, class_name, kwargs, x),
                              _build_in_function(tensorflow, tf_keras, class_name, kwargs, x))
    assert _plain(ours) == _plain(theirs)


# Not IntegerLookup against tf_keras: TensorFlow's graph-built MutableHashTables all get one shared name, so
# after a StringLookup's, an IntegerLookup's int64 table conflicts with it in the process (TensorFlow's
# InvalidArgumentError, which depends on the order of the tests).
@pytest.mark.parametrize("class_name", ["StringLookup", "TextVectorization"])
def test_adaptable_lookup_layer_built_inside_a_function_as_tf_keras(class_name):
    """tf_keras makes the adapt state's MutableHashTables in the function's graph, which its call never
    reads; ember makes them eagerly. Either way the layer is built and lists its vocabulary weight."""
    for tf, keras in ((ember, ember.keras), (tensorflow, tf_keras)):
        _, layer = _build_in_function(tf, keras, class_name, {}, None)
        assert [type(w).__name__ for w in layer.weights] == ["VocabWeightHandler"]


@pytest.mark.parametrize("class_name,x", [("StringLookup", ["a"]), ("TextVectorization", ["a b"])])
def test_calling_a_lookup_layer_without_a_vocabulary_inside_a_function_is_failed_precondition(class_name, x):
    for tf, keras in ((ember, ember.keras), (tensorflow, tf_keras)):
        with pytest.raises(tf.errors.FailedPreconditionError, match="not initialized"):
            _build_in_function(tf, keras, class_name, {}, x)


@pytest.mark.parametrize("class_name,kwargs,x", [
    ("StringLookup", {}, ["a"]), ("StringLookup", dict(invert=True), [1]), ("IntegerLookup", {}, [1]),
    ("TextVectorization", {}, ["a b"]),
])
def test_calling_a_lookup_layer_without_a_vocabulary_is_failed_precondition_as_tf_keras(class_name, kwargs, x):
    """tf_keras' table stays uninitialized until a vocabulary comes; its size is 0 meanwhile."""
    sizes = []
    for tf, keras in ((ember, ember.keras), (tensorflow, tf_keras)):
        layer = getattr(keras.layers, class_name)(**kwargs)
        assert _plain(layer.get_weights()) == [[]]
        sizes.append(layer.vocabulary_size())
        with pytest.raises(tf.errors.FailedPreconditionError, match="not initialized"):
            layer(tf.constant(x))
        layer.set_weights([np.array(["a", "b"] if class_name != "IntegerLookup" else [1, 2])])
        sizes.append(layer.vocabulary_size())
    assert sizes[:2] == sizes[2:] and sizes[1] == sizes[0] + 2


def test_adaptable_integer_lookup_built_inside_a_function():
    _, layer = _build_in_function(ember, ember.keras, "IntegerLookup", {}, None)
    layer.adapt([[3, 3, 5]])
    assert _plain(layer.get_weights()) == [[3, 5]]


@pytest.mark.parametrize("kwargs", [dict(output_mode="tf_idf"),
                                    dict(output_mode="tf_idf", vocabulary=["a"], idf_weights=[0.5])])
def test_tf_idf_lookup_layer_built_inside_a_function_creates_variables_each_trace_as_tf_keras(kwargs):
    for tf, keras in ((ember, ember.keras), (tensorflow, tf_keras)):
        with pytest.raises(ValueError, match="first"):
            _build_in_function(tf, keras, "StringLookup", kwargs, None)


@pytest.mark.parametrize("class_name,data", [("StringLookup", ["a", "b"]), ("TextVectorization", ["a b"])])
def test_adapt_builds_the_layer_and_is_refused_inside_a_function_as_tf_keras(class_name, data):
    for tf, keras in ((ember, ember.keras), (tensorflow, tf_keras)):
        layer = getattr(keras.layers, class_name)(output_mode="tf_idf")
        layer.adapt(data)
        assert layer.built and layer.count_params() == 1  # num_documents: the idf weights' length is unknown
        with pytest.raises(RuntimeError, match="`PreprocessingLayer.adapt` inside a `tf.function`"):
            tf.function(lambda layer=layer: layer.adapt(tf.constant(data)))()


def test_text_vectorization_with_a_sequence_length_has_its_static_shape_in_a_functional_model():
    texts = np.array(["the cat sat on the mat", "dogs are great", "i love my cat"])
    shapes = []
    for keras, tf in ((ember.keras, ember), (tf_keras, tensorflow)):
        layer = keras.layers.TextVectorization(max_tokens=20, output_sequence_length=6)
        layer.adapt(texts)
        inputs = keras.Input(shape=(1,), dtype=tf.string)
        embedded = keras.layers.Embedding(20, 4)(layer(inputs))
        model = keras.Model(inputs, keras.layers.Conv1D(2, 3)(embedded))
        shapes.append((tuple(layer(inputs).shape), tuple(model.output_shape), model(texts[:, None]).shape[1:]))
    assert shapes[0] == shapes[1]
