"""TensorFlow's bucket array of a DenseHashTable, the form its checkpoints (and SavedModels) hold.

ember keeps a DenseHashTable as a MutableHashTable of its entries; TensorFlow's MutableDenseHashTable is an
open-addressing array of ``num_buckets`` (a power of two) key and value slots, exported and imported whole by
LookupTableExportV2/LookupTableImportV2 as ``[num_buckets, 1]`` keys and values: a free slot holds
``empty_key`` (value 0), a removed one ``deleted_key``. TensorFlow's import takes the array as it is and
finds a key by probing from ``hash(key) & (num_buckets - 1)``, so ember lays its entries out as
TensorFlow's insert would (Note [Dense bucket layout]), and reads the entries back by leaving the reserved
keys out.

Note [Dense bucket layout]
A key's first slot is its hash masked to the bucket count: ``tensorflow::Hash64`` (a MurmurHash2 variant,
seed 0xDECAFCAFFE) for a string, the key itself as a uint64 for an integer. On a collision TensorFlow probes
triangularly: the i-th probe moves i slots on, ``b = (b + i) & mask``. A lookup stops at the key or at an
empty slot, so placing each entry at the first empty slot of its probe sequence, in any order, gives an
array TensorFlow's lookups read correctly. The bucket count is the table's ``initial_num_buckets`` doubled
while the entries exceed ``max_load_factor`` of it, as TensorFlow grows it on insert.
"""

import numpy as np

_MURMUR_MULTIPLIER = 0xC6A4A7935BD1E995
_UINT64 = (1 << 64) - 1
_TENSORFLOW_HASH_SEED = 0xDECAFCAFFE

DEFAULT_NUM_BUCKETS = 131072  # MutableDenseHashTableV2's initial_num_buckets
DEFAULT_MAX_LOAD_FACTOR = 0.8


def tensorflow_hash64(data):
    """``tensorflow::Hash64(data)`` of bytes (tensorflow/core/platform/hash.cc)."""
    m = _MURMUR_MULTIPLIER
    h = (_TENSORFLOW_HASH_SEED ^ (len(data) * m)) & _UINT64
    whole = len(data) - len(data) % 8
    for i in range(0, whole, 8):
        k = (int.from_bytes(data[i:i + 8], "little") * m) & _UINT64
        k = ((k ^ (k >> 47)) * m) & _UINT64
        h = ((h ^ k) * m) & _UINT64
    tail = data[whole:]
    if tail:
        h = ((h ^ int.from_bytes(tail, "little")) * m) & _UINT64
    h = ((h ^ (h >> 47)) * m) & _UINT64
    return h ^ (h >> 47)


def _first_slot(key):
    if isinstance(key, bytes):
        return tensorflow_hash64(key)
    return int(key) & _UINT64


def num_buckets_for(entries, initial_num_buckets=None, max_load_factor=DEFAULT_MAX_LOAD_FACTOR):
    buckets = DEFAULT_NUM_BUCKETS if initial_num_buckets is None else int(initial_num_buckets)
    while entries > buckets * max_load_factor:
        buckets <<= 1
    return buckets


def to_buckets(keys, values, empty_key, num_buckets):
    """NumPy ``[num_buckets, 1]`` key and value arrays holding the entries ``keys`` -> ``values`` (1-D NumPy
    arrays) where TensorFlow's lookups find them (Note [Dense bucket layout])."""
    mask = num_buckets - 1
    key_buckets = np.full([num_buckets], empty_key, dtype=keys.dtype)
    value_buckets = np.full([num_buckets], b"" if values.dtype == object else 0, dtype=values.dtype)
    taken = np.zeros([num_buckets], dtype=bool)
    for key, value in zip(keys.tolist(), values.tolist()):
        slot, probe = _first_slot(key) & mask, 0
        while taken[slot]:
            probe += 1
            slot = (slot + probe) & mask
        taken[slot] = True
        key_buckets[slot] = key
        value_buckets[slot] = value
    return key_buckets.reshape([num_buckets, 1]), value_buckets.reshape([num_buckets, 1])


def entries_of(key_buckets, value_buckets, reserved_keys):
    """The entries (1-D keys and values) of a bucket array: the slots not holding a reserved key."""
    keys, values = np.asarray(key_buckets), np.asarray(value_buckets)
    if keys.ndim == 2:  # TensorFlow's [num_buckets, 1]; a MutableHashTable's entries are 1-D already
        keys, values = keys[:, 0], values[:, 0]
    if not reserved_keys:
        return keys, values
    entries = ~np.isin(keys, np.array(list(reserved_keys), dtype=keys.dtype))
    return keys[entries], values[entries]
