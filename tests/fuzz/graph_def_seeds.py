"""Seed GraphDefs for the GraphDef fuzzers: real graphs exported by ember (and one written by TensorFlow),
covering multi-output and variadic ops, every attribute type, constants, control inputs and variables.

``python3 tests/fuzz/graph_def_seeds.py DIR`` writes them as DIR/<name>.pb (the libFuzzer seed corpus in
tests/fuzz/cpp/corpus/graph_def was made so); the Python fuzzer calls ``seeds()`` directly. Variables are
named "v" (float32 [2]) and "w" (int32 scalar), the names the fuzz targets bind."""

import os
import sys

import numpy as np

# TensorFlow 2.21's GraphDef of unstack/square/add/Identity (tests/python/test_graph_def.py).
TENSORFLOW_HEX = (
    "0a4b0a0178120b506c616365686f6c6465722a1b0a145f757365725f7370656369666965645f6e616d6512031201782a0b0a0564"
    "74797065120230012a0f0a05736861706512063a04120208020a340a07756e737461636b1206556e7061636b1a01782a070a0154"
    "120230012a0a0a0461786973120218002a090a036e756d120218020a240a0653717561726512065371756172651a09756e737461"
    "636b3a312a070a0154120230010a320a05436f6e73741205436f6e73742a0b0a056474797065120230012a150a0576616c756512"
    "0c420a080112002a040000003f0a240a03616464120541646456321a065371756172651a05436f6e73742a070a01541202300"
    "10a220a084964656e7469747912084964656e746974791a036164642a070a015412023001220308aa13")


def variables(tf):
    """The variables the fuzzers bind, by the node names the seeds use."""
    return {"v": tf.Variable([0.0, 0.0], name="v"), "w": tf.Variable(0, name="w")}


def seeds(tf):
    """{name: serialized GraphDef} for the graphs below."""
    spec = tf.TensorSpec
    out = {}

    def add(name, fn, *specs):
        out[name] = tf.function(fn).get_concrete_function(*specs).graph.as_graph_def().SerializeToString()

    add("square", lambda x: tf.square(tf.square(x)), spec(None, tf.float32))

    def many(x, ids):
        parts = tf.unstack(tf.transpose(x))
        joined = tf.concat([parts[0], parts[2]], 0) * tf.constant([1., 2., 3., 4.])
        r1 = tf.random.uniform([2])
        r2 = tf.random.uniform([2])
        hot = tf.one_hot(ids, 4, on_value=2.0, off_value=-1.0, dtype=tf.float64)
        padded = tf.pad(x, [[1, 0], [0, 2]], constant_values=0.5)
        return joined, r1, r2, hot, padded, tf.matmul(x, x, transpose_b=True)

    add("many", many, spec([2, 3], tf.float32), spec([None], tf.int32))

    def shapes(x):
        y = tf.reshape(x, [-1, 2])
        z = tf.reduce_sum(tf.tile(y, [2, 1]), axis=0)
        s = tf.split(tf.range(6), [2, 4])
        return z, tf.math.cumsum(y, axis=1), tf.gather(y, [0, 1]), s[1], tf.cast(tf.argmax(y, axis=1), tf.float32)

    add("shapes", shapes, spec([4], tf.float32))
    v, w = variables(tf).values()

    def update(x):
        v.assign_add(x)
        w.assign(w + 1)
        return v.read_value() * 2.0, w.read_value()

    add("variables", update, spec([2], tf.float32))
    out["tensorflow"] = bytes.fromhex(TENSORFLOW_HEX)
    return out


def main(directory):
    import ember as tf

    os.makedirs(directory, exist_ok=True)
    for name, data in seeds(tf).items():
        with open(os.path.join(directory, name + ".pb"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
