"""BlockLSTMV2 and BlockLSTMGradV2 (src/ember/ops/nn_rnn.cc, kernels/lstm.cc) against TensorFlow 2.21's raw ops,
their gradient against finite differences (eagerly and inside ember.function), and their errors."""
import numpy as np
import pytest
import tensorflow as real_tf

import ember as tf

_rng = np.random.default_rng(5)


def operands(steps, batch, features, cell, seq_len_max=None):
    """seq_len_max, x, cs_prev, h_prev, w, wci, wcf, wco, b as float32 NumPy values."""
    f = lambda *s: _rng.uniform(-1, 1, s).astype(np.float32)  # noqa: E731
    return [np.int64(steps if seq_len_max is None else seq_len_max), f(steps, batch, features), f(batch, cell),
            f(batch, cell), f(features + cell, 4 * cell), f(cell), f(cell), f(cell), f(4 * cell)]


def ours(name, args, *attrs):
    return [t.numpy() for t in tf._C.op(name)(*[tf.constant(a) for a in args], *attrs)]


CASES = [dict(shape=(4, 3, 5, 6)), dict(shape=(5, 2, 3, 4), seq_len_max=3), dict(shape=(3, 2, 4, 5), cell_clip=0.3),
         dict(shape=(4, 3, 2, 5), use_peephole=True), dict(shape=(3, 2, 4, 5), seq_len_max=0),
         dict(shape=(4, 2, 0, 3))]


@pytest.mark.parametrize("case", CASES, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
def test_forward_and_gradient_op_match_tensorflow(case):
    args = operands(*case["shape"], seq_len_max=case.get("seq_len_max"))
    n, clip, peephole = int(args[0]), case.get("cell_clip", 0.0), case.get("use_peephole", False)
    names = ["seq_len_max", "x", "cs_prev", "h_prev", "w", "wci", "wcf", "wco", "b"]
    theirs = real_tf.raw_ops.BlockLSTMV2(**dict(zip(names, args)), cell_clip=clip, use_peephole=peephole)
    got = ours("BlockLSTMV2", args, clip, peephole)
    for k, (a, b) in enumerate(zip(got, theirs)):
        # TensorFlow leaves the steps past seq_len_max uninitialised (its doc says zero-padded): ember zeroes them.
        np.testing.assert_allclose(a[:n], b.numpy()[:n], rtol=1e-5, atol=1e-6, err_msg=f"output {k}")
        np.testing.assert_array_equal(a[n:], 0)
    grads = [_rng.uniform(-1, 1, got[0].shape).astype(np.float32) for _ in range(2)]
    forward = [b.numpy() for b in theirs]
    theirs = real_tf.raw_ops.BlockLSTMGradV2(
        **dict(zip(names, args)), **dict(zip(["i", "cs", "f", "o", "ci", "co", "h"], forward)), cs_grad=grads[0],
        h_grad=grads[1], use_peephole=peephole)
    got = ours("BlockLSTMGradV2", args + forward + grads, peephole)
    for k, (a, b) in enumerate(zip(got, theirs)):
        want = b.numpy()[:n] if k == 0 else b.numpy()  # x_grad past seq_len_max: uninitialised in TensorFlow
        np.testing.assert_allclose(a[:n] if k == 0 else a, want, rtol=1e-4, atol=1e-5, err_msg=f"gradient {k}")
    np.testing.assert_array_equal(got[0][n:], 0)


def _loss_fn(args, weights, peephole):
    seq = tf.constant(args[0])

    def loss(*xs):
        outs = tf._C.op("BlockLSTMV2")(seq, *xs, 0.0, peephole)
        return tf.add_n([tf.reduce_sum(tf.cast(o, tf.float64) * w) for o, w in zip(outs, weights)])

    return loss


@pytest.mark.parametrize("peephole", [False, True])
@pytest.mark.parametrize("traced", [False, True])
def test_gradient_matches_finite_differences(peephole, traced):
    """Only cs and h carry gradient back (the gate outputs are saved values, as in TensorFlow), so the loss
    weighs those two; central differences in float32 with a step large enough for its rounding."""
    args = operands(3, 2, 3, 4)
    weights = [np.zeros((3, 2, 4)) if k not in (1, 6) else _rng.uniform(-1, 1, (3, 2, 4)) for k in range(7)]
    loss = _loss_fn(args, weights, peephole)
    xs = [tf.constant(a) for a in args[1:]]

    def gradient(*xs):
        with tf.GradientTape() as tape:
            tape.watch(list(xs))
            value = loss(*xs)
        return tape.gradient(value, list(xs))

    got = (tf.function(gradient) if traced else gradient)(*xs)
    eps = 1e-2
    for k, a in enumerate(args[1:]):
        if not peephole and k in (4, 5, 6):
            np.testing.assert_array_equal(got[k].numpy(), 0)  # the peephole weights are unused
            continue
        flat = a.reshape(-1)
        for j in _rng.choice(flat.size, size=min(6, flat.size), replace=False):
            plus, minus = flat.copy(), flat.copy()
            plus[j] += eps
            minus[j] -= eps
            at = lambda v: float(loss(*[tf.constant(v.reshape(a.shape)) if i == k else x  # noqa: E731
                                        for i, x in enumerate(xs)]))
            numeric = (at(plus) - at(minus)) / (2 * eps)
            assert got[k].numpy().reshape(-1)[j] == pytest.approx(numeric, rel=2e-2, abs=2e-3), (k, j)


def test_bad_operands_raise_naming_the_op():
    args = operands(3, 2, 4, 5)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"BlockLSTMV2: w must be \[input size \+ cell size, "
                                                              r"4 \* cell size\] = \[9, 20\], got shape \[8,20\]"):
        ours("BlockLSTMV2", args[:4] + [args[4][:-1]] + args[5:], 0.0, False)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"BlockLSTMV2: seq_len_max must be in \[0, 3\].*got 4"):
        ours("BlockLSTMV2", [np.int64(4)] + args[1:], 0.0, False)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"BlockLSTMV2: x must be 3-D, got shape \[2,4\]"):
        ours("BlockLSTMV2", args[:1] + [args[1][0]] + args[2:], 0.0, False)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"BlockLSTMV2: .*h_prev's cell size is 4"):
        ours("BlockLSTMV2", args[:3] + [args[3][:, :4]] + args[4:], 0.0, False)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"BlockLSTMV2: input 'x' must have a dtype in "
                                                              r"\{float32\}, got float64"):
        ours("BlockLSTMV2", [args[0]] + [a.astype(np.float64) for a in args[1:]], 0.0, False)
    forward = ours("BlockLSTMV2", args, 0.0, False)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"BlockLSTMGradV2: input 16 .*= \[3,2,5\], got shape \[2,2,5\]"):
        ours("BlockLSTMGradV2", args + forward + [forward[0][:2], forward[0]], False)


@pytest.fixture
def quiet_machine():
    # Both cores count as free even while other processes keep the machine busy (docs/threads.md part 3).
    tf._C.force_other_processes_load(0.0)
    threads = tf.config.threading.get_intra_op_parallelism_threads()
    yield
    tf.config.threading.set_intra_op_parallelism_threads(threads)
    tf._C.force_other_processes_load(-1.0)


def test_blocks_of_rows_give_the_same_bits_on_any_thread_count(quiet_machine):
    """Note [Rows of the batch run apart]: 40 rows are three blocks (16, 16, 8), run on one thread or
    spread over two; every output of both ops is the same to the bit, peepholes included."""
    args = operands(20, 40, 7, 32)
    results = []
    for threads in (1, 2):
        tf.config.threading.set_intra_op_parallelism_threads(threads)
        regions = tf._C.parallel_regions_started()
        forward = ours("BlockLSTMV2", args, 0.0, True)
        grads = ours("BlockLSTMGradV2", args + forward + [forward[1], forward[6]], True)
        if threads == 2:
            assert tf._C.parallel_regions_started() > regions  # the blocks did go to two threads
        results.append(forward + grads)
    for k, (a, b) in enumerate(zip(*results)):
        np.testing.assert_array_equal(a, b, err_msg=f"output {k}")
