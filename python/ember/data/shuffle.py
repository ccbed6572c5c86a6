"""Dataset.shuffle in TensorFlow's order (Note [Shuffle order]).

Note [Shuffle order]
TensorFlow's shuffle keeps a ring buffer of ``buffer_size`` slots (all the elements for
UNKNOWN_CARDINALITY), filled in input order. Each output draws one 32-bit number ``r`` from a Philox-4x32-10
stream, takes the element at ``(start + r % count) % size`` among the ``count`` buffered ones, moves the
element at ``start`` into its slot and advances ``start``; the next input element goes into the slot freed at
the end of the ring. The stream is keyed by per-iterator seeds: the dataset's ``(seed, seed2)`` (as
``tf.random`` derives them from the op seed and the global seed) when ``reshuffle_each_iteration`` is false,
else the next two 32-bit draws of a second Philox stream keyed by ``(seed, seed2)`` and shared by the
dataset's iterators, so epoch k uses draws 2k and 2k+1. Philox(seed, seed2) puts ``seed``'s two words in the
key and ``seed2``'s in counter words 2 and 3, and its four outputs are used one at a time. With the same seeds
the order is TensorFlow's element for element (tests/python/test_data.py compares them).
"""

import threading

import numpy as np

_M0, _M1 = 0xD2511F53, 0xCD9E8D57
_W0, _W1 = 0x9E3779B9, 0xBB67AE85
_MASK = 0xFFFFFFFF


class Philox:
    """TensorFlow's PhiloxRandom(seed, seed2) through SingleSampleAdapter: 32-bit draws one at a time."""

    def __init__(self, seed, seed2):
        seed &= (1 << 64) - 1
        seed2 &= (1 << 64) - 1
        self._key = (seed & _MASK, seed >> 32)
        self._counter = [0, 0, seed2 & _MASK, seed2 >> 32]
        self._block = ()
        self._used = 0

    def _next_block(self):
        c0, c1, c2, c3 = self._counter
        k0, k1 = self._key
        for _ in range(10):
            p0, p1 = _M0 * c0, _M1 * c2
            c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & _MASK, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK)
            k0, k1 = (k0 + _W0) & _MASK, (k1 + _W1) & _MASK
        # The 128-bit counter steps by one after each block.
        value = (self._counter[0] | self._counter[1] << 32 | self._counter[2] << 64 | self._counter[3] << 96) + 1
        self._counter = [(value >> s) & _MASK for s in (0, 32, 64, 96)]
        return (c0, c1, c2, c3)

    def __call__(self):
        if self._used == len(self._block):
            self._block, self._used = self._next_block(), 0
        r = self._block[self._used]
        self._used += 1
        return r


class SeedGenerator:
    """The per-iterator seeds of one shuffle dataset (shared by its iterators)."""

    def __init__(self, seeds, reshuffle):
        if seeds == (0, 0):  # no op seed and no global seed: fresh random seeds, as TensorFlow
            seeds = tuple(int(v) for v in np.random.default_rng().integers(0, 2**63 - 1, size=2))
        self._seeds = seeds
        self._reshuffle = reshuffle
        self._stream = Philox(*seeds)
        self._lock = threading.Lock()

    def next_seeds(self):
        if not self._reshuffle:
            return self._seeds
        with self._lock:
            return self._stream(), self._stream()


def shuffled(elements, buffer_size, seeds):
    """``elements`` (an iterator) in the order of TensorFlow's shuffle with iterator seeds ``seeds``;
    ``buffer_size`` < 0 buffers everything."""
    draw = Philox(*seeds)
    everything = buffer_size < 0
    ring = [] if everything else [None] * buffer_size
    start = end = 0
    exhausted = False
    while True:
        while not exhausted and (everything or end - start < buffer_size):
            element = next(elements, None)
            if element is None:
                exhausted = True
                break
            if everything:
                ring.append(element)
            else:
                ring[end % buffer_size] = element
            end += 1
        if start == end:
            return
        size = len(ring)
        index = (start + draw() % (end - start)) % size
        out = ring[index]
        ring[index] = ring[start % size]
        ring[start % size] = None
        start += 1
        yield out
