"""``keras.preprocessing.sequence``: ``pad_sequences`` and word2vec's ``skipgrams`` / ``make_sampling_table``."""

import random

import numpy as np

from ember.keras.utils.data_utils import pad_sequences  # noqa: F401


def make_sampling_table(size, sampling_factor=1e-5):
    """Probability of keeping the word of each frequency rank, word2vec's subsampling under Zipf's law
    (rank 0 is padding)."""
    gamma = 0.577
    rank = np.arange(size)
    rank[0] = 1
    inv_fq = rank * (np.log(rank) + gamma) + 0.5 - 1.0 / (12.0 * rank)
    f = sampling_factor * inv_fq
    return np.minimum(1.0, f / np.sqrt(f))


def skipgrams(sequence, vocabulary_size, window_size=4, negative_samples=1.0, shuffle=True, categorical=False,
              sampling_table=None, seed=None):
    """(couples, labels): each word with each neighbour within ``window_size`` (label 1), plus
    ``negative_samples`` times as many random pairs (label 0). Index 0 is skipped as padding."""
    couples = []
    labels = []
    for i, wi in enumerate(sequence):
        if not wi:
            continue
        if sampling_table is not None and sampling_table[wi] < random.random():
            continue
        for j in range(max(0, i - window_size), min(len(sequence), i + window_size + 1)):
            if j != i and sequence[j]:
                couples.append([wi, sequence[j]])
                labels.append([0, 1] if categorical else 1)
    if negative_samples > 0:
        count = int(len(labels) * negative_samples)
        words = [c[0] for c in couples]
        random.shuffle(words)
        couples += [[words[i % len(words)], random.randint(1, vocabulary_size - 1)] for i in range(count)]
        labels += [[1, 0] if categorical else 0] * count
    if shuffle:
        if seed is None:
            seed = random.randint(0, 10_000_000)
        order = list(range(len(couples)))
        random.Random(seed).shuffle(order)
        couples = [couples[i] for i in order]
        labels = [labels[i] for i in order]
    return couples, labels
