"""Candidate samplers (``tf.random.*_candidate_sampler``), ``tf.nn.compute_accidental_hits`` and the sampled
losses built on them, ``tf.nn.sampled_softmax_loss`` and ``tf.nn.nce_loss`` (the word2vec tutorial's).

TensorFlow's samplers are C++ kernels; here the draw happens in NumPy (through ``numpy_function``, so the
same code runs eagerly and inside ``ember.function``), seeded by one draw of ember's stateful RNG: the
global and op seeds make it repeatable, though the stream cannot equal TensorFlow's. What is exact is the
rest of the contract: candidates in [0, range_max) as int64, no repeats when ``unique``, and the expected
counts of TensorFlow's RangeSampler: p * num_sampled, or, when ``unique`` made the draw take more tries
than num_sampled, 1 - (1 - p) ** num_tries (computed as -expm1(num_tries * log1p(-p))).

The losses follow TensorFlow's ``_compute_sampled_logits`` step by step, so with the same ``sampled_values``
they give TensorFlow's numbers."""

import collections
import math

import numpy as np

from ember import _C, dtypes, errors
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops import array_ops, math_ops

_Sampled = {}


def _result_type(name):
    if name not in _Sampled:
        _Sampled[name] = collections.namedtuple(
            name, ["sampled_candidates", "true_expected_count", "sampled_expected_count"])
    return _Sampled[name]


def _int_attr(value, what, minimum):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what} must be an int; got {value!r}")
    if value < minimum:
        raise errors.InvalidArgumentError(None, None, f"{what} must be at least {minimum}; got {value}")
    if value > 2**62:
        raise errors.InvalidArgumentError(None, None, f"{what} is out of range: {value}")
    return int(value)


def _true_classes(true_classes, num_true, op):
    t = true_classes if isinstance(true_classes, Tensor) else convert_to_tensor(true_classes, dtype_hint=dtypes.int64)
    if t.dtype != dtypes.int64:
        raise errors.InvalidArgumentError(None, None, f"{op}: true_classes must be an int64 tensor; got "
                                                      f"{t.dtype.name}")
    if t.shape.rank is not None and t.shape.rank != 2:
        raise errors.InvalidArgumentError(None, None, f"{op}: true_classes must be a matrix; got shape {t.shape}")
    if t.shape.rank == 2 and t.shape[1] is not None and t.shape[1] != num_true:
        raise errors.InvalidArgumentError(None, None, f"{op}: true_classes must have num_true columns, expected: "
                                                      f"{num_true} was: {t.shape[1]}")
    return t


def _seed_tensor(seed):
    from ember.ops import random_ops

    return random_ops.uniform([], 0, 2**62, dtype=dtypes.int64, seed=seed)


def _check_true_range(op, true_np, range_max):
    bad = true_np[(true_np < 0) | (true_np >= range_max)]
    if bad.size:
        raise errors.InvalidArgumentError(None, None, f"{op}: `true_candidate` out of range [0, {range_max}), "
                                                      f"received {bad[0]}")


def _expected_count(p, num_sampled, num_tries):
    if num_tries == num_sampled:
        return p * num_sampled
    return -np.expm1(num_tries * np.log1p(-p))


def _sample(op, true_classes, num_true, num_sampled, unique, range_max, seed, probabilities, draw, learn=None):
    """The sampler's three results. ``probabilities(ids)`` gives each class's probability (float64),
    ``draw(rng, n)`` n classes independently; ``learn(true_np)``, if given, runs after each draw."""
    num_true = _int_attr(num_true, f"{op}: num_true", 1)
    num_sampled = _int_attr(num_sampled, f"{op}: num_sampled", 1)
    range_max = _int_attr(range_max, f"{op}: range_max", 1)
    if not isinstance(unique, (bool, np.bool_)):
        raise TypeError(f"{op}: unique must be a bool; got {unique!r}")
    true_classes = _true_classes(true_classes, num_true, op)
    if unique and num_sampled > range_max:
        raise errors.InvalidArgumentError(None, None, f"{op}: Sampler's range is too small: num_sampled "
                                                      f"{num_sampled} unique candidates from range_max {range_max}")

    def run(true_np, seed_np):
        if true_np.ndim == 2 and true_np.shape[1] != num_true:
            raise errors.InvalidArgumentError(None, None, f"{op}: true_classes must have num_true columns, "
                                                          f"expected: {num_true} was: {true_np.shape[1]}")
        _check_true_range(op, true_np, range_max)
        rng = np.random.default_rng(int(seed_np))
        if unique:
            picked, seen, tries = [], set(), 0
            while len(picked) < num_sampled:
                for c in draw(rng, max(num_sampled - len(picked), 1)):
                    tries += 1
                    if c not in seen:
                        seen.add(c)
                        picked.append(c)
                        if len(picked) == num_sampled:
                            break
            sampled = np.array(picked, np.int64)
        else:
            sampled, tries = np.asarray(draw(rng, num_sampled), np.int64), num_sampled
        true_count = _expected_count(probabilities(true_np), num_sampled, tries).astype(np.float32)
        sampled_count = _expected_count(probabilities(sampled), num_sampled, tries).astype(np.float32)
        if learn is not None:
            learn(true_np)
        return sampled, true_count, sampled_count

    from ember.ops.script_ops import numpy_function

    sampled, true_count, sampled_count = numpy_function(run, [true_classes, _seed_tensor(seed)],
                                                        [dtypes.int64, dtypes.float32, dtypes.float32])
    sampled = array_ops.reshape(sampled, [num_sampled])
    sampled_count = array_ops.reshape(sampled_count, [num_sampled])
    true_count = array_ops.reshape(true_count, array_ops.shape(true_classes))
    return _result_type(op)(sampled, true_count, sampled_count)


def _in_range(p_of, range_max):
    """p_of(ids) with 0 for ids outside [0, range_max) (a true class may lie outside: TF gives it 0)."""
    def probabilities(ids):
        ids = np.asarray(ids, np.int64)
        p = np.zeros(ids.shape, np.float64)
        ok = (ids >= 0) & (ids < range_max)
        p[ok] = p_of(ids[ok])
        return p
    return probabilities


def uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """num_sampled classes drawn uniformly from [0, range_max)."""
    return _sample("UniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed,
                   _in_range(lambda ids: np.full(ids.shape, 1.0 / range_max), range_max),
                   lambda rng, n: rng.integers(0, range_max, n).tolist())


def log_uniform_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None, name=None):
    """num_sampled classes from the log-uniform (Zipfian) distribution over [0, range_max):
    P(c) = (log(c + 2) - log(c + 1)) / log(range_max + 1); classes sorted by decreasing frequency fit it."""
    log_range = math.log(range_max + 1)

    def p_of(ids):
        return (np.log(ids + 2.0) - np.log(ids + 1.0)) / log_range

    def draw(rng, n):
        # Inverse CDF: floor(exp(u * log(range_max + 1))) - 1, clamped to the range against rounding.
        v = np.floor(np.exp(rng.random(n) * log_range)).astype(np.int64) - 1
        return np.clip(v, 0, range_max - 1).tolist()

    return _sample("LogUniformCandidateSampler", true_classes, num_true, num_sampled, unique, range_max, seed,
                   _in_range(p_of, range_max), draw)


def fixed_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, vocab_file="",
                                    distortion=1.0, num_reserved_ids=0, num_shards=1, shard=0, unigrams=(),
                                    seed=None, name=None):
    """num_sampled classes drawn with probabilities proportional to unigrams ** distortion (a list of
    range_max - num_reserved_ids weights; reserved ids have weight 0). ``vocab_file`` and num_shards > 1 are
    not supported (UnimplementedError)."""
    op = "FixedUnigramCandidateSampler"
    if vocab_file:
        raise errors.UnimplementedError(None, None, f"{op}: vocab_file is not supported by ember; pass unigrams")
    weights = np.asarray(list(unigrams), np.float64)
    if weights.ndim != 1 or not np.isfinite(weights).all() or (weights < 0).any():
        raise errors.InvalidArgumentError(None, None, f"{op}: unigrams must be a list of finite non-negative "
                                                      f"numbers; got {unigrams!r}")
    num_reserved_ids = _int_attr(num_reserved_ids, f"{op}: num_reserved_ids", 0)
    num_shards = _int_attr(num_shards, f"{op}: num_shards", 1)
    shard = _int_attr(shard, f"{op}: shard", 0)
    if not isinstance(range_max, (int, np.integer)) or isinstance(range_max, bool):
        raise TypeError(f"{op}: range_max must be an int; got {range_max!r}")
    if len(weights) + num_reserved_ids != range_max:
        raise errors.InvalidArgumentError(None, None, f"{op}: range_max must equal len(unigrams) + "
                                                      f"num_reserved_ids: {range_max} vs. {len(weights)} + "
                                                      f"{num_reserved_ids}")
    if num_shards != 1:
        # TensorFlow's kernel then holds only this shard's ids in a range of its own; not reproduced here.
        raise errors.UnimplementedError(None, None, f"{op}: num_shards > 1 is not supported by ember; got "
                                                    f"{num_shards}")
    if shard >= num_shards:
        raise errors.InvalidArgumentError(None, None, f"{op}: shard {shard} must be less than num_shards "
                                                      f"{num_shards}")
    full = np.concatenate([np.zeros(num_reserved_ids), weights ** float(distortion)])
    full[np.arange(range_max) % num_shards != shard] = 0.0
    total = full.sum()
    if not total > 0:
        raise errors.InvalidArgumentError(None, None, f"{op}: the unigrams of shard {shard} sum to 0")
    probs = full / total

    return _sample(op, true_classes, num_true, num_sampled, unique, range_max, seed,
                   _in_range(lambda ids: probs[ids], range_max),
                   lambda rng, n: rng.choice(range_max, size=n, p=probs).tolist())


# The counts of each learned_unigram sampler, as TensorFlow keeps them in its kernel: eagerly one per
# (attributes, seeds), so repeated calls go on learning; in a function, one per traced call site.
_LEARNED_COUNTS = {}


def learned_unigram_candidate_sampler(true_classes, num_true, num_sampled, unique, range_max, seed=None,
                                      name=None):
    """Like the unigram sampler, with probabilities learned from the true classes seen so far: every class
    starts with a count of 1, and each call, after drawing, adds 1 per true class it was given."""
    op = "LearnedUnigramCandidateSampler"
    range_max_int = _int_attr(range_max, f"{op}: range_max", 1)
    # The other arguments are checked before a table of range_max counts is made for them.
    _true_classes(true_classes, _int_attr(num_true, f"{op}: num_true", 1), op)
    _int_attr(num_sampled, f"{op}: num_sampled", 1)
    global_seed = _C.random_global_seed()
    key = (num_true, num_sampled, bool(unique), range_max_int, seed, global_seed)
    if _C.in_trace() or (seed is None and global_seed is not None):
        table = {}  # a new kernel: TensorFlow gives this call fresh op seeds
    else:
        table = _LEARNED_COUNTS.setdefault(key, {})

    def counts():
        if "counts" not in table:  # made at the first draw, when the sampler runs
            try:
                table["counts"] = np.ones(range_max_int)
            except MemoryError:
                raise errors.ResourceExhaustedError(None, None, f"{op}: no memory for the counts of range_max "
                                                                f"{range_max_int} classes") from None
        return table["counts"]

    def probabilities(ids):
        c = counts()
        return c[np.asarray(ids, np.int64)] / c.sum()

    def draw(rng, n):
        c = counts()
        return rng.choice(range_max_int, size=n, p=c / c.sum()).tolist()

    def learn(true_np):
        np.add.at(counts(), true_np.reshape(-1), 1.0)

    return _sample(op, true_classes, num_true, num_sampled, unique, range_max, seed, probabilities, draw, learn)


def all_candidate_sampler(true_classes, num_true, num_sampled, unique, seed=None, name=None):
    """Every class 0..num_sampled-1, each with expected count 1 (for tests of the sampled losses)."""
    op = "AllCandidateSampler"
    num_true = _int_attr(num_true, f"{op}: num_true", 1)
    num_sampled = _int_attr(num_sampled, f"{op}: num_sampled", 1)
    true_classes = _true_classes(true_classes, num_true, op)
    if not _C.in_trace():
        _check_true_range(op, true_classes.numpy(), num_sampled)
    sampled = math_ops.cast(array_ops.range(num_sampled), dtypes.int64)
    return _result_type(op)(sampled, array_ops.ones(array_ops.shape(true_classes), dtypes.float32),
                            array_ops.ones([num_sampled], dtypes.float32))


def compute_accidental_hits(true_classes, sampled_candidates, num_true, seed=None, name=None):
    """The (row, position) pairs where a sampled candidate equals one of the row's true classes, and a weight
    of -FLT_MAX for each (added to those logits, it removes them): indices int32, ids int64 (positions in
    sampled_candidates), weights float32; ordered by row, then true class, then position."""
    op = "ComputeAccidentalHits"
    num_true = _int_attr(num_true, f"{op}: num_true", 1)
    true_classes = _true_classes(true_classes, num_true, op)
    sampled = sampled_candidates if isinstance(sampled_candidates, Tensor) else \
        convert_to_tensor(sampled_candidates, dtype_hint=dtypes.int64)
    if sampled.dtype != dtypes.int64 or sampled.shape.rank not in (None, 1):
        raise errors.InvalidArgumentError(None, None, f"{op}: sampled_candidates must be an int64 vector; got "
                                                      f"{sampled.dtype.name} of shape {sampled.shape}")
    # A candidate drawn twice is hit once, at its last position (TensorFlow keeps a value -> position map).
    positions = array_ops.range(array_ops.size(sampled))
    later_copy = math_ops.reduce_any(math_ops.logical_and(math_ops.equal(sampled[:, None], sampled[None, :]),
                                                          positions[None, :] > positions[:, None]), axis=1)
    hit = math_ops.logical_and(math_ops.equal(true_classes[:, :, None], sampled[None, None, :]),
                               math_ops.logical_not(later_copy)[None, None, :])
    hits = array_ops.where(hit)
    indices = math_ops.cast(hits[:, 0], dtypes.int32)
    ids = hits[:, 2]
    weights = array_ops.fill(array_ops.shape(ids), convert_to_tensor(np.finfo(np.float32).min, dtypes.float32))
    return indices, ids, weights


# ---- the sampled losses ------------------------------------------------------------------------------------


def _rows(params, ids, partition_strategy):
    """params' rows at ids, for one table or a list of shards split as ``partition_strategy`` says."""
    from ember.ops.embedding_ops import embedding_lookup

    if not isinstance(params, (list, tuple)):
        return embedding_lookup(params, ids)
    shards = [p if isinstance(p, Tensor) else convert_to_tensor(p) for p in params]
    if len(shards) == 1:
        return embedding_lookup(shards[0], ids)
    if partition_strategy not in ("mod", "div"):
        raise ValueError(f"Unrecognized partition strategy: {partition_strategy}. Must be one of 'mod', 'div'.")
    sizes = [s.shape[0] for s in shards]
    if any(n is None for n in sizes):
        raise ValueError("sampled losses: every shard of weights needs a static first dimension")
    table = array_ops.concat(shards, 0)
    n, total = len(shards), sum(sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    if partition_strategy == "mod":
        row = array_ops.gather(convert_to_tensor(offsets), ids % n) + ids // n
    else:  # "div": the first total % n shards hold one more id
        per, extra = divmod(total, n)
        bound = extra * (per + 1)
        shard = array_ops.where(ids < bound, ids // (per + 1), extra + (ids - bound) // max(per, 1))
        start = array_ops.where(ids < bound, shard * (per + 1), bound + (shard - extra) * per)
        row = array_ops.gather(convert_to_tensor(offsets), shard) + ids - start
    return embedding_lookup(table, row)


def _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true, sampled_values,
                            subtract_log_q, remove_accidental_hits, partition_strategy, seed):
    from ember.backprop import stop_gradient

    labels = labels if isinstance(labels, Tensor) else convert_to_tensor(labels, dtype_hint=dtypes.int64)
    if labels.dtype != dtypes.int64:
        labels = math_ops.cast(labels, dtypes.int64)
    inputs = inputs if isinstance(inputs, Tensor) else convert_to_tensor(inputs)
    labels_flat = array_ops.reshape(labels, [-1])
    if sampled_values is None:
        sampled_values = log_uniform_candidate_sampler(labels, num_true, num_sampled, True, num_classes, seed=seed)
    if len(sampled_values) != 3:
        raise ValueError(f"sampled_values must be (sampled_candidates, true_expected_count, "
                         f"sampled_expected_count); got {len(sampled_values)} values")
    sampled, true_expected, sampled_expected = (stop_gradient(convert_to_tensor(s)) for s in sampled_values)
    sampled = math_ops.cast(sampled, dtypes.int64)
    n_true = array_ops.size(labels_flat)
    all_ids = array_ops.concat([labels_flat, sampled], 0)

    all_w = _rows(weights, all_ids, partition_strategy)
    if all_w.dtype != inputs.dtype:
        all_w = math_ops.cast(all_w, inputs.dtype)
    true_w, sampled_w = all_w[:n_true], all_w[n_true:]
    sampled_logits = math_ops.matmul(inputs, sampled_w, transpose_b=True)
    all_b = _rows(biases, all_ids, partition_strategy)
    if all_b.dtype != inputs.dtype:
        all_b = math_ops.cast(all_b, inputs.dtype)
    true_b, sampled_b = all_b[:n_true], all_b[n_true:]

    dim = array_ops.shape(true_w)[1:2]
    true_w = array_ops.reshape(true_w, array_ops.concat([[-1, num_true], dim], 0))
    true_logits = math_ops.reduce_sum(array_ops.expand_dims(inputs, 1) * true_w, axis=2)
    true_logits = true_logits + array_ops.reshape(true_b, [-1, num_true])
    sampled_logits = sampled_logits + sampled_b

    if remove_accidental_hits:
        indices, ids, hit_weights = compute_accidental_hits(labels, sampled, num_true=num_true)
        rows = array_ops.stack([math_ops.cast(indices, dtypes.int64), ids], axis=1)
        from ember.ops.indexing_ops import scatter_nd

        shape = array_ops.stack([array_ops.shape(labels, out_type=dtypes.int64)[0],
                                 array_ops.size(sampled, out_type=dtypes.int64)])
        sampled_logits = sampled_logits + scatter_nd(rows, math_ops.cast(hit_weights, sampled_logits.dtype), shape)
    if subtract_log_q:
        true_logits = true_logits - math_ops.log(math_ops.cast(true_expected, true_logits.dtype))
        sampled_logits = sampled_logits - math_ops.log(math_ops.cast(sampled_expected, sampled_logits.dtype))
    out_logits = array_ops.concat([true_logits, sampled_logits], 1)
    out_labels = array_ops.concat([array_ops.ones_like(true_logits) / num_true,
                                   array_ops.zeros_like(sampled_logits)], 1)
    return out_logits, out_labels


def _check_loss_args(num_sampled, num_classes, num_true):
    for what, v, low in (("num_sampled", num_sampled, 1), ("num_classes", num_classes, 1), ("num_true", num_true, 1)):
        _int_attr(v, what, low)


def sampled_softmax_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1, sampled_values=None,
                         remove_accidental_hits=True, seed=None, name="sampled_softmax_loss"):
    """The softmax cross-entropy of the true classes against num_sampled sampled ones, per example: a
    training-time stand-in for the full softmax over num_classes. weights [num_classes, dim] (or a list of
    shards, split "div" as TF2's), biases [num_classes], labels [batch, num_true], inputs [batch, dim]."""
    from ember.backprop import stop_gradient
    from ember.ops.nn_ops import softmax_cross_entropy_with_logits

    _check_loss_args(num_sampled, num_classes, num_true)
    logits, labels = _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                                             sampled_values, True, remove_accidental_hits, "div", seed)
    return softmax_cross_entropy_with_logits(labels=stop_gradient(labels), logits=logits)


def nce_loss(weights, biases, labels, inputs, num_sampled, num_classes, num_true=1, sampled_values=None,
             remove_accidental_hits=False, name="nce_loss"):
    """Noise-contrastive estimation loss per example: logistic losses of the true classes (label 1/num_true)
    and the sampled ones (label 0), with log expected counts subtracted from the logits, summed per row."""
    from ember.ops.nn_ops import sigmoid_cross_entropy_with_logits

    _check_loss_args(num_sampled, num_classes, num_true)
    logits, labels = _compute_sampled_logits(weights, biases, labels, inputs, num_sampled, num_classes, num_true,
                                             sampled_values, True, remove_accidental_hits, "div", None)
    return math_ops.reduce_sum(sigmoid_cross_entropy_with_logits(labels=labels, logits=logits), axis=1)
