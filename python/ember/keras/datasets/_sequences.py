"""The preparation imdb and reuters share: word indices shifted past the reserved ones, long sequences dropped,
rare and frequent words replaced by (or dropped for) the out-of-vocabulary index."""

import numpy as np


def shuffled(x, y, rng):
    """``x`` and ``y`` in the order ``rng`` (a ``np.random.RandomState``) shuffles ``arange(len(x))`` into."""
    order = np.arange(len(x))
    rng.shuffle(order)
    return x[order], y[order]


def shift(sequences, start_char, index_from):
    """Each sequence's indices plus ``index_from``, after ``start_char`` (not shifted without a start char and
    with ``index_from`` 0)."""
    if start_char is not None:
        return [[start_char] + [w + index_from for w in x] for x in sequences]
    if index_from:
        return [[w + index_from for w in x] for x in sequences]
    return [list(x) for x in sequences]


def drop_longer(maxlen, sequences, labels):
    """The sequences shorter than ``maxlen`` (strictly, as Keras), with their labels."""
    kept = [(x, y) for x, y in zip(sequences, labels) if len(x) < maxlen]
    return [x for x, _ in kept], [y for _, y in kept]


def limit_vocabulary(sequences, num_words, skip_top, oov_char):
    """Words outside ``[skip_top, num_words)`` (num_words defaulting to the largest index) become
    ``oov_char``, or are dropped when it is None."""
    if not num_words:
        num_words = max(max(x) for x in sequences)
    if oov_char is not None:
        return [[w if skip_top <= w < num_words else oov_char for w in x] for x in sequences]
    return [[w for w in x if skip_top <= w < num_words] for x in sequences]
