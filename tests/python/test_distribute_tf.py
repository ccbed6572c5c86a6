"""MirroredStrategy against TensorFlow 2.21's: the same Keras model, initial weights and data, trained with
model.fit under MirroredStrategy over two logical CPUs, in ember and in TensorFlow (run in a subprocess:
TensorFlow splits its CPU only before it first runs). The final weights must agree within float tolerance."""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import ember as tf
from distribute_util import logical_cpus

_TF_SCRIPT = textwrap.dedent("""
    import json, sys
    import numpy as np
    import tensorflow as tf
    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
    data = json.load(open(sys.argv[1]))
    x, y = np.array(data["x"], np.float32), np.array(data["y"], np.float32)
    strategy = tf.distribute.MirroredStrategy(["cpu:0", "cpu:1"])
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(8, activation="tanh"),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    model.set_weights([np.array(w, np.float32) for w in data["weights"]])
    history = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    print(json.dumps({"weights": [w.tolist() for w in model.get_weights()], "loss": history.history["loss"]}))
""")


def test_fit_under_mirrored_strategy_matches_tensorflow(tmp_path):
    rng = np.random.default_rng(7)
    x = rng.standard_normal((64, 6)).astype(np.float32)
    y = (x @ rng.standard_normal((6, 1))).astype(np.float32)
    strategy = tf.distribute.MirroredStrategy(logical_cpus(2))
    with strategy.scope():
        model = tf.keras.Sequential([tf.keras.layers.Dense(8, activation="tanh", input_shape=(6,)),
                                     tf.keras.layers.Dense(1)])
        model.compile(optimizer=tf.keras.optimizers.SGD(0.05), loss="mse")
    data = tmp_path / "data.json"
    weights = [w.tolist() for w in model.get_weights()]
    data.write_text(json.dumps({"x": x.tolist(), "y": y.tolist(), "weights": weights}))
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="3", CUDA_VISIBLE_DEVICES="")
    proc = subprocess.run([sys.executable, "-c", _TF_SCRIPT, str(data)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    expected = json.loads(proc.stdout.strip().splitlines()[-1])

    history = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    for w, e in zip(model.get_weights(), expected["weights"]):
        np.testing.assert_allclose(w, np.array(e, np.float32), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(history.history["loss"], expected["loss"], rtol=1e-4, atol=1e-5)
