"""The eager iterator of a dataset (``iter(ds)`` outside a trace)."""

import weakref

from ember import errors
from ember.data import structure


class OwnedIterator:
    """Yields ``dataset``'s elements in its structure. The end is StopIteration from ``next`` and
    OutOfRangeError from ``get_next``, as TensorFlow's. Dropping the iterator (or ``close``) stops the C++
    threads of its pipeline at once."""

    def __init__(self, dataset):
        self._dataset = dataset
        self._spec = dataset.element_spec
        self._single = not structure.is_structure(self._spec)
        native = dataset._native()
        if native is not None:
            # The common pipeline (a native chain) skips the generator: one C++ call per element.
            self._native = native
            self._flat = None
            _live.add(self)
        else:
            self._native = None
            self._flat = dataset._flat_iter()

    @property
    def element_spec(self):
        return self._spec

    def __iter__(self):
        return self

    def _next_flat(self):
        if self._native is not None:
            element = self._native.next()
            if element is None:
                raise StopIteration
            return element
        if self._flat is None:
            raise StopIteration
        return next(self._flat)

    def __next__(self):
        flat = self._next_flat()
        if self._single:
            return flat[0]
        return structure.pack(self._spec, flat)

    def get_next(self):
        try:
            return self.__next__()
        except StopIteration:
            raise errors.OutOfRangeError(None, None, "End of sequence") from None

    def get_next_as_optional(self):
        try:
            return _Optional(self.__next__(), self._spec)
        except StopIteration:
            return _Optional(None, self._spec)

    def close(self):
        if self._native is not None:
            self._native.close()
        elif self._flat is not None:
            close = getattr(self._flat, "close", None)
            if close is not None:
                close()
            self._flat = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass


class NumpyIterator:
    """What ``Dataset.as_numpy_iterator()`` returns (``tf.data.NumpyIterator``): the dataset's elements with
    each tensor as a NumPy value (a string as bytes)."""

    def __init__(self, dataset):
        self._iterator = OwnedIterator(dataset)

    def __iter__(self):
        return self

    def __next__(self):
        def to_numpy(t):
            value = t.numpy() if hasattr(t, "numpy") else t
            return value
        return structure.map_structure(to_numpy, next(self._iterator))

    def next(self):
        return self.__next__()

    def __repr__(self):
        return f"NumpyIterator(iterator={self._iterator!r})"


class IteratorSpec:
    """``tf.data.IteratorSpec``: the type of an iterator over elements of ``element_spec``."""

    def __init__(self, element_spec):
        self._element_spec = element_spec

    @property
    def value_type(self):
        return OwnedIterator

    def __eq__(self, other):
        return isinstance(other, IteratorSpec) and self._element_spec == other._element_spec

    def __hash__(self):
        return hash(repr(self._element_spec))

    def __repr__(self):
        return f"IteratorSpec(({self._element_spec!r},))"


class _Optional:
    """tf.experimental.Optional as ``get_next_as_optional`` returns it, eagerly."""

    def __init__(self, value, spec):
        self._value = value
        self.element_spec = spec

    def has_value(self):
        from ember.framework.tensor import constant
        return constant(self._value is not None)

    def get_value(self):
        if self._value is None:
            raise errors.InvalidArgumentError(None, None, "Optional.get_value(): the optional has no value")
        return self._value


# Iterators whose C++ threads are still running: closed at interpreter exit, before the threads could wait
# for a GIL that is going away.
_live = weakref.WeakSet()


def _close_all():
    from ember import _C
    for it in list(_live):
        try:
            it.close()
        except Exception:  # noqa: BLE001
            pass
    _C.data_close_all()


import atexit  # noqa: E402

atexit.register(_close_all)
