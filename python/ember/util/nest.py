"""Flattening and repacking of nested Python structures, as ``tf.nest`` does; ``ember.nest`` is this module.

The containers are lists, tuples, namedtuples, mappings (dicts visited in sorted key order, rebuilt in their
own order) and ``attrs`` classes; everything else is a leaf (None, strings and sets included). With
``expand_composites=True`` a composite tensor (RaggedTensor, SparseTensor: anything with ``_type_spec`` and
``_to_components``) is a container of its component tensors, and its TypeSpec one of component specs."""

import collections as _collections
import collections.abc as _abc

__all__ = ["assert_same_structure", "flatten", "is_nested", "map_structure", "pack_sequence_as"]


def _is_namedtuple(x):
    return isinstance(x, tuple) and hasattr(type(x), "_fields")


def _is_attrs(x):
    return hasattr(type(x), "__attrs_attrs__")


def _is_composite(x):
    return hasattr(x, "_type_spec") and hasattr(x, "_to_components")


def _is_composite_spec(x):
    return hasattr(x, "_component_specs") and hasattr(x, "_from_components") and not _is_composite(x)


def is_nested(seq):
    """True for the containers nest descends into (composite tensors are leaves here, as in TensorFlow)."""
    return isinstance(seq, (list, tuple, _abc.Mapping)) or _is_attrs(seq)


def _is_nested_or_composite(x, expand_composites):
    return is_nested(x) or (expand_composites and (_is_composite(x) or _is_composite_spec(x)))


def _sorted_keys(d):
    try:
        return sorted(d)
    except TypeError:  # keys of mixed types: keep insertion order (TensorFlow raises; call keys rely on this)
        return list(d)


def _children(x, expand_composites):
    """The direct children of a container, in nest order; None for a leaf."""
    if isinstance(x, _abc.Mapping):
        return [x[k] for k in _sorted_keys(x)]
    if isinstance(x, (list, tuple)):
        return list(x)
    if _is_attrs(x):
        return [getattr(x, a.name) for a in type(x).__attrs_attrs__]
    if expand_composites:
        if _is_composite(x):
            return list(x._to_components())
        if _is_composite_spec(x):
            return list(x._component_specs())
    return None


def _rebuild(x, values):
    """A container like ``x`` holding ``values`` (its children in nest order)."""
    if isinstance(x, _abc.Mapping):
        by_key = dict(zip(_sorted_keys(x), values))
        if type(x) is dict:
            return {k: by_key[k] for k in x}
        if isinstance(x, _collections.defaultdict):
            rebuilt = type(x)(x.default_factory)
            rebuilt.update((k, by_key[k]) for k in x)
            return rebuilt
        return type(x)((k, by_key[k]) for k in x)
    if _is_namedtuple(x) or _is_attrs(x):
        return type(x)(*values)
    if isinstance(x, (list, tuple)):
        return type(x)(values)
    if _is_composite(x):
        return x._type_spec._from_components(values)
    return x._from_components(values)


def flatten(structure, expand_composites=False):
    """The leaves of ``structure`` in order: ``flatten({"b": 1, "a": [2, None]}) == [2, None, 1]``."""
    leaves = []
    _flatten_into(structure, leaves, expand_composites)
    return leaves


def _flatten_into(x, leaves, expand_composites):
    children = _children(x, expand_composites)
    if children is None:
        leaves.append(x)
        return
    for child in children:
        _flatten_into(child, leaves, expand_composites)


def pack_sequence_as(structure, flat_sequence, expand_composites=False):
    """Rebuilds ``structure`` with its leaves replaced, in order, by ``flat_sequence``."""
    if isinstance(flat_sequence, (_abc.Iterator, _abc.MappingView)):
        flat_sequence = list(flat_sequence)
    if not isinstance(flat_sequence, (list, tuple)):
        raise TypeError(f"Attempted to pack value:\n  {flat_sequence!r}\ninto a structure, but found "
                        f"incompatible type `{type(flat_sequence)}` instead.")
    if not _is_nested_or_composite(structure, expand_composites):
        if len(flat_sequence) != 1:
            raise ValueError(f"The target structure is of type `{type(structure)}`\n  {structure!r}\nHowever the "
                             f"input is a sequence ({type(flat_sequence)}) of length {len(flat_sequence)}.\n  "
                             f"{flat_sequence!r}\nnest cannot guarantee that it is safe to map one to the other.")
        return flat_sequence[0]
    atoms = len(flatten(structure, expand_composites))
    if atoms != len(flat_sequence):
        raise ValueError(f"Could not pack sequence. Structure had {atoms} atoms, but flat_sequence had "
                         f"{len(flat_sequence)} items.  Structure: {structure!r}, flat_sequence: "
                         f"{flat_sequence!r}.")
    return _pack(structure, iter(flat_sequence), expand_composites)


def _pack(x, it, expand_composites):
    children = _children(x, expand_composites)
    if children is None:
        return next(it)
    return _rebuild(x, [_pack(child, it, expand_composites) for child in children])


def map_structure(func, *structure, **kwargs):
    """``func`` applied to the leaves of the structures (which must nest alike), packed as the first one."""
    unknown = [k for k in kwargs if k not in ("check_types", "expand_composites")]
    if unknown:
        raise ValueError(f"Only valid keyword arguments are `check_types` and `expand_composites`, not: "
                         f"`{'`, `'.join(unknown)}`")
    if not callable(func):
        raise TypeError(f"func must be callable, got: {func!r}")
    if not structure:
        raise ValueError("Must provide at least one structure")
    check_types = kwargs.get("check_types", True)
    expand_composites = kwargs.get("expand_composites", False)
    for other in structure[1:]:
        assert_same_structure(structure[0], other, check_types=check_types, expand_composites=expand_composites)
    flat = [flatten(s, expand_composites) for s in structure]
    return pack_sequence_as(structure[0], [func(*leaves) for leaves in zip(*flat)], expand_composites)


class _Dot:
    """A leaf's stand-in when an error message draws a structure's outline."""

    def __repr__(self):
        return "."


def _describe(x):
    return f"type={type(x).__name__} str={x!r}"


def _mismatch(a, b, check_types, expand_composites):
    """Why ``a`` and ``b`` nest differently, as (exception type, message); None when they nest alike."""
    a_composite = expand_composites and _is_composite(a)
    b_composite = expand_composites and _is_composite(b)
    if a_composite or b_composite:
        if a_composite and b_composite and _specs_compatible(a._type_spec, b._type_spec):
            return None
        spec_a = a._type_spec if a_composite else a
        spec_b = b._type_spec if b_composite else b
        return ValueError, f"Incompatible CompositeTensor TypeSpecs: {_describe(spec_a)} vs. {_describe(spec_b)}"
    a_nested, b_nested = is_nested(a), is_nested(b)
    if a_nested != b_nested:
        seq, non_seq = (a, b) if a_nested else (b, a)
        return ValueError, f'Substructure "{_describe(seq)}" is a sequence, while substructure "{_describe(non_seq)}" ' \
                           f"is not"
    if not a_nested:
        return None
    a_children, b_children = _children(a, expand_composites), _children(b, expand_composites)
    if len(a_children) != len(b_children):
        return ValueError, f"The two structures don't have the same number of elements. First structure: " \
                           f"{_describe(a)}. Second structure: {_describe(b)}"
    a_mapping, b_mapping = isinstance(a, _abc.Mapping), isinstance(b, _abc.Mapping)
    if (check_types and type(a) is not type(b)) or a_mapping != b_mapping:
        return TypeError, f"The two namedtuples don't have the same sequence type. First structure " \
                          f"{_describe(a)} has type {type(a).__name__}, while second structure {_describe(b)} " \
                          f"has type {type(b).__name__}"
    if a_mapping and set(a) != set(b):
        return ValueError, f"The two dictionaries don't have the same set of keys. First structure has keys " \
                           f"{_describe(_sorted_keys(a))}, while second structure has keys {_describe(_sorted_keys(b))}"
    for x, y in zip(a_children, b_children):
        found = _mismatch(x, y, check_types, expand_composites)
        if found is not None:
            return found
    return None


def _specs_compatible(a, b):
    """Whether two composites' specs have a common supertype: same kind, dtype and rank (and ragged layout)."""
    if type(a) is not type(b) or getattr(a, "dtype", None) != getattr(b, "dtype", None):
        return False
    if a.shape.rank != b.shape.rank:
        return False
    layout = ("_ragged_rank", "_row_splits_dtype")
    return all(getattr(a, f, None) == getattr(b, f, None) for f in layout)


def assert_same_structure(nest1, nest2, check_types=True, expand_composites=False):
    """Raises ValueError when the two structures nest differently, TypeError when (with ``check_types``) a
    container's type differs, e.g. a list where the other has a tuple: the messages are TensorFlow's."""
    found = _mismatch(nest1, nest2, check_types, expand_composites)
    if found is None:
        return
    error, detail = found
    outline1 = map_structure(lambda _: _Dot(), nest1)
    outline2 = map_structure(lambda _: _Dot(), nest2)
    raise error(f"The two structures don't have the same nested structure.\n\nFirst structure: {_describe(nest1)}"
                f"\n\nSecond structure: {_describe(nest2)}\n\nMore specifically: {detail}\nEntire first structure:\n"
                f"{outline1!r}\nEntire second structure:\n{outline2!r}")
