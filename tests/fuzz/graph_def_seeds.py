"""Seed GraphDefs for the GraphDef fuzzers: real graphs exported by ember (and one written by TensorFlow),
covering multi-output and variadic ops, every attribute type, constants, control inputs and variables.

``python3 tests/fuzz/graph_def_seeds.py DIR`` writes them as DIR/<name>.pb (the libFuzzer seed corpus in
tests/fuzz/cpp/corpus/graph_def was made so); the Python fuzzer calls ``seeds()`` directly. Variables are
named "v" (float32 [2]) and "w" (int32 scalar), the names the fuzz targets bind."""

import os
import sys

import numpy as np

# TensorFlow 2.21's GraphDef of unstack/square/add/Identity, kept in the seed corpus (the same bytes
# tests/python/test_graph_def.py checks): ember cannot regenerate it, so it is read from there.
TENSORFLOW_SEED = os.path.join(os.path.dirname(os.path.abspath(__file__)), "cpp", "corpus", "graph_def",
                               "tensorflow.pb")
# TensorFlow 2.21's GraphDef (debug_info left out) of tanh(middle(x, w)) + inner(x), where middle calls
# inner and matmul: a function library with a nested call (made by make_tensorflow_library_seed below).
TENSORFLOW_LIBRARY_SEED = os.path.join(os.path.dirname(TENSORFLOW_SEED), "tensorflow_library.pb")


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
    step = tf.function(lambda x: v.assign_add(x) * 0.0 + v.read_value())  # a called function's variable
    add("variable_calls", lambda x: tf.function(lambda y: step(y) + 1.0)(x), spec([2], tf.float32))

    inner = tf.function(lambda a: tf.nn.relu(a) * 2.0 + 1.0)
    middle = tf.function(lambda a, b: inner(tf.matmul(a, b)) + a)
    add("calls", lambda x, b: tf.tanh(middle(x, b)) + inner(x), spec([None, 2], tf.float32),
        spec([2, 2], tf.float32))

    def control_flow(x, i):  # If, Case and While with their library, a variable inside branch and body
        y = tf.cond(tf.reduce_sum(x) > 0, lambda: x * 2.0, lambda: x - v.read_value())
        z = tf.switch_case(i, [lambda: y + 1.0, lambda: y * y])

        def body(k, acc):
            v.assign_add(acc * 0.0)
            return k + 1, acc + z

        return tf.while_loop(lambda k, acc: k < 3, body, [0, x])[1]

    add("control_flow", control_flow, spec([2], tf.float32), spec([], tf.int32))

    def tensor_lists(x, lengths):  # TensorLists as TensorFlow's variants, an accumulating While, a split read back
        with tf.GradientTape() as tape:
            tape.watch(x)
            n = tf.shape(x)[0]
            ta = tf.TensorArray(tf.float32, size=n)
            _, ta = tf.while_loop(lambda i, ta: i < n, lambda i, ta: (i + 1, ta.write(i, tf.sin(x[i]))), [0, ta])
            y = tf.reduce_sum(ta.gather([0]) * 2.0) + tf.reduce_sum(ta.scatter([0], x[:1]).concat())
        pieces = tf._C.op("TensorListSplit")(tf.reshape(x, [-1]), tf.constant([-1]), lengths)
        joined = tf._C.op("TensorListConcatV2")(pieces, tf.constant([-1]), tf.zeros([0], tf.int64), tf.float32)
        second = tf._C.op("TensorListGetItem")(pieces, 1, tf.constant([-1]), tf.float32)
        return tape.gradient(y, x), joined[0], second

    add("tensor_lists", tensor_lists, spec([None, 2], tf.float32), spec([None], tf.int64))

    # ParseExampleV2 (list-of-dtype and list-of-shape attributes) in a called function, whose outputs the
    # FunctionDef names by output list
    features = {"x": tf.io.FixedLenFeature([2], tf.float32, default_value=[0.5, 1.5]),
                "q": tf.io.FixedLenSequenceFeature([], tf.int64, allow_missing=True),
                "s": tf.io.VarLenFeature(tf.int64), "r": tf.io.RaggedFeature(tf.string)}

    def parsed(records):
        p = tf.io.parse_example(records, features)
        return p["x"], p["q"], p["s"].indices, p["s"].dense_shape, p["r"].values, p["r"].row_splits

    parse = tf.function(parsed)
    add("parse_example", lambda records: parse(records), spec([None], tf.string))

    # ParseSequenceExampleV2 (14 output lists, a bool input and a list of context defaults)
    context = {"n": tf.io.FixedLenFeature([], tf.int64, default_value=-1), "t": tf.io.VarLenFeature(tf.string)}
    lists = {"x": tf.io.FixedLenSequenceFeature([2], tf.float32, allow_missing=True),
             "r": tf.io.RaggedFeature(tf.int64, partitions=[tf.io.RaggedFeature.UniformRowLength(1)])}

    def parsed_sequences(records):
        c, f, lengths = tf.io.parse_sequence_example(records, context, lists)
        return c["n"], c["t"].indices, f["x"], lengths["x"], f["r"].flat_values, f["r"].row_splits

    parse_sequences = tf.function(parsed_sequences)
    add("parse_sequence_example", lambda records: parse_sequences(records), spec([None], tf.string))
    with open(TENSORFLOW_SEED, "rb") as f:
        out["tensorflow"] = f.read()
    with open(TENSORFLOW_LIBRARY_SEED, "rb") as f:
        out["tensorflow_library"] = f.read()
    return out


def make_tensorflow_library_seed():
    """Writes TENSORFLOW_LIBRARY_SEED with TensorFlow itself (run once; the file is kept in the corpus)."""
    import tensorflow

    inner = tensorflow.function(lambda a: tensorflow.nn.relu(a) * 2.0 + 1.0)
    middle = tensorflow.function(lambda a, b: inner(tensorflow.matmul(a, b)) + a)
    outer = tensorflow.function(lambda x, w: tensorflow.tanh(middle(x, w)) + inner(x))
    gd = outer.get_concrete_function(tensorflow.TensorSpec([None, 2]), tensorflow.TensorSpec([2, 2])).graph.as_graph_def()
    gd.ClearField("debug_info")
    with open(TENSORFLOW_LIBRARY_SEED, "wb") as f:
        f.write(gd.SerializeToString(deterministic=True))


def main(directory):
    import ember as tf

    os.makedirs(directory, exist_ok=True)
    for name, data in seeds(tf).items():
        if name.startswith("tensorflow"):
            continue  # read from the corpus
        with open(os.path.join(directory, name + ".pb"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1])
