"""``tf.raw_ops``: every op of the registry as a function of keyword arguments, under TensorFlow's argument
names, as TensorFlow's Python ``tf.raw_ops`` exposes them.

Each function is made from the op's one declaration (its inputs, then its attributes, in order) the first
time it is looked up. Where ember's declaration names an argument differently from TensorFlow's raw op, or
takes as an attribute what TensorFlow passes as a tensor, the tables below say so; an argument TensorFlow
needs only to type its outputs (``Tout``, ``num_split``) is accepted and checked against what ember works out.
Variable ops take the variable's handle (``Variable.handle``) as their ``resource``. Ops that name a table
or a function by handle (``LookupTableFindV2``, ``While``, ...) are not offered: ember's tables and functions
have no handle tensors; the error names the API to use instead.
"""
import collections
import inspect

import numpy as np

from ember import _C, dtypes

# TensorFlow's argument name -> ember's, where they differ.
_RENAMED = {
    "AvgPool": {"value": "input"},
    "ComplexAbs": {"x": "input"},
    "Elu": {"features": "x"},
    "Relu": {"features": "x"},
    "Relu6": {"features": "x"},
    "Softplus": {"features": "x"},
    "Polygamma": {"a": "x", "x": "y"},
    "MirrorPadGrad": {"input": "dy"},
    "Squeeze": {"axis": "squeeze_dims"},
    **{f"ResourceScatterNd{k}": {"ref": "resource"} for k in ("Update", "Add", "Sub", "Min", "Max")},
}

# TensorFlow arguments that only type the outputs (ember derives them from the inputs) or are hints.
_OUTPUT_TYPING = {
    "Angle": {"Tout"},
    "Complex": {"Tout"},
    "ComplexAbs": {"Tout"},
    "Imag": {"Tout"},
    "Real": {"Tout"},
    "SplitV": {"num_split"},
    **{f"RFFT{d}": {"Tcomplex"} for d in ("", "2D", "3D")},
    **{f"IRFFT{d}": {"Treal"} for d in ("", "2D", "3D")},
    "MatMul": {"grad_a", "grad_b"},  # hints for TensorFlow's gradient kernels
    "AssignVariableOp": {"validate_shape"},  # ember checks the shape always
    # Locking hints: ember's variable updates always hold the variable's lock.
    **{f"ResourceScatter{k}": {"use_locking"} for k in (
        "NdUpdate", "NdAdd", "NdSub", "NdMin", "NdMax")},
}

# TensorFlow attributes ember takes only at the values it implements (the first is TensorFlow's default).
_RAISING_ON_BAD_INDICES = ("", "DEFAULT", "ERROR")
_ONLY_VALUE = {
    "Cast": {"Truncate": (False,)},
    "Equal": {"incompatible_shape_error": (True,)},
    "NotEqual": {"incompatible_shape_error": (True,)},
    **{n: {"bad_indices_policy": _RAISING_ON_BAD_INDICES} for n in (
        "GatherNd", "ScatterNd", "TensorScatterAdd", "TensorScatterMax", "TensorScatterMin", "TensorScatterSub",
        "TensorScatterUpdate", "ResourceScatterNdUpdate", "ResourceScatterNdAdd", "ResourceScatterNdSub",
        "ResourceScatterNdMin", "ResourceScatterNdMax")},
}

# uint64 inputs (a stateless V2 kernel's key and counter): ember has no uint64, so it takes their bits as
# int64, and so does the raw op.
_UINT64_BITS = {n: {"key", "counter"} for n in (
    "StatelessRandomNormalV2", "StatelessRandomUniformV2", "StatelessRandomUniformIntV2",
    "StatelessRandomUniformFullIntV2", "StatelessTruncatedNormalV2")}

# TensorFlow's names for ops ember declares under another (as the GraphDef reader maps them).
_ALIASES = {"AddV2": "Add"}

# TensorFlow's tensor arguments that ember's declaration takes as attributes (the value must be known).
_TENSOR_AS_ATTR = {
    "RandomUniformInt": {"minval", "maxval"},
}

# Attributes ember's declaration adds to TensorFlow's (their defaults are TensorFlow's behaviour).
_EMBER_ONLY = {
    "LogSoftmax": {"axis"},
    "Softmax": {"axis"},
    "Pad": {"constant_value", "mode"},
}

# Attributes of ember's declaration that TensorFlow derives from the dtypes of a list input.
_DTYPES_FROM_INPUT_LIST = {
    "DecodeCSV": {"OUT_TYPE": "record_defaults"},
    "ParseExampleV2": {"Tdense": "dense_defaults"},
    "ParseSequenceExampleV2": {"Tcontext_dense": "context_dense_defaults"},
}

# Outputs that are lists in TensorFlow's result (ember's op returns their tensors one after another):
# output -> the attribute that counts them.
_LIST_OUTPUTS = {
    "CTCBeamSearchDecoder": {"decoded_indices": "top_paths", "decoded_values": "top_paths",
                             "decoded_shape": "top_paths"},
}

# Attributes of ember's declaration that TensorFlow derives from an input's dtype: attribute -> input.
_DTYPE_FROM_INPUT = {
    "RandomUniformInt": {"dtype": "minval"},
    "StatelessRandomUniformInt": {"dtype": "minval"},
    "StatelessRandomUniformIntV2": {"dtype": "minval"},
    "TensorListPushBack": {"element_dtype": "tensor"},
    "TensorListScatterIntoExistingList": {"element_dtype": "tensor"},
    "TensorListSetItem": {"element_dtype": "item"},
    "UnicodeEncode": {"Tsplits": "input_splits"},
}

# Ops whose TensorFlow form takes a resource handle, a function or a proto: the API that does the same.
_NOT_OFFERED = {
    "RngReadAndSkip": "tf.random.Generator",
    "StatefulRandomBinomial": "tf.random.Generator.binomial",
    "InitializeTableV2": "tf.lookup.StaticHashTable",
    "InitializeTableFromTextFileV2": "tf.lookup.TextFileInitializer",
    "LookupTableExportV2": "the table's export()",
    "LookupTableFindV2": "the table's lookup()",
    "LookupTableImportV2": "the table's import_()",
    "LookupTableInsertV2": "the table's insert()",
    "LookupTableRemoveV2": "the table's remove()",
    "LookupTableSizeV2": "the table's size()",
    "MutableDenseHashTableV2": "tf.lookup.experimental.DenseHashTable",
    "If": "tf.cond",
    "StatelessIf": "tf.cond",
    "Case": "tf.switch_case",
    "StatelessCase": "tf.switch_case",
    "While": "tf.while_loop",
    "StatelessWhile": "tf.while_loop",
    "PartitionedCall": "calling the tf.function",
    "Placeholder": "tf.function's input_signature",
    "Const": "tf.constant",
    "Assert": "tf.debugging.Assert",
    "PrintV2": "tf.print",
    "CollectiveGatherV2": "tf.distribute",
    "CollectiveReduceV2": "tf.distribute",
    "EagerPyFunc": "tf.py_function",
    "PyFunc": "tf.numpy_function",
    "PyFuncStateless": "tf.numpy_function(stateful=False)",
}


def _ensure_shape(*, input, shape, name=None):  # noqa: A002 - TensorFlow's argument name
    from ember import debugging  # noqa: PLC0415 - raw_ops loads before debugging does

    return debugging.ensure_shape(input, shape)


# ---- Variable ops on a handle (Variable.handle) that are no registry op of their own, or whose
# declaration carries what the handle knows (ReadVariableOp's dtype and shape): the variable's methods.


def _variable_of(op_name, resource):
    from ember import variables  # noqa: PLC0415 - raw_ops loads before variables do

    if isinstance(resource, variables.ResourceHandle):
        return resource._variable
    raise TypeError(f"tf.raw_ops.{op_name}: resource must be a variable's handle (Variable.handle), got "
                    f"{type(resource).__name__} {resource!r}")


def _read_variable_op(*, resource, dtype, name=None):
    variable = _variable_of("ReadVariableOp", resource)
    if dtypes.as_dtype(dtype) != variable.dtype:
        from ember import errors  # noqa: PLC0415

        raise errors.InvalidArgumentError(
            None, None, f"ReadVariableOp: variable '{variable.name}' has dtype {variable.dtype.name}, but dtype "
            f"{dtypes.as_dtype(dtype).name} was requested")
    return variable.read_value()


def _resource_gather(*, resource, indices, dtype, batch_dims=0, validate_indices=True, name=None):
    from ember.ops import array_ops  # noqa: PLC0415

    return array_ops.gather(_read_variable_op(resource=resource, dtype=dtype), indices, batch_dims=batch_dims)


def _resource_gather_nd(*, resource, indices, dtype, name=None):
    from ember.ops import indexing_ops  # noqa: PLC0415

    return indexing_ops.gather_nd(_read_variable_op(resource=resource, dtype=dtype), indices)


def _var_is_initialized_op(*, resource, name=None):
    from ember.framework.tensor import constant  # noqa: PLC0415

    _variable_of("VarIsInitializedOp", resource)
    return constant(True)  # ember's variables hold a value from their creation on


def _variable_shape(*, input, out_type=dtypes.int32, name=None):  # noqa: A002 - TensorFlow's argument name
    from ember.ops import array_ops  # noqa: PLC0415

    return array_ops.shape(_variable_of("VariableShape", input).read_value(), out_type=out_type)


# Ops whose TensorFlow attribute ember's declaration spells as two (a shape and whether its rank is
# known): the Python API converts, as it does for tf.ensure_shape. And the variable ops above.
_SERVED_BY_API = {
    "EnsureShape": _ensure_shape,
    "ReadVariableOp": _read_variable_op,
    "ResourceGather": _resource_gather,
    "ResourceGatherNd": _resource_gather_nd,
    "VarIsInitializedOp": _var_is_initialized_op,
    "VariableShape": _variable_shape,
}


def _names():
    return sorted({n for n in _C.op_names() if not n.startswith("_") and n not in _NOT_OFFERED} |
                  set(_ALIASES) | set(_SERVED_BY_API))


def _as_attr_value(op_name, arg, value):
    """A tensor (or array) argument TensorFlow takes as a tensor and ember as an attribute."""
    try:
        array = np.asarray(value.numpy() if hasattr(value, "numpy") else value)
    except Exception as e:  # a symbolic tensor while tracing
        raise TypeError(f"tf.raw_ops.{op_name}: ember needs the value of '{arg}' when the op is made "
                        f"(got {value!r})") from e
    return array.item() if array.ndim == 0 else array.tolist()


def _dtype_of(value):
    from ember.framework.tensor import convert_to_tensor  # noqa: PLC0415 - raw_ops loads before tensors do

    return convert_to_tensor(value).dtype  # Python ints are int32, as TensorFlow converts them


def _make(op_name):
    info = _C.op_info(op_name)
    call = _C.op(op_name)
    ours_of_theirs = _RENAMED.get(op_name, {})
    theirs_of_ours = {v: k for k, v in ours_of_theirs.items()}
    inputs, attrs = info["inputs"], info["attrs"]
    defaults = info["attr_defaults"]  # a dtype's default is its enum number
    attr_types = dict(zip(attrs, info["attr_types"]))
    typing_only = _OUTPUT_TYPING.get(op_name, set())
    tensor_attrs = _TENSOR_AS_ATTR.get(op_name, set())
    dtype_from = _DTYPE_FROM_INPUT.get(op_name, {})
    dtypes_from = _DTYPES_FROM_INPUT_LIST.get(op_name, {})
    hidden = set(dtype_from) | set(dtypes_from) | _EMBER_ONLY.get(op_name, set())
    public = [theirs_of_ours.get(a, a) for a in inputs + attrs if a not in hidden]
    only_value = _ONLY_VALUE.get(op_name, {})
    uint64_bits = _UINT64_BITS.get(op_name, set())
    keys = public + sorted(typing_only) + sorted(only_value) + ["name"]
    outputs = info["outputs"]
    resource_op = op_name.startswith("Resource") or op_name.endswith("VariableOp")
    result_type = collections.namedtuple(op_name, outputs) if len(outputs) > 1 else None
    list_outputs = _LIST_OUTPUTS.get(op_name, {})

    def raw_op(*args, **kwargs):
        if args:
            raise TypeError(f"{op_name} only takes keyword args (possible keys: {keys}). "
                            "Please pass these args as kwargs instead.")
        unknown = [k for k in kwargs if k not in keys]
        if unknown:
            raise TypeError(f"{op_name} got an unexpected keyword argument '{unknown[0]}' "
                            f"(possible keys: {keys})")
        for attr, values in only_value.items():
            if attr in kwargs and kwargs[attr] not in values:
                raise NotImplementedError(f"{op_name}: ember implements {attr} in {values!r} only, "
                                          f"got {kwargs[attr]!r}")
        given = {ours_of_theirs.get(k, k): v for k, v in kwargs.items()
                 if k != "name" and k not in typing_only and k not in only_value}
        for arg in uint64_bits & set(given):
            if getattr(given[arg], "dtype", None) == np.uint64:
                given[arg] = np.asarray(given[arg]).view(np.int64)
        positional = []
        for arg in inputs:
            if arg not in given:
                raise TypeError(f"{op_name} missing required argument '{theirs_of_ours.get(arg, arg)}'")
            positional.append(given[arg])
        for attr in attrs:
            if attr in given:
                value = given[attr]
                if attr == "resource" and resource_op:  # a variable's handle names it by id
                    value = _variable_of(op_name, value)._id
                positional.append(_as_attr_value(op_name, attr, value) if attr in tensor_attrs else value)
            elif attr in dtype_from:
                positional.append(_dtype_of(given.get(dtype_from[attr])))
            elif attr in dtypes_from:
                positional.append([_dtype_of(x) for x in given.get(dtypes_from[attr], [])])
            elif attr in defaults:
                value = defaults[attr]
                if attr_types[attr] == "dtype":
                    value = dtypes.ALL[value]
                elif attr_types[attr] == "dtypes":
                    value = [dtypes.ALL[v] for v in value]
                positional.append(value)
            else:
                raise TypeError(f"{op_name} missing required argument '{theirs_of_ours.get(attr, attr)}'")
        result = call(*positional)
        if list_outputs and isinstance(result, tuple):
            values = dict(zip(inputs + attrs, positional))
            flat, grouped = iter(result), []
            for output in outputs:
                count = list_outputs.get(output)
                grouped.append(next(flat) if count is None else [next(flat) for _ in range(int(values[count]))])
            result = tuple(grouped)
        if result_type is not None and isinstance(result, tuple) and len(result) == len(outputs):
            return result_type(*result)
        return result

    raw_op.__name__ = raw_op.__qualname__ = op_name
    raw_op.__doc__ = info["doc"]
    required = {theirs_of_ours.get(a, a) for a in inputs + [a for a in attrs if a not in defaults and a not in hidden]}
    raw_op.__signature__ = inspect.Signature(
        [inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY,
                           default=inspect.Parameter.empty if k in required else None) for k in keys])
    return raw_op


def __getattr__(name):
    if name in _NOT_OFFERED:
        raise NotImplementedError(f"tf.raw_ops.{name} takes a handle ember's objects do not have; "
                                  f"use {_NOT_OFFERED[name]} instead")
    if name.startswith("_") or (name not in _ALIASES and name not in _SERVED_BY_API and
                                name not in _C.op_names()):
        raise AttributeError(f"module 'ember.raw_ops' has no attribute '{name}'")
    fn = _SERVED_BY_API[name] if name in _SERVED_BY_API else _make(_ALIASES.get(name, name))
    globals()[name] = fn
    return fn


def __dir__():
    return sorted(set(_names()) | set(globals()))
