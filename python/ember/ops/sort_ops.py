"""Sorting and selection with TensorFlow's names: ``sort``, ``argsort``, ``math.top_k``, ``math.in_top_k``,
``math.approx_max_k``, ``math.approx_min_k``.

As in TensorFlow, ``sort`` and ``argsort`` are ``TopKV2`` with k = the axis' length (src/ember/ops/sort.cc):
the largest first, equal values by lower index (so every sort here is stable); ascending order sorts the
values mirrored (-x, or ~x for integers, which has no overflow). NaN ranks above +inf (Note [Sort order] in
src/ember/kernels/sort.h): first in a descending sort, last in an ascending one.
"""

import collections

from ember import _C, dtypes, errors
from ember.framework.tensor import convert_to_tensor
from ember.ops.array_ops import _shape_operand, _tensor, _to_int

_TopKV2 = _C.op("TopKV2")
_InTopKV2 = _C.op("InTopKV2")
_ApproxTopK = _C.op("ApproxTopK")
_Transpose = _C.op("Transpose")
_Shape = _C.op("Shape")
_Neg = _C.op("Neg")
_Sub = _C.op("Sub")

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])
ApproxTopK = collections.namedtuple("ApproxTopK", ["values", "indices"])


def top_k(input, k=1, sorted=True, index_type=dtypes.int32, name=None):  # noqa: A002 - TF's names
    """The k largest entries of the last axis, largest first (equal values: lower index first), and their
    indices."""
    x = _tensor(input)
    k = _shape_operand(k, "TopKV2", "k", errors.InvalidArgumentError, scalar=True)
    return TopKV2(*_TopKV2(x, k, bool(sorted), dtypes.as_dtype(index_type)))


def _approx_top_k(operand, k, reduction_dimension, recall_target, is_max_k, reduction_input_size_override,
                  aggregate_to_topk):
    return ApproxTopK(*_ApproxTopK(_tensor(operand), _to_int(k, "ApproxTopK", "k"),
                                   _to_int(reduction_dimension, "ApproxTopK", "reduction_dimension"),
                                   float(recall_target), is_max_k,
                                   _to_int(reduction_input_size_override, "ApproxTopK",
                                           "reduction_input_size_override"), bool(aggregate_to_topk)))


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """The k largest entries along ``reduction_dimension``, largest first, and their int32 indices. Exact, as
    TensorFlow's is on a CPU (Note [ApproxTopK on a CPU] in src/ember/ops/sort.cc): the approximation
    arguments are accepted and change nothing."""
    return _approx_top_k(operand, k, reduction_dimension, recall_target, True, reduction_input_size_override,
                         aggregate_to_topk)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95, reduction_input_size_override=-1,
                 aggregate_to_topk=True, name=None):
    """The k smallest entries along ``reduction_dimension``, smallest first (NaN last), and their int32
    indices; exact, as ``approx_max_k``."""
    return _approx_top_k(operand, k, reduction_dimension, recall_target, False, reduction_input_size_override,
                         aggregate_to_topk)


def in_top_k(targets, predictions, k, name=None):
    """Whether each target's prediction is among the k largest of its row (ties count as in, a non-finite
    prediction as out)."""
    k = _shape_operand(k, "InTopKV2", "k", errors.InvalidArgumentError, scalar=True)
    return _InTopKV2(_tensor(predictions), _tensor(targets), k)


def _mirror(x):
    """An order-reversing map: -x for floats, ~x (= -1 - x, or max - x unsigned) for integers."""
    if x.dtype.is_floating:
        return _Neg(x)
    if x.dtype == dtypes.uint8:
        return _Sub(convert_to_tensor(255, dtype=x.dtype), x)
    return _Sub(convert_to_tensor(-1, dtype=x.dtype), x)


def _sort_or_argsort(values, axis, direction, want_indices, op):
    x = _tensor(values)
    if direction not in ("ASCENDING", "DESCENDING"):
        raise ValueError(f"{op}: direction must be 'ASCENDING' or 'DESCENDING', got {direction!r}")
    if not (x.dtype.is_floating or x.dtype.is_integer):
        raise TypeError(f"{op}: values must be numeric, got {x.dtype.name}")
    rank = x.shape.rank
    if rank is None:
        raise ValueError(f"{op}: the rank of values must be known")
    if rank == 0:
        raise ValueError(f"{op}: values must be at least 1-D, got a scalar")
    axis = _to_int(axis, op, "axis")
    if not -rank <= axis < rank:
        raise ValueError(f"{op}: axis {axis} is out of range for a tensor of rank {rank}")
    axis %= rank
    perm = None
    if axis != rank - 1:
        perm = list(range(rank))
        perm[axis], perm[-1] = perm[-1], perm[axis]
        x = _Transpose(x, perm)
    n = x.shape.as_list()[-1]
    k = n if n is not None else _Shape(x, dtypes.int32)[-1]
    ascending = direction == "ASCENDING"
    out_values, out_indices = _TopKV2(_mirror(x) if ascending else x, k, True, dtypes.int32)
    out = out_indices if want_indices else (_mirror(out_values) if ascending else out_values)
    return _Transpose(out, perm) if perm is not None else out


def sort(values, axis=-1, direction="ASCENDING", name=None):
    """values sorted along axis."""
    return _sort_or_argsort(values, axis, direction, False, "sort")


def argsort(values, axis=-1, direction="ASCENDING", stable=False, name=None):
    """The int32 indices that sort values along axis; equal values keep their order (every sort here is
    stable, so ``stable`` changes nothing)."""
    return _sort_or_argsort(values, axis, direction, True, "argsort")
