"""Datasets inside ember.function: a ``for`` over a dataset is a staged loop (one trace serves every run, and
each run iterates from the start), ``ds.reduce``, ``iter``/``next``, datasets as arguments; the results equal
eager iteration and TensorFlow's tf.function."""

import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf
from ember import errors


def total(lib):
    def f(ds):
        s = lib.constant(0, lib.int64)
        for x in ds:
            s += x
        return s
    return f


def test_for_over_a_dataset_is_staged_once_and_reruns_from_the_start():
    traces = []

    @tf.function
    def f(ds):
        traces.append(1)
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        return s

    ds = tf.data.Dataset.range(5)
    assert int(f(ds)) == 10
    assert int(f(ds)) == 10
    assert len(traces) == 1


@pytest.mark.parametrize("build", [
    lambda t: t.data.Dataset.range(7),
    lambda t: t.data.Dataset.range(7).map(lambda v: v * 3, num_parallel_calls=2),
    lambda t: t.data.Dataset.range(7).filter(lambda v: v % 2 == 1).repeat(2),
    lambda t: t.data.Dataset.range(0),
])
def test_staged_loop_matches_eager_and_tensorflow(build):
    eager = int(total(tf)(build(tf)))
    staged = int(tf.function(total(tf))(build(tf)))
    theirs = int(real_tf.function(total(real_tf))(build(real_tf)))
    assert eager == staged == theirs


def test_loop_over_batches_of_changing_size():
    def sums(lib):
        def f(ds):
            s, n = lib.constant(0.0), lib.constant(0)
            for x, y in ds:
                s += lib.reduce_sum(x) * lib.cast(lib.reduce_sum(y), lib.float32)
                n += lib.shape(x)[0]
            return s, n
        return f

    x = np.arange(10, dtype=np.float32)
    y = np.arange(10, dtype=np.int32)

    def run(lib, staged):
        ds = lib.data.Dataset.from_tensor_slices((x, y)).batch(4)
        fn = lib.function(sums(lib)) if staged else sums(lib)
        s, n = fn(ds)
        return float(s), int(n)

    assert run(tf, True) == run(tf, False) == run(real_tf, True) == (float(6 * 6 + 22 * 22 + 17 * 17), 10)


def test_break_and_dict_elements():
    @tf.function
    def f(ds):
        s = tf.constant(0, tf.int64)
        for e in ds:
            if e["v"] > 3:
                break
            s += e["v"]
        return s

    assert int(f(tf.data.Dataset.range(10).map(lambda v: {"v": v}))) == 6


def test_dataset_made_inside_the_function():
    @tf.function
    def f():
        s = tf.constant(0, tf.int64)
        for v in tf.data.Dataset.range(4).map(lambda v: v * 2):
            s += v
        return s

    assert int(f()) == int(f()) == 12


def test_reduce_inside_a_function():
    @tf.function
    def f(ds):
        return ds.reduce((tf.constant(0, tf.int64), tf.constant(0)), lambda s, v: (s[0] + v, s[1] + 1))

    s, n = f(tf.data.Dataset.range(6))
    assert (int(s), int(n)) == (15, 6)


def test_iter_and_next_inside_a_function():
    @tf.function
    def first_two(ds):
        it = iter(ds)
        return next(it) + next(it)

    assert int(first_two(tf.data.Dataset.range(3, 10))) == 7
    with pytest.raises(errors.OutOfRangeError, match="End of sequence"):
        first_two(tf.data.Dataset.range(1))


def test_loop_writes_a_variable():
    v = tf.Variable(0.0)

    @tf.function
    def f(ds):
        for x in ds:
            v.assign_add(x)

    f(tf.data.Dataset.from_tensor_slices([1.0, 2.0, 3.0]))
    assert float(v) == 6.0


def test_unconverted_loop_raises_instead_of_tracing_for_ever():
    @tf.function(autograph=False)
    def f(ds):
        s = tf.constant(0, tf.int64)
        for x in ds:
            s += x
        return s

    with pytest.raises(NotImplementedError, match="not converted"):
        f(tf.data.Dataset.range(3))


def test_a_wrong_structure_from_a_staged_next_is_an_error():
    # The kernel checks each component against the element spec the loop was traced for.
    from ember.data import staged

    bad = tf.data.Dataset.from_generator(lambda: iter([1.0]), output_signature=tf.TensorSpec([], tf.float32))
    key = staged._register(bad)

    @tf.function
    def f():
        handle = tf._C.op("DatasetIteratorCreate")(tf.constant(key, tf.int64))
        _, comps = staged._next_op(handle, [tf.TensorSpec([], tf.int32)])
        return comps[0]

    with pytest.raises(errors.InvalidArgumentError, match="DatasetIteratorNext.*component 0 should be int32"):
        f()


def test_a_taped_call_of_a_function_iterating_a_dataset_with_a_parallel_plan_never_hangs(tmp_path):
    """Under a GradientTape the call used to keep the GIL while the plan's worker threads waited for it (a
    dataset's next element is fetched through Python): the call now releases it on both paths. Run in a
    subprocess so a hang is a failure, not a stuck test run."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent('''
        import numpy as np, ember as tf
        ds = tf.data.Dataset.from_tensor_slices(np.arange(8, dtype=np.float32))
        xs = [tf.constant(np.random.rand(4000).astype(np.float32)) for _ in range(60)]
        @tf.function
        def f(ds, xs):
            total = tf.constant(0.0)
            for x in ds:
                total += x
            for v in xs:  # independent work: the plan runs nodes on the inter-op threads
                total += tf.reduce_sum(tf.exp(v) * tf.sin(v))
            return total
        for _ in range(40):
            want = f(ds, xs)
        for _ in range(60):
            with tf.GradientTape() as tape:
                tape.watch(xs[0])
                y = f(ds, xs)
            g = tape.gradient(y, xs[0])
        np.testing.assert_allclose(float(y), float(want), rtol=1e-5)
        np.testing.assert_allclose(g.numpy(), np.exp(xs[0].numpy()) * (np.sin(xs[0].numpy()) + np.cos(xs[0].numpy())),
                                   rtol=1e-4)
        print("done")
    ''')
    path = tmp_path / "taped_dataset_call.py"  # a file, so AutoGraph can read the loop's source
    path.write_text(script)
    proc = subprocess.run([sys.executable, *(["-S"] if sys.flags.no_site else []), str(path)],
                          capture_output=True, text=True, timeout=240,
                          env=dict(__import__("os").environ, PYTHONPATH=__import__("os").pathsep.join(sys.path),
                                   EMBER_ADAPTIVE_THREADS="0"))
    assert proc.returncode == 0 and "done" in proc.stdout, proc.stderr[-3000:]
