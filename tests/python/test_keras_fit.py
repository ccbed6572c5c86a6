"""Model.compile/fit/evaluate/predict (ember/keras/engine/training.py): one trace of the train step, the
progress bar's text, callbacks, validation, weights; differential against tf_keras with the same
initial weights and data."""

import io
import contextlib
import re

import numpy as np
import pytest

import ember as tf


def _data(n=10, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    y = (x @ np.array([1.0, -2.0, 0.5], np.float32) > 0).astype(np.int64)
    return x, y


def _pair(hidden=4, classes=2):
    """The same MLP in ember and in tf_keras, with equal initial weights."""
    import tf_keras

    ours = tf.keras.Sequential([tf.keras.layers.Dense(hidden, activation="relu", input_shape=(3,)),
                                tf.keras.layers.Dense(classes, activation="softmax")])
    theirs = tf_keras.Sequential([tf_keras.layers.Dense(hidden, activation="relu", input_shape=(3,)),
                                  tf_keras.layers.Dense(classes, activation="softmax")])
    theirs.set_weights(ours.get_weights())
    return ours, theirs


def _normalize(text):
    """Progress-bar text with times and numbers masked (they differ run to run)."""
    text = re.sub(r"ETA: \S+", "ETA: T", text)
    text = re.sub(r" \d+(ms|us|s)/(step|epoch)", r" T/\2", text)
    text = re.sub(r" - \d+s", " - Ts", text)
    return re.sub(r"\d\.\d{4}(e[+-]\d+)?", "N", text)


def _final_lines(text):
    """What a terminal shows: each line after its last carriage return, backspaces dropped."""
    return [line.split("\r")[-1].replace("\b", "") for line in text.split("\n")]


@pytest.mark.parametrize("optimizer", ["sgd", "adam", "rmsprop"])
def test_train_step_traced_once_with_partial_last_batch(optimizer):
    traces = []

    class Counting(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(2)

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            traces.append(data[0].shape.as_list())
            return super().train_step(data)

    model = Counting()
    model.compile(optimizer, "sparse_categorical_crossentropy", metrics=["accuracy", "mse"])
    x, y = _data(10)
    model.fit(x, y, batch_size=4, epochs=3, verbose=0, validation_data=(x[:3], y[:3]))  # batches of 4, 4, 2
    assert traces == [[None, 3]]  # the optimizer's slots and the metrics' variables were made before


def test_fit_matches_tf_keras_losses_and_metrics():
    import tf_keras

    ours, theirs = _pair()
    x, y = _data(20)
    ours.compile(tf.keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy", metrics=["accuracy"])
    theirs.compile(tf_keras.optimizers.SGD(0.5), "sparse_categorical_crossentropy", metrics=["accuracy"])
    h1 = ours.fit(x, y, batch_size=8, epochs=4, shuffle=False, verbose=0, validation_data=(x[:6], y[:6]))
    h2 = theirs.fit(x, y, batch_size=8, epochs=4, shuffle=False, verbose=0, validation_data=(x[:6], y[:6]))
    assert list(h1.history) == list(h2.history) == ["loss", "accuracy", "val_loss", "val_accuracy"]
    for key in h2.history:
        np.testing.assert_allclose(h1.history[key], h2.history[key], rtol=1e-4, atol=1e-6, err_msg=key)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(ours.evaluate(x, y, verbose=0), theirs.evaluate(x, y, verbose=0), rtol=1e-5)
    np.testing.assert_allclose(ours.predict(x, batch_size=7, verbose=0), theirs.predict(x, batch_size=7, verbose=0),
                               rtol=1e-5, atol=1e-7)


def test_sample_and_class_weight_match_tf_keras():
    import tf_keras

    x, y = _data(16, seed=3)
    sw = np.linspace(0.1, 2.0, 16).astype(np.float32)
    for kwargs in ({"sample_weight": sw}, {"class_weight": {0: 0.3, 1: 2.0}}):
        ours, theirs = _pair()
        ours.compile(tf.keras.optimizers.SGD(0.2), "sparse_categorical_crossentropy")
        theirs.compile(tf_keras.optimizers.SGD(0.2), "sparse_categorical_crossentropy")
        h1 = ours.fit(x, y, batch_size=5, epochs=2, shuffle=False, verbose=0, **kwargs)
        h2 = theirs.fit(x, y, batch_size=5, epochs=2, shuffle=False, verbose=0, **kwargs)
        np.testing.assert_allclose(h1.history["loss"], h2.history["loss"], rtol=1e-4, err_msg=str(kwargs))


def test_training_converges():
    rng = np.random.default_rng(1)
    x = rng.normal(size=(512, 2)).astype(np.float32)
    y = ((x[:, 0] ** 2 + x[:, 1] ** 2) < 1.0).astype(np.float32)
    tf.random.set_seed(1)
    model = tf.keras.Sequential([tf.keras.layers.Dense(32, activation="relu"),
                                 tf.keras.layers.Dense(32, activation="relu"),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    model.compile(tf.keras.optimizers.Adam(0.01), "binary_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, batch_size=32, epochs=30, verbose=0)
    assert history.history["loss"][-1] < 0.3 * history.history["loss"][0]
    assert history.history["accuracy"][-1] > 0.93


def test_progress_bar_text_matches_tf_keras():
    import tf_keras

    x, y = _data(10)
    outputs = []
    for keras, model in zip((tf.keras, tf_keras), _pair()):
        model.compile(keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
        texts = []
        for verbose in (1, 2):
            buffer = io.StringIO()
            with contextlib.redirect_stdout(buffer):
                model.fit(x, y, batch_size=4, epochs=2, verbose=verbose, validation_split=0.2)
                model.evaluate(x, y, verbose=verbose)
                model.predict(x, verbose=verbose)
            texts.append(buffer.getvalue())
        outputs.append(texts)
    ours, theirs = outputs
    assert [_normalize("\n".join(_final_lines(t))) for t in ours] == \
        [_normalize("\n".join(_final_lines(t))) for t in theirs]
    lines = _final_lines(ours[0])
    assert lines[0] == "Epoch 1/2"
    assert re.fullmatch(r"2/2 \[==============================\] - \d+s \d+(ms|us)/step - loss: \d\.\d{4} - "
                        r"accuracy: \d\.\d{4}(e[+-]\d+)? - val_loss: \d\.\d{4} - val_accuracy: \d\.\d{4}(e[+-]\d+)?",
                        lines[1].rstrip()), lines[1]
    assert re.fullmatch(r"2/2 - \d+s - loss: \S+ - accuracy: \S+ - val_loss: \S+ - val_accuracy: \S+ - "
                        r"\d+(s|ms|us)/epoch - \d+(s|ms|us)/step", _final_lines(ours[1])[1].rstrip())


def test_verbose_zero_prints_nothing():
    model, _ = _pair()
    model.compile("sgd", "sparse_categorical_crossentropy")
    buffer = io.StringIO()
    x, y = _data(10)
    with contextlib.redirect_stdout(buffer):
        model.fit(x, y, epochs=2, verbose=0)
        model.evaluate(x, y, verbose=0)
        model.predict(x, verbose=0)
    assert buffer.getvalue() == ""


def test_iterable_of_batches_and_dict_inputs():
    a = tf.keras.Input((2,), name="a")
    b = tf.keras.Input((1,), name="b")
    out = tf.keras.layers.Dense(1)(tf.keras.layers.Concatenate()([a, b]))
    model = tf.keras.Model({"a": a, "b": b}, out)
    model.compile(tf.keras.optimizers.SGD(0.1), "mse")
    rng = np.random.default_rng(0)
    batches = [({"a": rng.normal(size=(4, 2)).astype(np.float32), "b": rng.normal(size=(4, 1)).astype(np.float32)},
                rng.normal(size=(4, 1)).astype(np.float32)) for _ in range(3)]
    history = model.fit(batches, epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    assert model.evaluate(batches, verbose=0) > 0
    assert model.predict(batches, verbose=0).shape == (12, 1)


def test_train_test_predict_on_batch():
    model, _ = _pair()
    model.compile(tf.keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = _data(6)
    loss, acc = model.train_on_batch(x, y)
    logs = model.test_on_batch(x, y, return_dict=True)
    assert set(logs) == {"loss", "accuracy"} and np.isfinite(loss) and 0 <= acc <= 1
    assert model.predict_on_batch(x).shape == (6, 2)


def test_early_stopping_restores_best_weights():
    model, _ = _pair()
    model.compile(tf.keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
    x, y = _data(10)
    values = iter([1.0, 0.5, 0.7, 0.8, 0.9, 0.1])
    snapshots = []

    class FakeMonitor(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["watched"] = next(values)
            snapshots.append(self.model.get_weights())

    stop = tf.keras.callbacks.EarlyStopping(monitor="watched", patience=2, restore_best_weights=True)
    history = model.fit(x, y, epochs=6, verbose=0, callbacks=[FakeMonitor(), stop])
    assert len(history.history["loss"]) == 4 and stop.stopped_epoch == 3 and stop.best_epoch == 1
    for got, want in zip(model.get_weights(), snapshots[1]):
        np.testing.assert_array_equal(got, want)


def test_model_checkpoint_best_only_and_weights(tmp_path):
    model, _ = _pair()
    model.compile(tf.keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
    x, y = _data(10)
    values = iter([3.0, 1.0, 2.0])
    snapshots = []

    class FakeLoss(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["val_loss"] = next(values)
            snapshots.append(self.model.layers[0].kernel.numpy())

    path = str(tmp_path / "ckpt-{epoch:02d}")
    checkpoint = tf.keras.callbacks.ModelCheckpoint(path, save_best_only=True, save_weights_only=True, verbose=1)
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        model.fit(x, y, epochs=3, verbose=0, callbacks=[FakeLoss(), checkpoint])
    saved = sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".index"))
    assert saved == ["ckpt-01.index", "ckpt-02.index"]
    assert "Epoch 3: val_loss did not improve from 1.00000" in buffer.getvalue()
    improved = f"Epoch 2: val_loss improved from 3.00000 to 1.00000, saving model to {tmp_path}/ckpt-02"
    assert improved in buffer.getvalue()
    fresh, _ = _pair()
    fresh.load_weights(str(tmp_path / "ckpt-02"))
    np.testing.assert_array_equal(fresh.layers[0].kernel.numpy(), snapshots[1])


def test_reduce_lr_on_plateau_and_lambda_callback():
    model, _ = _pair()
    model.compile(tf.keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
    x, y = _data(10)
    seen = []

    class Flat(tf.keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            logs["val_loss"] = 1.0

    reduce = tf.keras.callbacks.ReduceLROnPlateau(factor=0.5, patience=1)
    log = tf.keras.callbacks.LambdaCallback(on_epoch_end=lambda epoch, logs: seen.append(epoch))
    history = model.fit(x, y, epochs=4, verbose=0, callbacks=[Flat(), reduce, log])
    assert seen == [0, 1, 2, 3]
    np.testing.assert_allclose(history.history["lr"], [0.1, 0.1, 0.05, 0.025], rtol=1e-6)
    np.testing.assert_allclose(float(np.asarray(model.optimizer.learning_rate)), 0.0125, rtol=1e-6)


def test_validation_split_uses_last_samples():
    model, _ = _pair()
    model.compile(tf.keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = _data(10)
    history = model.fit(x, y, epochs=1, verbose=0, validation_split=0.3, shuffle=False)
    expected = model.evaluate(x[7:], y[7:], verbose=0)
    np.testing.assert_allclose([history.history["val_loss"][0], history.history["val_accuracy"][0]], expected,
                               rtol=1e-6)


def test_fit_errors():
    model, _ = _pair()
    x, y = _data(4)
    with pytest.raises(RuntimeError, match="must compile"):
        model.fit(x, y, verbose=0)
    model.compile("sgd", "sparse_categorical_crossentropy")
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r'layer "sequential\S*" is incompatible .* '
                             r"expected shape=\(None, 3\), found shape=\(None, 5\)"):
        model.fit(np.ones((4, 5), np.float32), y, verbose=0)
    with pytest.raises(ValueError, match="Data cardinality is ambiguous"):
        model.fit(x, y[:3], verbose=0)


def test_tensor_control_flow_in_call_and_train_step_is_converted():
    class Gated(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(1, kernel_initializer="ones", bias_initializer="zeros")

        def call(self, x):
            y = self.dense(x)
            if tf.reduce_sum(x) > 0:  # a tensor condition: AutoGraph makes it a cond, as in Keras
                y = y * 2.0
            return y

        def train_step(self, data):
            x, y = data
            if tf.reduce_sum(y) > 1e6:  # never true; must still trace
                return {"loss": tf.constant(0.0)}
            return super().train_step(data)

    model = Gated()
    model.compile(tf.keras.optimizers.SGD(0.0), "mse")
    model.fit(np.ones((4, 2), np.float32), np.ones((4, 1), np.float32), verbose=0)
    np.testing.assert_allclose(model.predict(np.ones((1, 2), np.float32), verbose=0), [[4.0]])
    np.testing.assert_allclose(model.predict(-np.ones((1, 2), np.float32), verbose=0), [[-2.0]])


@pytest.mark.parametrize("compile_kwargs", [{"weighted_metrics": ["accuracy"]},
                                            {"metrics": ["accuracy"], "weighted_metrics": ["accuracy"]},
                                            {"metrics": ["accuracy", "mse"]}])
def test_metric_names_and_values_match_tf_keras(compile_kwargs):
    import tf_keras

    x, y = _data(12, seed=5)
    sw = np.linspace(0.1, 1, 12).astype(np.float32)
    histories = []
    for k in (tf.keras, tf_keras):
        model = k.Sequential([k.layers.Dense(2, activation="softmax", input_shape=(3,), kernel_initializer="ones")])
        model.compile(k.optimizers.SGD(0.1), "sparse_categorical_crossentropy", **compile_kwargs)
        h = model.fit(x, y, sample_weight=sw, epochs=2, verbose=0, batch_size=5, shuffle=False)
        histories.append((h.history, model.metrics_names))
    (ours, our_names), (theirs, their_names) = histories
    assert our_names == their_names and list(ours) == list(theirs)
    for key in theirs:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, err_msg=key)


def test_multi_output_losses_weights_and_metrics_match_tf_keras():
    import tf_keras

    x, _ = _data(12, seed=6)
    ys = [np.ones((12, 2), np.float32), np.linspace(0, 1, 12).astype(np.float32)]
    results = []
    for k in (tf.keras, tf_keras):
        i = k.Input((3,), name="in")
        o1 = k.layers.Dense(2, name="o1", kernel_initializer="ones")(i)
        o2 = k.layers.Dense(1, name="o2", kernel_initializer="ones")(i)
        model = k.Model(i, [o1, o2])
        model.compile(k.optimizers.SGD(0.05), ["mse", "mae"], metrics=["mae"], loss_weights=[1.0, 0.5])
        h = model.fit(x, ys, epochs=2, verbose=0, batch_size=5, shuffle=False)
        results.append((h.history, model.metrics_names, model.evaluate(x, ys, verbose=0)))
    (ours, our_names, our_eval), (theirs, their_names, their_eval) = results
    assert our_names == their_names == ["loss", "o1_loss", "o2_loss", "o1_mae", "o2_mae"]
    for key in theirs:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=1e-5, err_msg=key)
    np.testing.assert_allclose(our_eval, their_eval, rtol=1e-5)


def test_model_checkpoint_saves_full_models_that_load(tmp_path):
    model, _ = _pair()
    model.compile(tf.keras.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
    x, y = _data(10)
    checkpoint = tf.keras.callbacks.ModelCheckpoint(str(tmp_path / "model-{epoch}"), monitor="loss")
    model.fit(x, y, epochs=2, verbose=0, callbacks=[checkpoint])
    restored = tf.keras.models.load_model(str(tmp_path / "model-2"))
    np.testing.assert_allclose(restored.predict(x, verbose=0), model.predict(x, verbose=0), rtol=1e-6)
    assert restored.metrics_names == [] or restored.evaluate(x, y, verbose=0)


def test_reduce_lr_message_matches_tf_keras():
    import tf_keras

    texts = []
    for k, model in zip((tf.keras, tf_keras), _pair()):
        model.compile(k.optimizers.SGD(0.1), "sparse_categorical_crossentropy")
        reduce = k.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=0, min_delta=10.0, verbose=1)
        buffer = io.StringIO()
        with contextlib.redirect_stdout(buffer):
            model.fit(*_data(10), epochs=2, verbose=0, callbacks=[reduce])
        texts.append(buffer.getvalue())
    assert texts[0] == texts[1] and "reducing learning rate to 0.05" in texts[0]


def test_csv_logger_matches_tf_keras(tmp_path):
    import tf_keras

    x, y = _data(10)
    texts = []
    for k, model in zip((tf.keras, tf_keras), _pair()):
        model.compile(k.optimizers.SGD(0.1), "sparse_categorical_crossentropy", metrics=["accuracy"])
        path = str(tmp_path / f"{k.__name__}.csv")
        model.fit(x, y, epochs=3, batch_size=4, shuffle=False, verbose=0, validation_data=(x, y),
                  callbacks=[k.callbacks.CSVLogger(path)])
        texts.append(open(path).read())
    ours, theirs = texts
    assert ours.splitlines()[0] == theirs.splitlines()[0] == "epoch,accuracy,loss,val_accuracy,val_loss"
    for a, b in zip(ours.splitlines()[1:], theirs.splitlines()[1:]):
        np.testing.assert_allclose([float(v) for v in a.split(",")], [float(v) for v in b.split(",")], rtol=1e-5)
