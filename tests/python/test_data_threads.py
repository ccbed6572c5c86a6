"""The C++ threads of tf.data pipelines (parallel map, prefetch): deterministic order whatever the thread
count, iterators abandoned early stop their threads (none left running, no hang), Python sources feed C++
threads, several Python threads iterate at once, and the interpreter exits with pipelines still running."""

import gc
import os
import subprocess
import sys
import threading

import numpy as np

import ember as tf


def os_threads():
    return len(os.listdir("/proc/self/task"))


def uneven(x):
    # Work that varies by element, so that workers finish out of order.
    n = (x % 7) * 200
    return x * 2 + tf.reduce_sum(tf.range(n, dtype=tf.int64)) * 0


def test_parallel_map_keeps_the_input_order_for_any_thread_count():
    want = [2 * i for i in range(3000)]
    for threads in (1, 2, 3, 8, 16, tf.data.AUTOTUNE):
        ds = tf.data.Dataset.range(3000).map(uneven, num_parallel_calls=threads)
        assert [int(v) for v in ds] == want, threads
        batched = ds.batch(64).prefetch(3)
        assert np.concatenate([b.numpy() for b in batched]).tolist() == want, threads


def test_parallel_map_from_slices_is_the_sequential_map():
    x = np.random.default_rng(0).normal(size=(5000, 3)).astype(np.float32)
    f = lambda v: tf.nn.softmax(v) * 3.0  # noqa: E731
    seq = np.stack([e for e in tf.data.Dataset.from_tensor_slices(x).map(f).as_numpy_iterator()])
    par = np.stack([e for e in tf.data.Dataset.from_tensor_slices(x).map(
        f, num_parallel_calls=8).as_numpy_iterator()])
    assert np.array_equal(seq, par)


def test_abandoned_iterators_stop_their_threads():
    gc.collect()
    before = os_threads()
    sources = [
        lambda: tf.data.Dataset.range(10**9).map(uneven, num_parallel_calls=4).prefetch(8),
        lambda: tf.data.Dataset.range(10**6).repeat().map(lambda v: v + 1, num_parallel_calls=8).batch(16)
        .prefetch(2),
        lambda: tf.data.Dataset.from_generator(lambda: iter(range(10**9)), output_signature=tf.TensorSpec(
            [], tf.int64)).map(lambda v: v * 2, num_parallel_calls=3).prefetch(4),
        lambda: tf.data.Dataset.from_tensor_slices(np.zeros((10**5, 4), np.float32)).map(
            tf.nn.relu, num_parallel_calls=tf.data.AUTOTUNE).take(5),
    ]
    for _ in range(10):
        for make in sources:
            it = iter(make())
            next(it)
            next(it)
            del it
    for make in sources:  # closed explicitly, and dropped without reading anything
        it = iter(make())
        it.close()
        iter(make())
    gc.collect()
    assert os_threads() <= before


def test_take_stops_the_pipeline_below_it():
    gc.collect()
    before = os_threads()
    ds = tf.data.Dataset.range(10**9).map(uneven, num_parallel_calls=4).prefetch(4).take(3)
    assert [int(v) for v in ds] == [0, 2, 4]
    gc.collect()
    assert os_threads() <= before


def test_python_threads_iterate_at_once():
    ds = tf.data.Dataset.range(500).map(uneven, num_parallel_calls=4).batch(7).prefetch(2)
    want = [2 * i for i in range(500)]
    results, failures = [None] * 8, []

    def run(k):
        try:
            results[k] = np.concatenate([b.numpy() for b in ds]).tolist()
        except Exception as e:  # noqa: BLE001
            failures.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not failures and all(r == want for r in results)


def test_one_iterator_shared_by_python_threads_hands_out_each_element_once():
    it = iter(tf.data.Dataset.range(2000).map(lambda v: v, num_parallel_calls=4).prefetch(8))
    seen, lock = [], threading.Lock()

    def drain():
        for v in it:
            with lock:
                seen.append(int(v))

    threads = [threading.Thread(target=drain) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert sorted(seen) == list(range(2000))


def test_generator_errors_cross_the_threads_with_their_class():
    def gen():
        yield 1
        raise KeyError("from the generator")

    ds = tf.data.Dataset.from_generator(gen, output_signature=tf.TensorSpec([], tf.int32)).map(
        lambda v: v + 1, num_parallel_calls=2).prefetch(2)
    it = iter(ds)
    assert int(next(it)) == 2
    try:
        next(it)
    except KeyError as e:
        assert "from the generator" in str(e)
    else:
        raise AssertionError("no KeyError")


def test_interpreter_exits_with_pipelines_running():
    code = (
        "import ember as tf\n"
        "ds = tf.data.Dataset.from_generator(lambda: iter(range(10**9)), "
        "output_signature=tf.TensorSpec([], tf.int64)).map(lambda v: v * 2, num_parallel_calls=4).prefetch(16)\n"
        "it = iter(ds); next(it)\n"
        "it2 = iter(tf.data.Dataset.range(10**9).map(lambda v: v, num_parallel_calls=4).prefetch(16)); next(it2)\n"
        "print('done')\n")
    flags = ["-S"] if sys.flags.no_site else []
    proc = subprocess.run([sys.executable, *flags, "-c", code], capture_output=True, text=True, timeout=120,
                          env=dict(os.environ))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "done"
