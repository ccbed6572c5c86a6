"""tf.nn's CTC functions (python/ember/ops/ctc_ops.py; ops in src/ember/ops/ctc.cc, kernels in
src/ember/kernels/ctc.cc) against TensorFlow 2.21 on random batches: ctc_loss with dense labels (TensorFlow 2's
HMM path, impossible alignments included) and SparseTensor labels, compat.v1's ctc_loss under every
merge/collapse/ignore option in float32 and float64, losses and gradients; the greedy and beam-search decoders'
SparseTensors and log probabilities; ctc_unique_labels; the Keras backend's ctc functions; a finite-difference
check of the gradient, eager against ember.function, a training step, and bad input raising ember.errors."""
import numpy as np
import pytest
import tensorflow as tf

import ember as em

RNG = np.random.default_rng(7)
TOL = {np.float32: 1e-5, np.float64: 1e-10}


def _close(ours, theirs, dtype=np.float32, atol=None):
    ours, theirs = np.asarray(ours), np.asarray(theirs)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    tol = TOL[dtype]
    np.testing.assert_allclose(ours, theirs, rtol=tol, atol=tol if atol is None else atol)


def _batch(frames=7, batch=5, classes=5, max_label=4, dtype=np.float32, blank=0, seed=0):
    """Random logits [frames, batch, classes] and dense labels avoiding the blank, with repeated labels and
    label lengths from 0 to max_label; logit lengths from max_label to frames."""
    rng = np.random.default_rng(seed)
    logits = rng.standard_normal((frames, batch, classes)).astype(dtype)
    blank = blank % classes
    choices = [c for c in range(classes) if c != blank]
    labels = rng.choice(choices, (batch, max_label)).astype(np.int32)
    labels[0, 1] = labels[0, 0]  # a repeat: CTC needs a blank between the two
    label_length = rng.integers(1, max_label + 1, batch).astype(np.int32)
    logit_length = rng.integers(max_label + 2, frames + 1, batch).astype(np.int32)
    return logits, labels, label_length, logit_length


def _sparse(m, labels, label_length):
    idx = [[b, t] for b in range(labels.shape[0]) for t in range(label_length[b])]
    vals = [labels[b, t] for b, t in idx]
    return m.SparseTensor(np.array(idx, np.int64), np.array(vals, np.int32), [labels.shape[0], labels.shape[1]])


def _loss_and_grad(m, fn, logits):
    x = m.constant(logits)
    with m.GradientTape() as tape:
        tape.watch(x)
        loss = fn(x)
        total = m.reduce_sum(loss * np.linspace(0.5, 1.5, loss.shape[0]).astype(logits.dtype))
    return loss.numpy(), tape.gradient(total, x).numpy()


@pytest.mark.parametrize("blank_index", [0, -1, 2])
@pytest.mark.parametrize("time_major", [True, False])
def test_dense_ctc_loss_and_gradient_match_tensorflow(blank_index, time_major):
    logits, labels, label_length, logit_length = _batch(blank=blank_index, seed=1 + blank_index % 5)
    label_length[1] = 0  # an empty label
    logit_length[2], label_length[2] = 3, 4  # label longer than the frames: a large finite loss, no error
    logit_length[3] = logits.shape[0] + 2  # more than the frames: all of them
    if not time_major:
        logits = np.ascontiguousarray(np.transpose(logits, [1, 0, 2]))

    def run(m):
        return _loss_and_grad(m, lambda x: m.nn.ctc_loss(labels, x, label_length, logit_length,
                                                         logits_time_major=time_major, blank_index=blank_index),
                              logits)

    (loss, grad), (tf_loss, tf_grad) = run(em), run(tf)
    assert tf_loss[2] > 500  # the impossible row
    _close(loss, tf_loss)
    _close(grad, tf_grad, atol=1e-6)


def test_dense_ctc_loss_with_unique_labels_and_padding_matches_tensorflow():
    logits, labels, label_length, logit_length = _batch(seed=3)
    labels[:, -1] = 0  # padding past label_length
    ours = em.nn.ctc_loss(labels, logits, label_length, logit_length, unique=em.nn.ctc_unique_labels(labels))
    theirs = tf.nn.ctc_loss(labels, logits, label_length, logit_length, unique=tf.nn.ctc_unique_labels(labels))
    _close(ours.numpy(), theirs.numpy())


def test_ctc_unique_labels_matches_tensorflow():
    labels = RNG.integers(0, 4, (6, 7)).astype(np.int32)
    for ours, theirs in zip(em.nn.ctc_unique_labels(labels), tf.nn.ctc_unique_labels(labels)):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
        assert ours.dtype.name == theirs.dtype.name


@pytest.mark.parametrize("blank_index", [0, -1, 3])
def test_sparse_ctc_loss_v2_matches_tensorflow(blank_index):
    logits, labels, label_length, logit_length = _batch(blank=blank_index, seed=4)

    def run(m):
        sparse = _sparse(m, labels, label_length)
        return _loss_and_grad(m, lambda x: m.nn.ctc_loss(sparse, x, None, logit_length, blank_index=blank_index),
                              logits)

    (loss, grad), (tf_loss, tf_grad) = run(em), run(tf)
    _close(loss, tf_loss)
    _close(grad, tf_grad, atol=1e-6)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("collapse,merge,ignore", [(False, True, False), (True, True, False), (False, False, False),
                                                   (True, False, False), (False, True, True)])
def test_v1_ctc_loss_options_match_tensorflow(dtype, collapse, merge, ignore):
    logits, labels, label_length, logit_length = _batch(classes=6, dtype=dtype, blank=-1, seed=5)
    labels[1, :3] = labels[1, 0]  # a run of repeats for preprocess_collapse_repeated
    label_length[1] = 4
    if ignore:
        logit_length[3] = 2  # label longer than the sequence: loss and gradient zero for that row
        label_length[3] = 4

    def run(m):
        sparse = _sparse(m, labels, label_length)
        return _loss_and_grad(m, lambda x: m.compat.v1.nn.ctc_loss(
            sparse, x, logit_length, preprocess_collapse_repeated=collapse, ctc_merge_repeated=merge,
            ignore_longer_outputs_than_inputs=ignore), logits)

    (loss, grad), (tf_loss, tf_grad) = run(em), run(tf)
    _close(loss, tf_loss, dtype)
    if dtype is np.float32:
        _close(grad, tf_grad, dtype)
    else:
        # TensorFlow's float64 kernel takes expf of each class's posterior (Note [Float rounding in CTC] in
        # src/ember/kernels/ctc.cc), as ember does; its softmax's vectorised exp can differ from std::exp in the
        # last bit, which now and then moves that float result by an ulp.
        close = np.isclose(grad, tf_grad, rtol=1e-10, atol=1e-10)
        assert close.mean() > 0.98
        np.testing.assert_allclose(grad, tf_grad, rtol=1e-6, atol=1e-7)


def _numeric_gradient(loss, logits, eps):
    numeric = np.zeros_like(logits)
    for i in np.ndindex(logits.shape):
        hi, lo = logits.copy(), logits.copy()
        hi[i] += eps
        lo[i] -= eps
        numeric[i] = (loss(hi) - loss(lo)) / (2 * eps)
    return numeric


def test_v1_ctc_loss_of_a_label_of_blanks_matches_tensorflow():
    """Labels at or above the blank end a label sequence; a row holding only such labels leaves l' one blank,
    where TensorFlow's kernel adds a path (Note [A label of blanks only] in src/ember/kernels/ctc.cc)."""
    logits = RNG.standard_normal((5, 2, 4)).astype(np.float32)

    def run(m):
        sparse = m.SparseTensor(np.array([[0, 0], [0, 1], [1, 0], [1, 1]], np.int64), np.array([3, 3, 1, 3], np.int32),
                                [2, 2])
        return _loss_and_grad(m, lambda x: m.compat.v1.nn.ctc_loss(sparse, x, [5, 4]), logits)

    (loss, grad), (tf_loss, tf_grad) = run(em), run(tf)
    _close(loss, tf_loss)
    _close(grad, tf_grad, atol=1e-6)


def test_ctc_loss_gradients_match_finite_differences():
    logits, labels, label_length, logit_length = _batch(frames=5, batch=2, classes=4, max_label=2,
                                                        dtype=np.float64, blank=-1, seed=6)
    sparse = _sparse(em, labels, label_length)
    dense_op = em.raw_ops.CTCLossDense

    def ctc(x):
        return em.compat.v1.nn.ctc_loss(sparse, x, logit_length)

    def dense(x):  # the dense path's op in float64: double arithmetic throughout
        return dense_op(logits=x, labels=labels, label_length=label_length, logit_length=logit_length,
                        blank_index=3)[0]

    for fn, eps, tol in ((dense, 1e-6, 1e-7), (ctc, 1e-3, 1e-4)):  # CTCLoss rounds its sums to float
        _, grad = _loss_and_grad(em, fn, logits)
        weights = np.linspace(0.5, 1.5, 2)
        numeric = _numeric_gradient(lambda v: float(np.sum(fn(em.constant(v)).numpy() * weights)), logits, eps)
        np.testing.assert_allclose(grad, numeric, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("merge_repeated", [True, False])
@pytest.mark.parametrize("blank_index", [None, 0, 2, -2])
def test_greedy_decoder_matches_tensorflow(dtype, merge_repeated, blank_index):
    logits = RNG.standard_normal((8, 4, 5)).astype(dtype)
    logits[2:4, 0, 1] = 9.0  # a repeat
    seq_len = np.array([8, 5, 0, 3], np.int32)
    # Constants: TensorFlow converts a NumPy float64 array to float32 here when sequence_length is an array.
    ours = em.nn.ctc_greedy_decoder(em.constant(logits), seq_len, merge_repeated, blank_index)
    theirs = tf.nn.ctc_greedy_decoder(tf.constant(logits), seq_len, merge_repeated, blank_index)
    _same_decoded(ours, theirs, dtype)


def _same_decoded(ours, theirs, dtype):
    assert len(ours[0]) == len(theirs[0])
    for a, b in zip(ours[0], theirs[0]):
        for x, y in ((a.indices, b.indices), (a.values, b.values), (a.dense_shape, b.dense_shape)):
            np.testing.assert_array_equal(x.numpy(), y.numpy())
            assert x.dtype.name == y.dtype.name
    _close(ours[1].numpy(), theirs[1].numpy(), dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("beam_width,top_paths", [(1, 1), (3, 2), (10, 4)])
def test_beam_search_decoders_match_tensorflow(dtype, beam_width, top_paths):
    logits = (RNG.standard_normal((9, 5, 4)) * 2).astype(dtype)
    seq_len = np.array([9, 6, 4, 9, 2], np.int32)
    ours = em.nn.ctc_beam_search_decoder(em.constant(logits), seq_len, beam_width, top_paths)
    theirs = tf.nn.ctc_beam_search_decoder(tf.constant(logits), seq_len, beam_width, top_paths)
    _same_decoded(ours, theirs, dtype)
    ours = em.compat.v1.nn.ctc_beam_search_decoder(em.constant(logits), seq_len, beam_width, top_paths)
    theirs = tf.compat.v1.nn.ctc_beam_search_decoder(tf.constant(logits), seq_len, beam_width, top_paths)
    _same_decoded(ours, theirs, dtype)


def test_keras_backend_ctc_functions_match_tf_keras():
    import tf_keras

    kb, eb = tf_keras.backend, em.keras.backend
    y_pred = tf.nn.softmax(RNG.standard_normal((4, 8, 6)).astype(np.float32)).numpy()
    y_true = RNG.integers(0, 5, (4, 3)).astype(np.int32)
    input_length = np.array([[8], [6], [7], [5]], np.int32)
    label_length = np.array([[3], [1], [2], [3]], np.int32)
    _close(eb.ctc_batch_cost(y_true, y_pred, input_length, label_length).numpy(),
           kb.ctc_batch_cost(y_true, y_pred, input_length, label_length).numpy())
    ours = eb.ctc_label_dense_to_sparse(y_true, label_length[:, 0])
    theirs = kb.ctc_label_dense_to_sparse(y_true, label_length[:, 0])
    for x, y in ((ours.indices, theirs.indices), (ours.values, theirs.values), (ours.dense_shape, theirs.dense_shape)):
        np.testing.assert_array_equal(x.numpy(), y.numpy())
    for greedy in (True, False):
        ours = eb.ctc_decode(y_pred, input_length[:, 0], greedy=greedy, beam_width=4, top_paths=1 if greedy else 3)
        theirs = kb.ctc_decode(y_pred, input_length[:, 0], greedy=greedy, beam_width=4, top_paths=1 if greedy else 3)
        assert len(ours[0]) == len(theirs[0])
        for a, b in zip(ours[0], theirs[0]):
            np.testing.assert_array_equal(a.numpy(), b.numpy())
        _close(ours[1].numpy(), theirs[1].numpy())


def test_eager_and_function_agree():
    logits, labels, label_length, logit_length = _batch(seed=8)

    def step(x):
        with em.GradientTape() as tape:
            tape.watch(x)
            dense = em.reduce_sum(em.nn.ctc_loss(labels, x, label_length, logit_length))
            sparse = em.reduce_sum(em.nn.ctc_loss(_sparse(em, labels, label_length), x, None, logit_length,
                                                  blank_index=0))
            total = dense + 2.0 * sparse
        decoded, log_prob = em.nn.ctc_beam_search_decoder(x, logit_length, beam_width=3, top_paths=2)
        greedy, greedy_prob = em.nn.ctc_greedy_decoder(x, logit_length)
        return (total, tape.gradient(total, x), decoded[1].indices, decoded[1].values, log_prob,
                greedy[0].values, greedy_prob)

    x = em.constant(logits)
    for a, b in zip(step(x), em.function(step)(x)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-6, atol=1e-6)


def test_training_with_ctc_loss_decreases_the_loss():
    rng = np.random.default_rng(9)
    features = rng.standard_normal((6, 3, 4)).astype(np.float32)  # [time, batch, features]
    labels = np.array([[1, 2], [2, 2], [3, 1]], np.int32)
    w = em.Variable(rng.standard_normal((4, 5)).astype(np.float32) * 0.1)
    b = em.Variable(np.zeros(5, np.float32))
    opt = em.keras.optimizers.SGD(0.1)

    @em.function
    def train_step():
        with em.GradientTape() as tape:
            logits = em.einsum("tbf,fc->tbc", features, w) + b
            loss = em.reduce_mean(em.nn.ctc_loss(labels, logits, [2, 2, 2], [6, 6, 6]))
        opt.apply_gradients(zip(tape.gradient(loss, [w, b]), [w, b]))
        return loss

    losses = [float(train_step()) for _ in range(30)]
    assert losses[-1] < 0.7 * losses[0]


def test_a_second_derivative_through_ctc_loss_raises():
    """TensorFlow wraps CTCLoss's gradient output in PreventGradient and raises LookupError for a second
    derivative (its dense path gives NaN there); ember raises for both paths."""
    logits, labels, label_length, logit_length = _batch(blank=-1, seed=13)
    x = em.constant(logits)
    for loss in (lambda: em.compat.v1.nn.ctc_loss(_sparse(em, labels, label_length), x, logit_length),
                 lambda: em.nn.ctc_loss(labels, x, label_length, logit_length)):
        with em.GradientTape() as outer:
            outer.watch(x)
            with em.GradientTape() as inner:
                inner.watch(x)
                total = em.reduce_sum(loss())
            grad = inner.gradient(total, x)
            square = em.reduce_sum(grad * grad)
        with pytest.raises(em.errors.UnimplementedError, match="PreventGradient.*second derivative of ctc_loss"):
            outer.gradient(square, x)
    xt = tf.constant(logits)
    with tf.GradientTape() as outer:
        outer.watch(xt)
        with tf.GradientTape() as inner:
            inner.watch(xt)
            total = tf.reduce_sum(tf.compat.v1.nn.ctc_loss(_sparse(tf, labels, label_length), xt, logit_length))
        square = tf.reduce_sum(inner.gradient(total, xt) ** 2)
    with pytest.raises(LookupError, match="second  derivative of ctc_loss"):
        outer.gradient(square, xt)


def test_bad_input_raises_ember_errors_naming_the_op():
    logits, labels, label_length, logit_length = _batch(seed=10)
    sparse = _sparse(em, labels, label_length)
    short = logit_length.copy()
    short[0] = 1
    with pytest.raises(em.errors.InvalidArgumentError, match="CTCLoss.*not enough time"):
        em.compat.v1.nn.ctc_loss(sparse, logits, short)
    with pytest.raises(em.errors.InvalidArgumentError, match=r"CTCLoss.*sequence_length\(0\) <= 7"):
        em.compat.v1.nn.ctc_loss(sparse, logits, logit_length + 5)
    with pytest.raises(em.errors.InvalidArgumentError, match="CTCLoss.*inputs must have rank 3"):
        em.compat.v1.nn.ctc_loss(sparse, logits[0], logit_length)
    with pytest.raises(em.errors.InvalidArgumentError, match="CTCLoss"):
        em.raw_ops.CTCLoss(inputs=logits.astype(np.int32), labels_indices=sparse.indices, labels_values=sparse.values,
                           sequence_length=logit_length)
    with pytest.raises(em.errors.InvalidArgumentError, match="CTCGreedyDecoder.*blank_index expected to be between"):
        em.nn.ctc_greedy_decoder(logits, logit_length, blank_index=5)
    with pytest.raises(em.errors.FailedPreconditionError, match="CTCGreedyDecoder.*sequence_length"):
        em.nn.ctc_greedy_decoder(logits, logit_length + 5)
    with pytest.raises(em.errors.InvalidArgumentError, match="CTCBeamSearchDecoder.*more paths than the beam"):
        em.nn.ctc_beam_search_decoder(logits, logit_length, beam_width=2, top_paths=3)
    with pytest.raises(em.errors.InvalidArgumentError, match="CTCLossDense.*blank_index"):
        em.nn.ctc_loss(labels, logits, label_length, logit_length, blank_index=9)
    with pytest.raises(ValueError, match="blank_index"):
        em.nn.ctc_loss(sparse, logits, None, logit_length)
    # TensorFlow raises for the same inputs:
    with pytest.raises(tf.errors.InvalidArgumentError):
        tf.compat.v1.nn.ctc_loss(_sparse(tf, labels, label_length), logits, short)


def test_tensorflow_runs_an_exported_graph_of_the_ctc_ops():
    from test_graph_def_tf import run_in_tensorflow

    logits, labels, label_length, logit_length = _batch(blank=-1, seed=11)
    indices = np.array([[b, t] for b in range(labels.shape[0]) for t in range(label_length[b])], np.int64)
    values = labels[indices[:, 0], indices[:, 1]]

    @em.function
    def inner(x):  # a FunctionDef: its list outputs are named node:decoded_values:1 there
        decoded, log_prob = em.compat.v1.nn.ctc_beam_search_decoder(x, logit_length, beam_width=4, top_paths=2)
        loss = em.compat.v1.nn.ctc_loss(em.SparseTensor(indices, values, labels.shape), x, logit_length)
        return decoded[1].values, log_prob, loss

    @em.function(input_signature=[em.TensorSpec([7, 5, 5], em.float32)])
    def outer(x):
        return inner(x)

    graph = outer.get_concrete_function().graph
    got = run_in_tensorflow(graph.as_graph_def().SerializeToString(), [t.name for t in graph.inputs],
                            [t.name for t in graph.outputs], logits)
    for a, b in zip(got, outer(logits)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)


def test_ember_runs_a_tensorflow_graph_of_the_ctc_ops():
    logits, labels, label_length, logit_length = _batch(blank=-1, seed=12)
    indices = np.array([[b, t] for b in range(labels.shape[0]) for t in range(label_length[b])], np.int64)
    values = labels[indices[:, 0], indices[:, 1]]

    @tf.function
    def inner(x):
        decoded, log_prob = tf.compat.v1.nn.ctc_beam_search_decoder(x, logit_length, beam_width=4, top_paths=2)
        greedy, _ = tf.nn.ctc_greedy_decoder(x, logit_length)
        loss = tf.compat.v1.nn.ctc_loss(tf.SparseTensor(indices, values, labels.shape), x, logit_length)
        return decoded[1].values, decoded[0].indices, log_prob, greedy[0].values, loss

    @tf.function(input_signature=[tf.TensorSpec([7, 5, 5], tf.float32)])
    def outer(x):
        return inner(x)

    concrete = outer.get_concrete_function()
    graph = em.graph_util.import_graph_def(concrete.graph.as_graph_def())
    fn = em.NewGraphFunction(graph, ["x:0"], [t.name for t in concrete.outputs])
    for a, b in zip(fn(logits), outer(logits)):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)


def test_unknown_dims_and_float16_match_tensorflow():
    logits, labels, label_length, logit_length = _batch(blank=-1, seed=3)

    def run(m):
        @m.function(input_signature=[m.TensorSpec([None, None, 5], m.float32), m.TensorSpec([None, None], m.int32),
                                     m.TensorSpec([None], m.int32), m.TensorSpec([None], m.int32)])
        def f(x, lab, ll, sl):
            with m.GradientTape() as tape:
                tape.watch(x)
                loss = m.nn.ctc_loss(lab, x, ll, sl, blank_index=-1)
            decoded, log_prob = m.nn.ctc_beam_search_decoder(x, sl, beam_width=3, top_paths=2)
            greedy, _ = m.nn.ctc_greedy_decoder(x, sl)
            return loss, tape.gradient(loss, x), decoded[1].values, log_prob, greedy[0].indices

        half = m.nn.ctc_loss(labels, m.constant(logits.astype(np.float16)), label_length, logit_length)
        return [t.numpy() for t in f(logits, labels, label_length, logit_length)] + [half.numpy()]

    ours, theirs = run(em), run(tf)
    for a, b in zip(ours[:-1], theirs[:-1]):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    assert ours[-1].dtype == np.float16
    np.testing.assert_allclose(ours[-1].astype(np.float32), theirs[-1].astype(np.float32), rtol=1e-3)


def test_keras_model_trained_with_ctc_batch_cost_improves():
    rng = np.random.default_rng(14)
    features = rng.standard_normal((4, 8, 3)).astype(np.float32)  # [batch, time, features]
    y_true = np.array([[1, 2], [0, 0], [2, 1], [1, 1]], np.int32)
    input_length = np.full((4, 1), 8, np.int32)
    label_length = np.array([[2], [1], [2], [2]], np.int32)
    model = em.keras.Sequential([em.keras.layers.Dense(8, activation="tanh"),
                                 em.keras.layers.Dense(4, activation="softmax")])
    opt = em.keras.optimizers.Adam(0.05)

    def loss_value():
        cost = em.keras.backend.ctc_batch_cost(y_true, model(features), input_length, label_length)
        return em.reduce_mean(cost)

    first = float(loss_value())
    for _ in range(25):
        with em.GradientTape() as tape:
            loss = loss_value()
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    assert float(loss_value()) < 0.7 * first


@pytest.mark.parametrize("merge_repeated", [True, False])
def test_beam_search_orders_equally_probable_paths_as_tensorflow(merge_repeated):
    """Uniform logits make many paths exactly equally probable; their order comes from how TensorFlow's
    gtl::TopN stores the beam (Note [The beam's order] in src/ember/kernels/ctc.cc)."""
    for frames in range(1, 6):
        for classes in range(2, 6):
            for beam_width in range(1, 8):
                logits = np.zeros((frames, 2, classes), np.float32)
                logits[:, 1] = np.round(np.random.default_rng(frames * classes).standard_normal((frames, classes)))
                top = min(beam_width, 3)
                args = ([frames, frames], beam_width, top, merge_repeated)
                try:
                    theirs = tf.compat.v1.nn.ctc_beam_search_decoder(tf.constant(logits), *args)
                except tf.errors.InvalidArgumentError:  # fewer leaves than paths: both refuse
                    with pytest.raises(em.errors.InvalidArgumentError, match="less leaves"):
                        em.compat.v1.nn.ctc_beam_search_decoder(em.constant(logits), *args)
                    continue
                _same_decoded(em.compat.v1.nn.ctc_beam_search_decoder(em.constant(logits), *args), theirs,
                              np.float32)
