"""Keras HDF5 files (python/ember/keras/hdf5_format.py) against tf_keras: save_weights/load_weights and
model.save/load_model in both directions, by_name/skip_mismatch, optimizer state, bad files."""
import os

import numpy as np
import pytest
import tf_keras

import ember as em

RNG = np.random.default_rng(5)
X = RNG.standard_normal((16, 4)).astype(np.float32)
Y = RNG.standard_normal((16, 2)).astype(np.float32)


def sequential(k):
    return k.Sequential([k.layers.Dense(3, input_shape=(4,), name="d1"), k.layers.BatchNormalization(name="bn"),
                         # rate 0: the training steps of the two frameworks compare
                         k.layers.Dropout(0.0, name="drop"), k.layers.Dense(2, name="d2")])


def functional(k):
    inp = k.Input((4,), name="x")
    a = k.layers.Dense(3, activation="relu", name="a")(inp)
    b = k.layers.Dense(3, name="b")(inp)
    out = k.layers.Dense(2, name="out")(k.layers.Concatenate(name="cat")([a, b]))
    return k.Model(inp, out, name="two_paths")


def trained(k, build):
    model = build(k)
    # SGD with momentum: its slot is restored too, and its step is linear in the gradient (Adam's ratio of
    # tiny moments would amplify float rounding into visible differences).
    model.compile(optimizer=k.optimizers.SGD(0.05, momentum=0.9), loss="mse")
    model.fit(X, Y, batch_size=8, epochs=2, verbose=0, shuffle=False)
    return model


@pytest.mark.parametrize("build", [sequential, functional])
def test_weights_written_by_tf_keras_load_into_ember_and_back(tmp_path, build):
    theirs = trained(tf_keras, build)
    theirs.save_weights(str(tmp_path / "w.h5"))
    ours = build(em.keras)
    ours.load_weights(str(tmp_path / "w.h5"))
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0), rtol=1e-5, atol=1e-6)

    ours.save_weights(str(tmp_path / "ours.h5"))
    again = build(tf_keras)
    again.load_weights(str(tmp_path / "ours.h5"))
    np.testing.assert_allclose(again.predict(X, verbose=0), theirs.predict(X, verbose=0), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("build", [sequential, functional])
def test_model_saved_by_tf_keras_loads_compiled_and_continues_training(tmp_path, build):
    theirs = trained(tf_keras, build)
    theirs.save(str(tmp_path / "m.h5"))
    ours = em.keras.models.load_model(str(tmp_path / "m.h5"))
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    # The optimizer state came along: one more step matches tf_keras' own next step.
    theirs.train_on_batch(X[:8], Y[:8])
    ours.train_on_batch(X[:8], Y[:8])
    np.testing.assert_allclose(ours.predict(X, verbose=0), theirs.predict(X, verbose=0), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("build", [sequential, functional])
def test_model_saved_by_ember_loads_in_tf_keras(tmp_path, build):
    ours = trained(em.keras, build)
    ours.save(str(tmp_path / "m.h5"))
    theirs = tf_keras.models.load_model(str(tmp_path / "m.h5"))
    np.testing.assert_allclose(theirs.predict(X, verbose=0), ours.predict(X, verbose=0), rtol=1e-5, atol=1e-6)
    again = em.keras.models.load_model(str(tmp_path / "m.h5"))
    np.testing.assert_allclose(again.predict(X, verbose=0), ours.predict(X, verbose=0), rtol=1e-6)
    ours.train_on_batch(X[:8], Y[:8])
    again.train_on_batch(X[:8], Y[:8])
    np.testing.assert_allclose(again.predict(X, verbose=0), ours.predict(X, verbose=0), rtol=1e-5, atol=1e-6)


def test_by_name_and_skip_mismatch_as_tf_keras(tmp_path):
    source = trained(tf_keras, sequential)
    source.save_weights(str(tmp_path / "w.h5"))
    for k in (tf_keras, em.keras):
        # d1 matches, "other" is not in the file, d2's kernel is [2, 5] against the saved [3, 2].
        target = k.Sequential([k.layers.Dense(3, input_shape=(4,), name="d1"), k.layers.Dense(2, name="other"),
                               k.layers.Dense(5, name="d2")])
        before = target.get_layer("other").get_weights()
        with pytest.raises(ValueError):
            target.load_weights(str(tmp_path / "w.h5"), by_name=True)
        target.load_weights(str(tmp_path / "w.h5"), by_name=True, skip_mismatch=True)
        np.testing.assert_array_equal(target.get_layer("d1").get_weights()[0], source.get_layer("d1").get_weights()[0])
        np.testing.assert_array_equal(target.get_layer("other").get_weights()[0], before[0])


def test_mismatched_models_and_bad_files_raise_clear_errors(tmp_path):
    source = trained(em.keras, sequential)
    source.save_weights(str(tmp_path / "w.h5"))
    small = em.keras.Sequential([em.keras.layers.Dense(2, input_shape=(4,))])
    with pytest.raises(ValueError, match="holds weights for 3 layer"):
        small.load_weights(str(tmp_path / "w.h5"))
    with pytest.raises(em.errors.NotFoundError):
        small.load_weights(str(tmp_path / "missing.h5"))
    (tmp_path / "junk.h5").write_bytes(b"not an hdf5 file at all")
    with pytest.raises(em.errors.DataLossError, match="junk.h5 is not a readable HDF5 file"):
        small.load_weights(str(tmp_path / "junk.h5"))
    with pytest.raises(ValueError, match="no model_config"):
        em.keras.models.load_model(str(tmp_path / "w.h5"))


def test_a_failed_save_keeps_the_previous_file(tmp_path, monkeypatch):
    model = trained(em.keras, sequential)
    path = str(tmp_path / "w.h5")
    model.save_weights(path)
    good = open(path, "rb").read()
    import h5py

    def fail(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(h5py.Group, "create_dataset", fail)
    with pytest.raises(OSError, match="disk full"):
        model.save_weights(path)
    assert open(path, "rb").read() == good
    assert not os.path.exists(path + ".ember-tmp")


# ---- lookup layers: a "tf_idf" layer's idf weights go through HDF5; an adapted vocabulary cannot

TEXT_LAYERS = {
    "text_vectorization": (lambda k: k.layers.TextVectorization(
        output_mode="tf_idf", vocabulary=["the", "cat", "dog"], idf_weights=[0.5, 0.25, 0.125], name="lookup"),
        lambda tf: tf.constant(["the cat", "zz dog the"]), ()),
    "string_lookup": (lambda k: k.layers.StringLookup(
        output_mode="tf_idf", vocabulary=["a", "b"], idf_weights=[0.5, 0.25], name="lookup"),
        lambda tf: tf.constant([["a", "b"], ["zz", "a"]]), (2,)),
    "integer_lookup": (lambda k: k.layers.IntegerLookup(
        output_mode="tf_idf", vocabulary=[7, 9], idf_weights=[0.5, 0.25], name="lookup"),
        lambda tf: tf.constant([[7, 9], [1, 7]], dtype=tf.int64), (2,)),
}


def text_model(k, tf, name):
    make_layer, _, shape = TEXT_LAYERS[name]
    dtype = "int64" if name == "integer_lookup" else "string"
    inp = k.Input(shape=shape, dtype=dtype)
    out = k.layers.Dense(2, kernel_initializer="ones", name="dense")(make_layer(k)(inp))
    model = k.Model(inp, out)
    # Other idf weights than the config's, so a file that loads them shows.
    lookup = model.get_layer("lookup")
    lookup.set_weights([np.array([2.0, 3.0, 4.0, 5.0][:len(lookup.get_weights()[0])], np.float32)])
    return model


@pytest.mark.parametrize("name", sorted(TEXT_LAYERS))
@pytest.mark.parametrize("writer", ["tf_keras", "ember"])
def test_tf_idf_lookup_weights_and_models_go_through_hdf5_both_ways(tmp_path, name, writer):
    import tensorflow

    libs = {"tf_keras": (tf_keras, tensorflow), "ember": (em.keras, em)}
    k, tf = libs[writer]
    (rk, rtf), = [lib for key, lib in libs.items() if key != writer]
    probe = TEXT_LAYERS[name][1]
    source = text_model(k, tf, name)
    expected = np.asarray(source(probe(tf)))
    source.save_weights(str(tmp_path / "w.h5"))
    source.save(str(tmp_path / "m.h5"))

    fresh = text_model(rk, rtf, name)
    fresh.get_layer("lookup").set_weights([np.zeros_like(w) for w in fresh.get_layer("lookup").get_weights()])
    fresh.load_weights(str(tmp_path / "w.h5"))
    np.testing.assert_allclose(np.asarray(fresh(probe(rtf))), expected, rtol=1e-6)
    loaded = rk.models.load_model(str(tmp_path / "m.h5"))
    np.testing.assert_allclose(np.asarray(loaded(probe(rtf))), expected, rtol=1e-6)
    np.testing.assert_allclose(loaded.get_layer("lookup").get_weights()[0], source.get_layer("lookup").get_weights()[0])


def test_an_adapted_lookup_layer_cannot_go_to_hdf5_as_in_tf_keras(tmp_path):
    import tensorflow

    for k, tf in ((tf_keras, tensorflow), (em.keras, em)):
        def model_of(layer, k=k):
            inp = k.Input(shape=(), dtype="string")
            return k.Model(inp, layer(inp))

        with_vocabulary = model_of(k.layers.TextVectorization(output_mode="tf_idf", vocabulary=["cat"],
                                                              idf_weights=[0.5]))
        with_vocabulary.save_weights(str(tmp_path / "vocabulary.h5"))
        layer = k.layers.TextVectorization(output_mode="tf_idf")
        layer.adapt(["the cat", "the dog"])
        model = model_of(layer)
        for use in (lambda: model.save_weights(str(tmp_path / "w.h5")), lambda: model.save(str(tmp_path / "m.h5")),
                    lambda: model.load_weights(str(tmp_path / "vocabulary.h5"))):
            with pytest.raises(NotImplementedError, match="not an instance of `tf.Variable`"):
                use()
