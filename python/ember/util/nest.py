"""Flattening and repacking of nested Python structures (lists, tuples, namedtuples, dicts), as
``tf.nest`` does: dict entries are visited in sorted key order."""


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def is_nested(x):
    return isinstance(x, (list, tuple, dict))


def flatten(structure):
    """The leaves of ``structure`` in order (None is a leaf)."""
    leaves = []
    _flatten_into(structure, leaves)
    return leaves


def _flatten_into(x, leaves):
    if isinstance(x, dict):
        for k in _sorted_keys(x):
            _flatten_into(x[k], leaves)
    elif isinstance(x, (list, tuple)):
        for v in x:
            _flatten_into(v, leaves)
    else:
        leaves.append(x)


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:  # keys of mixed types: keep insertion order
        return list(d)


def pack_sequence_as(structure, flat):
    """Rebuilds ``structure`` with its leaves replaced, in order, by ``flat``."""
    it = iter(flat)
    result = _pack(structure, it)
    return result


def _pack(x, it):
    if isinstance(x, dict):
        packed = {k: _pack(x[k], it) for k in _sorted_keys(x)}
        return type(x)((k, packed[k]) for k in x) if type(x) is not dict else {k: packed[k] for k in x}
    if _is_namedtuple(x):
        return type(x)(*[_pack(v, it) for v in x])
    if isinstance(x, (list, tuple)):
        return type(x)(_pack(v, it) for v in x)
    return next(it)


def map_structure(fn, structure):
    return pack_sequence_as(structure, [fn(v) for v in flatten(structure)])
