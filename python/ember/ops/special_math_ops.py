"""``einsum``, ``clip_by_norm``, ``clip_by_global_norm``, ``linalg.global_norm``, ``math.polyval`` and
``math.cumulative_logsumexp`` with TensorFlow's names and semantics.

Note [Einsum lowering]: an equation becomes the ops the rest of ember already runs fast. Each operand first
loses its repeated labels (a diagonal, taken by a strided slice of its flattened axes) and the labels no other
operand or the output has (summed). Two operands then contract as one batched MatMul (oneDNN's kernel): the
labels both have and the output keeps are the batch, the labels both have and the output drops are the
contraction, the others are the free rows and columns; transposes and reshapes put each operand in that
[batch, rows, contraction] order and the result in the output's order. More operands contract left to right.
"""

import string

import numpy as np

from ember import _C, dtypes
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.ops.array_ops import _tensor

_Reshape = _C.op("Reshape")
_Transpose = _C.op("Transpose")
_Shape = _C.op("Shape")
_Sum = _C.op("Sum")
_MatMul = _C.op("MatMul")
_BroadcastTo = _C.op("BroadcastTo")
_StridedSlice = _C.op("StridedSlice")
_Pack = _C.op("Pack")
_Sqrt = _C.op("Sqrt")
_Maximum = _C.op("Maximum")
_Minimum = _C.op("Minimum")
_SelectV2 = _C.op("SelectV2")
_Greater = _C.op("Greater")
_Cast = _C.op("Cast")
_L2Loss = _C.op("L2Loss")
_AddN = _C.op("AddN")
_CumulativeLogsumexp = _C.op("CumulativeLogsumexp")


def _dims(x):
    dims = x.shape.as_list()
    if None not in dims:
        return dims
    shape = _Shape(x, dtypes.int32)
    return [d if d is not None else shape[i] for i, d in enumerate(dims)]


def _shape_vector(values):
    if all(isinstance(v, int) for v in values):
        return list(values)
    items = [v if isinstance(v, Tensor) else convert_to_tensor(v, dtype=dtypes.int32) for v in values]
    return _Pack(items, 0)


def _product(values):
    out = 1
    for v in values:
        out = v * out if isinstance(v, Tensor) else out * v
    return out


# ---- einsum -----------------------------------------------------------------------------------------


def _parse(equation, operands):
    equation = equation.replace(" ", "")
    if "->" in equation:
        inputs, output = equation.split("->")
        implicit = False
    else:
        inputs, output, implicit = equation, None, True
    terms = inputs.split(",")
    if len(terms) != len(operands):
        raise ValueError(f"einsum: the equation {equation!r} names {len(terms)} operands, got {len(operands)}")
    used = set(equation) - set(".,->")
    for ch in used:
        if not ch.isalpha():
            raise ValueError(f"einsum: invalid label {ch!r} in {equation!r} (labels are letters)")
    spare = iter(c for c in string.ascii_letters[::-1] if c not in used)
    # The ellipsis stands for the same number of labels in every term, right-aligned (broadcasting).
    widths = []
    for term, x in zip(terms, operands):
        if x.shape.rank is None:
            raise ValueError("einsum: the ranks of the operands must be known")
        if term.count("...") > 1:
            raise ValueError(f"einsum: more than one ellipsis in {term!r}")
        explicit = len(term.replace("...", ""))
        width = x.shape.rank - explicit if "..." in term else 0
        if width < 0 or ("..." not in term and explicit != x.shape.rank):
            raise ValueError(f"einsum: the term {term!r} does not match an operand of rank {x.shape.rank}")
        widths.append(width)
    width = max(widths, default=0)
    ellipsis = "".join(next(spare) for _ in range(width))
    expanded = []
    for term, w in zip(terms, widths):
        expanded.append(term.replace("...", ellipsis[width - w:]))
    if implicit:
        counts = {}
        for term in terms:
            for ch in term.replace("...", ""):
                counts[ch] = counts.get(ch, 0) + 1
        output = ellipsis + "".join(sorted(ch for ch, n in counts.items() if n == 1))
    else:
        if output.count("...") > 1:
            raise ValueError(f"einsum: more than one ellipsis in the output {output!r}")
        output = output.replace("...", ellipsis)
        for ch in output:
            if not any(ch in t for t in expanded):
                raise ValueError(f"einsum: the output label {ch!r} appears in no input of {equation!r}")
        if len(set(output)) != len(output):
            raise ValueError(f"einsum: the output {output!r} repeats a label")
    return expanded, output


def _diagonal(x, labels):
    """x with each repeated label reduced to its diagonal: the label's axes moved last and flattened, then
    every (n + 1)-th element."""
    while True:
        repeated = next((ch for ch in labels if labels.count(ch) > 1), None)
        if repeated is None:
            return x, labels
        axes = [i for i, ch in enumerate(labels) if ch == repeated][:2]
        rest = [i for i in range(len(labels)) if i not in axes]
        x = _Transpose(x, rest + axes)
        dims = _dims(x)
        n = dims[-1]
        if not isinstance(n, int):
            raise ValueError(f"einsum: the dimension of the repeated label {repeated!r} must be known")
        if dims[-2] != n:
            raise ValueError(f"einsum: the axes of label {repeated!r} have different sizes {dims[-2]} and {n}")
        flat = _Reshape(x, _shape_vector(dims[:-2] + [n * n]))
        rank = len(dims) - 1
        full = (1 << (rank - 1)) - 1
        x = _StridedSlice(flat, [0] * rank, [0] * (rank - 1) + [n * n], [1] * (rank - 1) + [n + 1], full, full, 0,
                          0, 0)
        labels = "".join(labels[i] for i in rest) + repeated


def _sum_out(x, labels, keep):
    axes = [i for i, ch in enumerate(labels) if ch not in keep]
    if not axes:
        return x, labels
    return _Sum(x, axes, False), "".join(ch for ch in labels if ch in keep)


def _permute(x, labels, order):
    perm = [labels.index(ch) for ch in order]
    return (x if perm == list(range(len(perm))) else _Transpose(x, perm)), order


def _contract(a, la, b, lb, keep):
    """a (labels la) times b (labels lb), keeping the labels in `keep`: one batched MatMul."""
    a, la = _sum_out(a, la, set(lb) | keep)
    b, lb = _sum_out(b, lb, set(la) | keep)
    batch = [ch for ch in la if ch in lb and ch in keep]
    inner = [ch for ch in la if ch in lb and ch not in keep]
    rows = [ch for ch in la if ch not in lb]
    cols = [ch for ch in lb if ch not in la]
    a, la = _permute(a, la, "".join(batch + rows + inner))
    b, lb = _permute(b, lb, "".join(batch + inner + cols))
    da, db = _dims(a), _dims(b)
    size = dict(zip(la, da))
    for ch, d in zip(lb, db):
        size.setdefault(ch, d)
    # Batch labels of size 1 on one side broadcast (ellipsis broadcasting).
    batch_dims = []
    for k, ch in enumerate(batch):
        x, y = da[k], db[k]
        if isinstance(x, int) and isinstance(y, int) and x != y and 1 not in (x, y):
            raise ValueError(f"einsum: label {ch!r} has sizes {x} and {y}")
        if isinstance(x, int) and isinstance(y, int):
            batch_dims.append(y if x == 1 else x)
        else:  # unknown while tracing: a known size other than 1 wins, else the first operand's
            batch_dims.append(x if not isinstance(x, int) or x != 1 else y)

    def differs(dims):
        return any(p is not q for p, q in zip(batch_dims, dims))

    if differs(da):
        a = _BroadcastTo(a, _shape_vector(batch_dims + da[len(batch):]))
    if differs(db):
        b = _BroadcastTo(b, _shape_vector(batch_dims + db[len(batch):]))
    nb, nr, nc = len(batch), len(rows), len(cols)
    row_dims, inner_dims, col_dims = da[nb:nb + nr], da[nb + nr:], db[nb + len(inner):]
    a3 = _Reshape(a, _shape_vector(batch_dims + [_product(row_dims), _product(inner_dims)]))
    b3 = _Reshape(b, _shape_vector(batch_dims + [_product(inner_dims), _product(col_dims)]))
    out = _MatMul(a3, b3, False, False)
    out = _Reshape(out, _shape_vector(batch_dims + row_dims + col_dims))
    return out, "".join(batch + rows + cols)


def einsum(equation, *inputs, **kwargs):
    """The tensor contraction an Einstein-summation equation names ("ij,jk->ik", "...ij,...jk", "ii->i",
    "bhqd,bhkd->bhqk"), lowered to batched MatMuls, transposes, reshapes and sums (Note [Einsum lowering])."""
    kwargs.pop("name", None)
    kwargs.pop("optimize", None)
    if kwargs:
        raise TypeError(f"einsum: unexpected keyword arguments {sorted(kwargs)}")
    if not inputs:
        raise ValueError("einsum: at least one operand is needed")
    operands = [_tensor(x) for x in inputs]
    dtype = operands[0].dtype
    for x in operands[1:]:
        if x.dtype != dtype:
            raise TypeError(f"einsum: operands must have one dtype, got {dtype.name} and {x.dtype.name}")
    terms, output = _parse(equation, operands)
    x, labels = _diagonal(operands[0], terms[0])
    for k in range(1, len(operands)):
        y, ly = _diagonal(operands[k], terms[k])
        keep = set(output) | {ch for t in terms[k + 1:] for ch in t}
        x, labels = _contract(x, labels, y, ly, keep)
    x, labels = _sum_out(x, labels, set(output))
    x, labels = _permute(x, labels, output)
    return x


# ---- norms and clipping --------------------------------------------------------------------------


def clip_by_norm(t, clip_norm, axes=None, name=None):
    """t scaled down so that its L2 norm (over ``axes``, default all) is at most clip_norm."""
    t = _tensor(t)
    clip_norm = clip_norm if isinstance(clip_norm, Tensor) else convert_to_tensor(clip_norm, dtype=t.dtype)
    axes = list(range(t.shape.rank)) if axes is None else ([axes] if isinstance(axes, int) else list(axes))
    l2sum = _Sum(t * t, axes, True)
    positive = _Greater(l2sum, convert_to_tensor(0, dtype=t.dtype))
    # sqrt only where the sum is positive, so the gradient at a zero tensor is finite (as TensorFlow).
    l2norm = _SelectV2(positive, _Sqrt(_SelectV2(positive, l2sum, _C.op("OnesLike")(l2sum))), l2sum)
    return t * clip_norm / _Maximum(l2norm, clip_norm)


def global_norm(t_list, name=None):
    """sqrt(sum of the squares of every element of every tensor in t_list); None entries are skipped."""
    if isinstance(t_list, Tensor) or not hasattr(t_list, "__iter__"):
        raise TypeError("global_norm: t_list should be a sequence of tensors")
    values = [_tensor(t) for t in t_list if t is not None]
    if not values:
        return convert_to_tensor(0.0)
    halves = [_L2Loss(v) for v in values]
    total = halves[0] if len(halves) == 1 else _AddN(halves)
    return _Sqrt(total * convert_to_tensor(2, dtype=total.dtype))


def clip_by_global_norm(t_list, clip_norm, use_norm=None, name=None):
    """(the tensors scaled by clip_norm / max(global_norm, clip_norm), the global norm): all of them by the
    same factor; an infinite or NaN norm makes every value NaN, as TensorFlow."""
    if isinstance(t_list, Tensor) or not hasattr(t_list, "__iter__"):
        raise TypeError("clip_by_global_norm: t_list should be a sequence of tensors")
    t_list = list(t_list)
    use_norm = global_norm(t_list) if use_norm is None else _tensor(use_norm)
    one = convert_to_tensor(1, dtype=use_norm.dtype)
    clip_norm = _Cast(_tensor(clip_norm, use_norm.dtype), use_norm.dtype) \
        if _tensor(clip_norm, use_norm.dtype).dtype != use_norm.dtype else _tensor(clip_norm, use_norm.dtype)
    scale = clip_norm * _Minimum(one / use_norm, one / clip_norm)
    scale = scale + (use_norm - use_norm)  # NaN when the norm is not finite
    clipped = [None if t is None else _tensor(t) * (scale if _tensor(t).dtype == scale.dtype
                                                  else _Cast(scale, _tensor(t).dtype)) for t in t_list]
    return clipped, use_norm


# ---- polyval, cumulative_logsumexp --------------------------------------------------------------


def polyval(coeffs, x, name=None):
    """coeffs[0] * x^(n-1) + ... + coeffs[n-1], by Horner's rule; no coefficients gives zeros."""
    if isinstance(coeffs, Tensor) or not isinstance(coeffs, (list, tuple)):
        raise ValueError(f"polyval: coeffs must be a list of tensors, got {type(coeffs).__name__}")
    x = _tensor(x)
    if not coeffs:
        return _C.op("ZerosLike")(x)
    p = _tensor(coeffs[0], x.dtype)
    for c in coeffs[1:]:
        p = _tensor(c, x.dtype) + p * x
    return p


def cumulative_logsumexp(x, axis=0, exclusive=False, reverse=False, name=None):
    """log(cumsum(exp(x))) along axis, computed stably; ``exclusive`` and ``reverse`` as in cumsum."""
    x = _tensor(x)
    axis = np.asarray(axis.numpy() if isinstance(axis, Tensor) else axis)
    if axis.ndim != 0 or axis.dtype.kind not in "iu":
        raise TypeError(f"CumulativeLogsumexp: axis must be an integer scalar, got {axis!r}")
    axis = int(axis)
    return _CumulativeLogsumexp(x, axis, bool(exclusive), bool(reverse))
