"""String tensors in control flow (issue 15): as tf.while_loop loop variables and tf.cond results, and as the
elements of TensorArrays and TensorLists, eagerly and inside ember.function, against TensorFlow. The While/If/Case
ops take string loop variables and branch values; the TensorList ops and InplaceUpdate take strings through the
string kernels of array ops (Note [String kernels of array ops] in src/ember/ops/strings_array.cc), whose key 0 is
the empty string, so elements never written read as "" (TensorFlow's zero of strings)."""

import numpy as np
import pytest
import tensorflow as tf

import ember as em


def texts(t):
    return np.asarray(t.numpy(), dtype=object).tolist() if hasattr(t, "numpy") else t


def both(program, *args, signature=None):
    """program(lib, *args) run by ember and TensorFlow, eagerly and inside a function; the four results."""
    out = []
    for lib in (em, tf):
        out.append(program(lib, *args))
        sig = signature(lib) if signature else None
        out.append(lib.function(_bound(program, lib), input_signature=sig)(*args))
    return [[texts(o) for o in (r if isinstance(r, (list, tuple)) else [r])] for r in out]


def _bound(program, lib):
    return lambda *a: program(lib, *a)


def build_in_loop(lib, n):
    def body(i, s):
        return i + 1, lib.strings.join([s, lib.strings.as_string(i)], separator="-")

    return lib.while_loop(lambda i, s: i < n, body, [lib.constant(0), lib.constant("start")])[1]


def test_string_while_loop_variable():
    ember_eager, ember_staged, tf_eager, tf_staged = both(build_in_loop, np.int32(4),
                                                          signature=lambda lib: [lib.TensorSpec([], lib.int32)])
    assert ember_eager == ember_staged == tf_eager == tf_staged == [b"start-0-1-2-3"]


def cond_of_strings(lib, p, s):
    return lib.cond(p, lambda: lib.strings.join([s, s]), lambda: lib.strings.upper(s))


@pytest.mark.parametrize("p", [True, False])
def test_string_cond_results(p):
    results = both(cond_of_strings, np.array(p), np.array([b"ab", b"c"], dtype=object),
                   signature=lambda lib: [lib.TensorSpec([], lib.bool), lib.TensorSpec([None], lib.string)])
    assert all(r == results[2] for r in results), results


def string_array(lib, n):
    ta = lib.TensorArray(lib.string, size=n)

    def body(i, ta):
        return i + 1, ta.write(i, lib.strings.join(["item", lib.strings.as_string(i * i)]))

    _, ta = lib.while_loop(lambda i, ta: i < n, body, [0, ta])
    # A dynamic-size array written in the loop grows (Pad of strings).
    _, dyn = lib.while_loop(lambda i, d: i < n, lambda i, d: (i + 1, d.write(i, lib.strings.as_string(i))),
                            [0, lib.TensorArray(lib.string, size=0, dynamic_size=True)])
    grown = lib.TensorArray(lib.string, size=0, dynamic_size=True)
    grown = grown.write(0, "x").write(2, "z")  # element 1 is never written: ""
    return ta.stack(), ta.gather([2, 0]), ta.read(n - 1), grown.stack(), dyn.stack()


def test_tensor_array_of_strings_stacked():
    results = both(string_array, np.int32(3), signature=lambda lib: [lib.TensorSpec([], lib.int32)])
    assert results[0] == [[b"item0", b"item1", b"item4"], [b"item4", b"item0"], b"item4", [b"x", b"", b"z"],
                          [b"0", b"1", b"2"]]
    assert all(r == results[0] for r in results), results


def string_array_scatter_concat_split(lib, words, idx):
    ta = lib.TensorArray(lib.string, size=4, element_shape=[2]).scatter(idx, lib.reshape(words, [-1, 2]))
    pieces = lib.TensorArray(lib.string, size=0, dynamic_size=True).split(words, lib.constant([2, 2], lib.int64))
    return ta.stack(), ta.concat(), pieces.stack()


def test_tensor_array_of_strings_scatter_concat_split():
    words = np.array([b"a", b"b", b"c", b"d"], dtype=object)
    results = both(string_array_scatter_concat_split, words, np.array([3, 0], np.int32),
                   signature=lambda lib: [lib.TensorSpec([None], lib.string), lib.TensorSpec([None], lib.int32)])
    assert results[0][0] == [[b"c", b"d"], [b"", b""], [b"", b""], [b"a", b"b"]]
    assert all(r == results[0] for r in results), results


def test_tensorflows_string_tensor_array_loop_imports():
    """A GraphDef of TensorFlow's with a TensorList of strings through a While runs in ember."""
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def f(words):
        n = tf.shape(words)[0]
        ta = tf.TensorArray(tf.string, size=n)
        _, ta = tf.while_loop(lambda i, ta: i < n,
                              lambda i, ta: (i + 1, ta.write(n - 1 - i, tf.strings.join([words[i], "!"]))), [0, ta])
        return ta.stack(), ta.gather([0])

    concrete = f.get_concrete_function()
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def().SerializeToString())
    run = em.NewGraphFunction(graph, ["words:0"], [t.name for t in concrete.outputs])
    words = np.array([b"x", b"yy", b"zzz"], dtype=object)
    got = [texts(o) for o in run(words)]
    assert got == [texts(o) for o in f(words)] == [[b"zzz!", b"yy!", b"x!"], [b"zzz!"]]
