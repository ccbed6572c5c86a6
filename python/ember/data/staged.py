"""Datasets inside ember.function (docs/data.md, "Iterating inside a function").

Note [Datasets inside functions]
A traced function cannot hold a Python iterator, so iterating a dataset there is staged as three stateful
ops (src/ember/ops/dataset.cc): ``DatasetIteratorCreate(dataset_id)`` makes a fresh eager iterator each
time the function runs, ``DatasetIteratorNext(handle)`` gives ``(has_value, components...)`` and
``DatasetIteratorDelete(handle)`` drops it. Their kernels call back into this module, which keeps the
datasets a trace used (by number, for the life of the process: the graph may run at any later time) and
the live iterators (by handle). A ``for x in ds`` loop (AutoGraph, operators.for_stmt) becomes

    h = create(id); has, x = next(h)
    while has: body(x); has, x = next(h)
    delete(h)

with ``x``'s components as loop variables whose shapes are the element spec's (so a batch of unknown size
loops). ``ds.reduce`` is the same loop with the state as loop variables; ``iter(ds)`` and ``next(it)``
inside a function stage one create and one ``next`` whose end is OutOfRangeError, as TensorFlow's.
Automatic control dependencies keep the three ops in program order.
"""

import itertools
import threading

from ember import _C, errors
from ember.data import structure
from ember.framework.tensor import Tensor, constant
from ember.dtypes import int64

_lock = threading.Lock()
_datasets = {}  # id -> Dataset used by a trace
_dataset_ids = {}  # id(Dataset) -> id
_iterators = {}  # handle -> (OwnedIterator, flat specs)
_next_handle = itertools.count(1)
_next_dataset = itertools.count(1)


def _register(dataset):
    with _lock:
        key = _dataset_ids.get(id(dataset))
        if key is not None and _datasets.get(key) is dataset:
            return key
        key = next(_next_dataset)
        _datasets[key] = dataset
        _dataset_ids[id(dataset)] = key
        return key


def _create(key):
    from ember.data.iterator_ops import OwnedIterator
    dataset = _datasets.get(key)
    if dataset is None:
        raise errors.NotFoundError(None, None, f"DatasetIteratorCreate: no dataset number {key}")
    handle = next(_next_handle)
    _iterators[handle] = OwnedIterator(dataset)
    return handle


def _next(handle):
    it = _iterators.get(handle)
    if it is None:
        raise errors.NotFoundError(None, None, f"DatasetIteratorNext: no iterator number {handle}")
    try:
        return tuple(it._next_flat())
    except StopIteration:
        return None


def _release(handle):
    it = _iterators.pop(handle, None)
    if it is not None:
        it.close()


_C.set_dataset_callbacks(_create, _next, _release)


def _encode_specs(specs):
    types, shapes = [], []
    for s in specs:
        types.append(s.dtype._enum)
        if s.shape.rank is None:
            shapes.append(-1)
        else:
            shapes.append(s.shape.rank)
            shapes.extend(-1 if d is None else d for d in s.shape.as_list())
    return types, shapes


def _create_op(dataset):
    return _C.op("DatasetIteratorCreate")(constant(_register(dataset), dtype=int64))


def _next_op(handle, specs, end_is_error=False):
    types, shapes = _encode_specs(specs)
    out = _C.op("DatasetIteratorNext")(handle, types, shapes, end_is_error)
    out = tuple(out) if isinstance(out, (tuple, list)) else (out,)
    return out[0], out[1:]


def _delete_op(handle):
    _C.op("DatasetIteratorDelete")(handle)


class StagedIterator:
    """``iter(ds)`` while tracing: ``next(it)`` stages one DatasetIteratorNext whose end is
    OutOfRangeError when the function runs. The iterator is made when the function runs, where
    ``iter(ds)`` was traced, and lives until its handle is no longer used (the process ends)."""

    _MAX_NEXT = 1000  # an unconverted Python ``for`` over a dataset would trace next() for ever

    def __init__(self, dataset):
        from ember.data.readers import refuse_strings

        refuse_strings(dataset.element_spec, "iter(dataset) inside ember.function")
        self._dataset = dataset
        self._spec = dataset.element_spec
        self._specs = structure.flatten(self._spec)
        self._handle = _create_op(dataset)
        self._calls = 0

    @property
    def element_spec(self):
        return self._spec

    def __iter__(self):
        return self

    def __next__(self):
        self._calls += 1
        if self._calls > self._MAX_NEXT:
            raise NotImplementedError(
                "a Python loop over a dataset inside ember.function was not converted (autograph=False?): "
                "it would trace next() for ever. Let AutoGraph stage the loop, or use Dataset.reduce")
        _, components = _next_op(self._handle, self._specs, end_is_error=True)
        return structure.pack(self._spec, components)

    def get_next(self):
        return self.__next__()


def _shape_invariants(specs):
    return tuple(s.shape for s in specs)


def staged_for(dataset, extra_test, body, get_state, set_state, symbol_names, opts):
    """AutoGraph's ``for x in dataset`` inside a trace (Note [Datasets inside functions])."""
    from ember.autograph import operators
    from ember.data.readers import refuse_strings

    refuse_strings(dataset.element_spec, "a loop over a dataset inside ember.function")
    spec = dataset.element_spec
    specs = structure.flatten(spec)
    handle = _create_op(dataset)
    has0, comps0 = _next_op(handle, specs)
    carried = [has0, tuple(comps0)]

    def test():
        more = carried[0]
        if extra_test is None:
            return more
        keep_going = extra_test()
        from ember.ops import math_ops
        if isinstance(keep_going, Tensor):
            return math_ops.logical_and(more, keep_going)
        return more if keep_going else math_ops.logical_and(more, False)

    def loop_body():
        body(structure.pack(spec, carried[1]))
        has, comps = _next_op(handle, specs)
        carried[0], carried[1] = has, tuple(comps)

    def get_carried():
        return (carried[0],) + tuple(carried[1]) + tuple(get_state())

    def set_carried(values):
        carried[0] = values[0]
        carried[1] = tuple(values[1:1 + len(specs)])
        set_state(tuple(values[1 + len(specs):]))

    opts = dict(opts or {})
    invariants = list(opts.get("shape_invariants", ()) or ())
    # The element's components may change shape from one element to the next (a partial batch): loop over
    # them with the element spec's shapes.
    invariants += [(c, s.shape) for c, s in zip(carried[1], specs)]
    opts["shape_invariants"] = invariants
    names = ("<has element>",) + tuple(f"<element {i}>" for i in range(len(specs))) + tuple(symbol_names)
    operators._staged_while(test, loop_body, get_carried, set_carried, names, opts, operators._location())
    _delete_op(handle)


def reduce(dataset, initial_state, reduce_func):
    """Dataset.reduce: eagerly a Python loop over the traced reduce function; inside a trace, a staged loop
    over the dataset's iterator."""
    from ember.data.functions import TracedFunction

    what = "Dataset.reduce()"
    from ember.data.readers import refuse_strings
    refuse_strings(dataset.element_spec, what)
    state = structure.normalize(initial_state, what)
    state_spec = structure.specs_of(state)
    fn = TracedFunction(reduce_func, dataset.element_spec, what, extra_spec=state_spec)
    if not structure.same_structure(fn.output_structure, state):
        raise TypeError(f"{what}: The element types for the new state must match the initial state. Expected "
                        f"{state_spec}; got {fn.output_spec}.")
    for a, b in zip(structure.flatten(state_spec), structure.flatten(fn.output_spec)):
        if a.dtype != b.dtype:
            raise TypeError(f"{what}: The element types for the new state must match the initial state. "
                            f"Expected {state_spec}; got {fn.output_spec}.")
    if not _C.in_trace():
        flat_state = structure.flatten(state)
        for element in dataset._flat_iter():
            flat_state = fn(list(flat_state) + list(element))
        return structure.pack(state_spec, flat_state)

    from ember.ops import control_flow_ops
    specs = structure.flatten(dataset.element_spec)
    handle = _create_op(dataset)
    has0, comps0 = _next_op(handle, specs)
    flat_state = structure.flatten(state)
    n_state = len(flat_state)
    reducer = fn.concrete

    def cond(has, *rest):
        return has

    def body(has, *rest):
        new_state = reducer._call_flat(list(rest[:n_state]) + list(rest[n_state:]))
        new_flat = list(new_state) if isinstance(new_state, (list, tuple)) else [new_state]
        has2, comps2 = _next_op(handle, specs)
        return (has2,) + tuple(new_flat) + tuple(comps2)

    loop_vars = (has0,) + tuple(flat_state) + tuple(comps0)
    invariants = ((has0.shape,) + tuple(s.shape for s in structure.flatten(fn.output_spec))
                  + tuple(s.shape for s in specs))
    final = control_flow_ops.while_loop(cond, body, loop_vars, shape_invariants=invariants)
    _delete_op(handle)
    return structure.pack(state_spec, list(final[1:1 + n_state]))
