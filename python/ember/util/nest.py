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


def _same_structure(a, b, check_types):
    if isinstance(a, dict) or isinstance(b, dict):
        if not (isinstance(a, dict) and isinstance(b, dict)) or set(a) != set(b):
            return False
        if check_types and type(a) is not type(b):
            return False
        return all(_same_structure(a[k], b[k], check_types) for k in a)
    if isinstance(a, (list, tuple)) or isinstance(b, (list, tuple)):
        if not (isinstance(a, (list, tuple)) and isinstance(b, (list, tuple))) or len(a) != len(b):
            return False
        if check_types and type(a) is not type(b):
            return False
        return all(_same_structure(x, y, check_types) for x, y in zip(a, b))
    return True


def assert_same_structure(nest1, nest2, check_types=True):
    """Raises ValueError when the two structures nest differently (or, with ``check_types``, TypeError when a
    list stands where the other has a tuple), as ``tf.nest.assert_same_structure``."""
    if _same_structure(nest1, nest2, check_types=False):
        if check_types and not _same_structure(nest1, nest2, check_types=True):
            raise TypeError(f"The two structures don't have the same sequence type. First structure: "
                            f"{nest1!r}, second structure: {nest2!r}.")
        return
    raise ValueError(f"The two structures don't have the same nested structure.\n\nFirst structure: "
                     f"{nest1!r}\n\nSecond structure: {nest2!r}")
