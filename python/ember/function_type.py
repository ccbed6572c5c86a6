"""What TensorFlow's function guide shows about a traced function: its parameters with their types
(``TensorSpec(...)`` for tensors, ``Literal[v]`` for Python values), its output type and its captures, as
``Function.pretty_printed_concrete_signatures()``, ``ConcreteFunction.pretty_printed_signature()``,
``structured_input_signature``, ``function_type`` and ``function_spec`` print them."""

import inspect

from ember.framework.tensor_spec import TensorSpec


class _Type:
    """An annotation whose repr is TensorFlow's spelling of a type (inspect.Signature prints reprs)."""

    __slots__ = ("text",)

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return self.text


def type_text(value):
    """TensorFlow's spelling of an argument's or output's type."""
    if isinstance(value, TensorSpec) or hasattr(value, "_component_specs"):  # composite specs too
        return repr(value)
    if getattr(value, "_ember_composite", False):  # a RaggedTensor/SparseTensor result: its spec
        return repr(value._type_spec)
    if hasattr(value, "dtype") and hasattr(value, "shape") and not isinstance(value, type):
        return repr(TensorSpec(value.shape, value.dtype, None))  # a tensor or variable
    if isinstance(value, dict):
        return "Dict[" + ", ".join(f"[{k!r}, {type_text(v)}]" for k, v in value.items()) + "]"
    if isinstance(value, list):
        return "List[" + ", ".join(type_text(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "Tuple[" + ", ".join(type_text(v) for v in value) + "]"
    return f"Literal[{value!r}]"


class Parameter:
    """One bound parameter of a trace: its name, inspect kind and the structure of its value with
    TensorSpecs in place of tensors (``value``: named as the user named them; ``named``: every spec named)."""

    __slots__ = ("name", "kind", "value", "named")

    def __init__(self, name, kind, value, named):
        self.name = name
        self.kind = kind
        self.value = value
        self.named = named


def signature_of(parameters, outputs):
    """An inspect.Signature annotated with the types (TensorFlow's FunctionType prints as this)."""
    params = [inspect.Parameter(p.name if p.name.isidentifier() else f"arg{i}", p.kind,
                                annotation=_Type(type_text(p.value)))
              for i, p in enumerate(parameters)]
    try:
        return inspect.Signature(params, return_annotation=_Type(type_text(outputs)))
    except ValueError:  # parameters out of inspect's order (a signature-less callable): list them in order
        params = [p.replace(kind=inspect.Parameter.POSITIONAL_OR_KEYWORD) for p in params]
        return inspect.Signature(params, return_annotation=_Type(type_text(outputs)))


def pretty_text(parameters, outputs, captures):
    lines = ["Input Parameters:"]
    lines += [f"  {p.name} ({p.kind.name}): {type_text(p.value)}" for p in parameters]
    lines += ["Output Type:", f"  {type_text(outputs)}", "Captures:"]
    lines += [f"  {c}" for c in captures] if captures else ["  None"]
    return "\n".join(lines)


class FunctionSpec:
    """``Function.function_spec``: the Python function's argument spec and the input signature."""

    def __init__(self, python_function, input_signature):
        try:
            self.fullargspec = inspect.getfullargspec(python_function)
        except TypeError:
            self.fullargspec = None
        self.input_signature = None if input_signature is None else tuple(input_signature)

    @property
    def arg_names(self):
        return [] if self.fullargspec is None else list(self.fullargspec.args)

    def __repr__(self):
        return f"FunctionSpec(fullargspec={self.fullargspec}, input_signature={self.input_signature})"
