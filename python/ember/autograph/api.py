"""Conversion of Python functions by AutoGraph: source in, converted function out, cached per code object.

``converted(f)`` is what ``ember.function`` traces (when ``autograph=True``); ``converted_call`` is what
converted code calls instead of each call it makes, and decides whether the callee is converted too:
user code is, ember's own code, the standard library, installed packages and builtins are not (a few
builtins get TensorFlow's tensor-aware versions: ``range``, ``len``, ``abs``, ``int``, ``float``).

The converted function is compiled from the rewritten AST under the original file name with the original
line numbers, runs with the original globals, and shares the original closure cells (the generated code is
wrapped in a factory whose parameters are the free variables, so the compiler treats them as free; the
function is then built from the inner code object and the original cells).
"""

import ast
import dis
import functools
import inspect
import linecache
import os
import sys
import sysconfig
import types
import warnings
import weakref

from ember.autograph import converter, operators

_PACKAGE_DIR = operators._PACKAGE_DIR
_NOT_CONVERTED_FLAGS = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR

_verbosity = int(os.environ.get("AUTOGRAPH_VERBOSITY", "0") or 0)
_log_to_stdout = False


class AutoGraphWarning(UserWarning):
    """A function AutoGraph runs unconverted (its source is not available, or it cannot be converted)."""


class ConversionError(ValueError):
    """``to_graph``/``to_code`` of something AutoGraph cannot convert."""


class _Conversion:
    __slots__ = ("code", "source")

    def __init__(self, code, source):
        self.code, self.source = code, source


_by_code = {}  # code object -> _Conversion, or the reason it cannot be converted (str)
_by_function = weakref.WeakKeyDictionary()  # function -> converted function
_warned = set()


def _library_dirs():
    dirs = set()
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = sysconfig.get_paths().get(key)
        if path:
            dirs.add(os.path.realpath(path) + os.sep)
            dirs.add(os.path.abspath(path) + os.sep)
    for prefix in (sys.prefix, sys.base_prefix, sys.exec_prefix):
        dirs.add(os.path.join(os.path.abspath(prefix), "lib") + os.sep)
    return tuple(sorted(dirs))


_LIBRARY_DIRS = _library_dirs()


def _is_user_code(code):
    filename = code.co_filename
    if filename.startswith(_PACKAGE_DIR) or filename.startswith("<"):
        return filename.startswith("<") and not filename.startswith("<frozen")  # exec'd: user's, no source
    path = os.path.abspath(filename)
    return not path.startswith(_LIBRARY_DIRS)


# ---- the conversion ----------------------------------------------------------------------------------

def _source_tree(f):
    """The parsed ``def`` (or a ``def`` made from the lambda) of ``f``, located in its file."""
    code = f.__code__
    if code.co_name == "<lambda>":
        return _lambda_def(f)
    try:
        lines, start = inspect.getsourcelines(f)
    except (OSError, TypeError):
        raise _Unconvertible("could not get source code") from None
    source = "".join(lines)
    # An indented def (a method, a nested function) parses inside an "if" block rather than dedented:
    # columns stay the file's, and multi-line strings keep their text.
    indented = source[:1] in (" ", "\t")
    try:
        tree = ast.parse("if 1:\n" + source if indented else source)
    except SyntaxError:
        raise _Unconvertible("could not parse the source code") from None
    ast.increment_lineno(tree, start - 2 if indented else start - 1)
    defs = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == code.co_name]
    for node in defs:
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        if code.co_firstlineno in (first, node.lineno):
            _check_matches(code, node)
            return node
    raise _Unconvertible("could not find the function's definition in its source code")


def _check_matches(code, node):
    """The source found must be the code's: a file edited after it was loaded gives other text at the
    recorded lines (converting that would run other code)."""
    names = set(code.co_names) | set(code.co_varnames) | set(code.co_freevars) | set(code.co_cellvars)
    nested = [c for c in code.co_consts if hasattr(c, "co_names")]
    while nested:
        c = nested.pop()
        names |= set(c.co_names) | set(c.co_varnames) | set(c.co_freevars)
        nested.extend(k for k in c.co_consts if hasattr(k, "co_names"))
    if isinstance(node, ast.FunctionDef):
        params = [a.arg for a in node.args.posonlyargs + node.args.args + node.args.kwonlyargs]
        if params != list(code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]):
            raise _Unconvertible("the source code does not match the function (was its file edited after it "
                                 "was loaded?)")
        return
    read = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    if not read <= names:
        raise _Unconvertible("the source code does not match the function (was its file edited after it "
                             "was loaded?)")


def _lambda_def(f):
    """A ``def`` with the lambda's parameters returning its body. The body's text is cut out of the file by
    the positions the code object records for its instructions: several lambdas on a line, or one inside
    a larger expression spanning lines, are told apart exactly (never by a guess at where it ends)."""
    code = f.__code__
    starts, ends = [], []
    for ins in dis.get_instructions(code):
        pos = ins.positions
        if pos is None or pos.lineno is None or pos.col_offset is None or ins.opname == "RESUME" or \
                ins.opname.startswith("RETURN"):
            continue
        starts.append((pos.lineno, pos.col_offset))
        ends.append((pos.end_lineno, pos.end_col_offset))
    lines = linecache.getlines(code.co_filename, f.__globals__)
    if not starts or not lines:
        raise _Unconvertible("could not get source code")
    (l0, c0), (l1, c1) = min(starts), max(ends)
    chunk = [line.encode("utf-8") for line in lines[l0 - 1:l1]]  # positions count UTF-8 bytes
    if not chunk:
        raise _Unconvertible("could not get source code")
    chunk[-1] = chunk[-1][:c1] if l1 > l0 else chunk[-1][:c1]
    chunk[0] = chunk[0][c0:]
    text = b"".join(chunk).decode("utf-8")
    try:
        body = ast.parse("(" + text + "\n)", mode="eval").body
    except SyntaxError:
        raise _Unconvertible("could not parse the lambda's source code") from None
    ast.increment_lineno(body, l0 - 1)
    _check_matches(code, body)
    nargs, nkw = code.co_argcount, code.co_kwonlyargcount
    names = code.co_varnames
    args = ast.arguments(posonlyargs=[ast.arg(arg=n) for n in names[:code.co_posonlyargcount]],
                         args=[ast.arg(arg=n) for n in names[code.co_posonlyargcount:nargs]],
                         vararg=None, kwonlyargs=[ast.arg(arg=n) for n in names[nargs:nargs + nkw]],
                         kw_defaults=[None] * nkw, kwarg=None, defaults=[])
    extra = nargs + nkw
    if code.co_flags & inspect.CO_VARARGS:
        args.vararg = ast.arg(arg=names[extra])
        extra += 1
    if code.co_flags & inspect.CO_VARKEYWORDS:
        args.kwarg = ast.arg(arg=names[extra])
    fdef = ast.FunctionDef(name="ag__lambda", args=args, body=[ast.Return(value=body)], decorator_list=[],
                           returns=None, type_comment=None)
    if "type_params" in ast.FunctionDef._fields:
        fdef.type_params = []
    fdef.lineno, fdef.col_offset = l0, 0
    return ast.fix_missing_locations(ast.copy_location(fdef, body))


class _Unconvertible(Exception):
    pass


def _transform(f):
    code = f.__code__
    if code.co_flags & _NOT_CONVERTED_FLAGS:
        raise _Unconvertible("generators and coroutines are not converted")
    fdef = _source_tree(f)
    fdef.decorator_list = []
    try:
        converter.convert_function(fdef, has_class_cell="__class__" in code.co_freevars)
    except Exception as e:  # noqa: BLE001 - any failure of the rewrite means "run it as it is"
        raise _Unconvertible(f"the conversion failed: {type(e).__name__}: {e}") from e
    source = ast.unparse(fdef)
    params = [ast.arg(arg=name) for name in ("ag__",) + code.co_freevars]
    factory = ast.FunctionDef(
        name="ag__factory",
        args=ast.arguments(posonlyargs=[], args=params, vararg=None, kwonlyargs=[], kw_defaults=[], kwarg=None,
                           defaults=[]),
        body=[fdef, ast.Return(value=ast.Name(fdef.name, ast.Load()))], decorator_list=[], returns=None,
        type_comment=None)
    if fdef.name not in code.co_freevars:
        # The def must not make its own name a local of the factory: a recursive module-level function
        # reads its name as a global, and so must the converted one.
        factory.body.insert(0, ast.Global(names=[fdef.name]))
    if "type_params" in ast.FunctionDef._fields:
        factory.type_params = []
    module = ast.Module(body=[ast.copy_location(factory, fdef)], type_ignores=[])
    ast.fix_missing_locations(module)
    try:
        compiled = compile(module, code.co_filename, "exec", dont_inherit=True)
    except SyntaxError as e:
        raise _Unconvertible(f"the converted code does not compile: {e}") from e
    factory_code = next(c for c in compiled.co_consts if isinstance(c, types.CodeType))
    inner = next(c for c in factory_code.co_consts if isinstance(c, types.CodeType) and c.co_name == fdef.name)
    _register_converted_code(inner)
    if _verbosity >= 3:
        print(f"Converted {f.__qualname__}:\n{source}", file=sys.stdout if _log_to_stdout else sys.stderr)
    return _Conversion(inner, source)


_converted_codes = set()


def _register_converted_code(code):
    """Remembers the code of converted functions and of everything defined in them (nested functions,
    lambdas): converted already, with the function around them."""
    _converted_codes.add(code)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            _register_converted_code(const)


def _conversion(f):
    """The cached conversion of ``f``'s code; raises _Unconvertible with the reason."""
    code = f.__code__
    entry = _by_code.get(code)
    if entry is None:
        try:
            entry = _transform(f)
        except _Unconvertible as e:
            entry = str(e)
        _by_code[code] = entry
    if isinstance(entry, str):
        raise _Unconvertible(entry)
    return entry


def _instantiate(f, entry):
    cells = dict(zip(f.__code__.co_freevars, f.__closure__ or ()))
    closure = tuple(types.CellType(operators) if name == "ag__" else cells[name] for name in entry.code.co_freevars)
    new = types.FunctionType(entry.code, f.__globals__, f.__name__, f.__defaults__, closure)
    new.__kwdefaults__ = dict(f.__kwdefaults__) if f.__kwdefaults__ else None
    new.__dict__.update(f.__dict__)
    new.__qualname__, new.__module__, new.__doc__ = f.__qualname__, f.__module__, f.__doc__
    new.__ag_converted__ = True
    new.__ag_source__ = entry.source
    return new


def _has_control_flow(code):
    """Whether the compiled function branches or loops (what conversion would change)."""
    return any("JUMP" in ins.opname or ins.opname == "FOR_ITER" for ins in dis.get_instructions(code))


def _warn_unconverted(f, reason):
    code = getattr(f, "__code__", None)
    key = code if code is not None else id(f)
    if key in _warned:
        return
    _warned.add(key)
    if code is not None and not _has_control_flow(code):
        # Straight-line code runs the same converted or not: nothing worth a warning (made with exec by a
        # test or a code generator, typically).
        if _verbosity >= 1:
            print(f"AutoGraph runs {f!r} as it is: {reason}", file=sys.stdout if _log_to_stdout else sys.stderr)
        return
    warnings.warn(f"AutoGraph could not transform {f!r} and will run it as-is.\nCause: {reason}\nTo silence this "
                  f"warning, decorate the function with @ember.autograph.experimental.do_not_convert",
                  AutoGraphWarning, stacklevel=3)


def _convert_function(f, user_requested):
    try:
        cached = _by_function.get(f)
    except TypeError:
        cached = None
    if cached is not None:
        return cached
    try:
        new = _instantiate(f, _conversion(f))
    except _Unconvertible as e:
        if user_requested:
            raise ConversionError(f"AutoGraph could not convert {f!r}: {e}") from None
        _warn_unconverted(f, str(e))
        return f
    try:
        _by_function[f] = new
    except TypeError:
        pass
    return new


def converted(f, recursive_only=False, user_requested=False):
    """``f`` with its Python control flow converted; ``f`` itself where there is nothing to convert (not
    Python code, ember's own code, marked ``do_not_convert``, or no source: with a warning).
    ``recursive_only`` (calls from converted code) also leaves libraries' code alone."""
    if getattr(f, "__ag_converted__", False) or getattr(f, "__ag_do_not_convert__", False):
        return f
    if getattr(f, "__code__", None) in _converted_codes:
        return f  # defined by converted code: converted with the function around it
    bound = getattr(f, "_ember_bound_method", None)
    if bound is not None:  # ember.function's per-instance wrapper of a method: convert the method
        return _bound_wrapper(f, *bound)
    if isinstance(f, types.MethodType):
        inner = converted(f.__func__, recursive_only, user_requested)
        return f if inner is f.__func__ else types.MethodType(inner, f.__self__)
    if isinstance(f, functools.partial):
        inner = converted(f.func, recursive_only, user_requested)
        return f if inner is f.func else functools.partial(inner, *f.args, **f.keywords)
    if isinstance(f, types.FunctionType):
        code = f.__code__
        if code.co_filename.startswith(_PACKAGE_DIR) and not user_requested:
            return f
        if code.co_flags & _NOT_CONVERTED_FLAGS and not user_requested:
            return f  # a generator runs as Python while tracing, as in TensorFlow
        if recursive_only and not _is_user_code(code):
            return f
        return _convert_function(f, user_requested)
    if not isinstance(f, type) and callable(f):
        call = getattr(type(f), "__call__", None)
        if isinstance(call, types.FunctionType) and _is_user_code(call.__code__):
            inner = converted(call, recursive_only)
            return f if inner is call else types.MethodType(inner, f)
    return f


def _bound_wrapper(f, python_function, instance_ref):
    try:
        cached = _by_function.get(f)
    except TypeError:
        cached = None
    if cached is not None:
        return cached
    inner = converted(python_function)
    if inner is python_function:
        return f

    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return inner(instance_ref(), *args, **kwargs)

    wrapper.__ag_converted__ = True
    try:
        _by_function[f] = wrapper
    except TypeError:
        pass
    return wrapper


# ---- calls from converted code -----------------------------------------------------------------------

def converted_call(f, args, kwargs):
    """``f(*args, **kwargs)`` from converted code, with ``f`` converted when it is user code."""
    kwargs = kwargs or {}
    override = _BUILTIN_OVERRIDES.get(id(f))
    if override is not None and override[0] is f:
        return override[1](*args, **kwargs)
    if id(f) in _TAKES_FUNCTIONS and _TAKES_FUNCTIONS[id(f)] is f:
        # The branches and bodies given to ember's control flow are converted too, as TensorFlow converts
        # the functions passed to tf.cond / tf.while_loop from converted code.
        args = tuple(_converted_callables(a) for a in args)
        kwargs = {k: _converted_callables(v) for k, v in kwargs.items()}
    return converted(f, recursive_only=True)(*args, **kwargs)


def _converted_callables(value, depth=0):
    if isinstance(value, (types.FunctionType, types.MethodType, functools.partial)):
        return converted(value, recursive_only=True)
    if depth < 2 and isinstance(value, (list, tuple)):
        return type(value)(_converted_callables(v, depth + 1) for v in value)
    if depth < 2 and isinstance(value, dict):
        return {k: _converted_callables(v, depth + 1) for k, v in value.items()}
    return value


def _control_flow_functions():
    from ember.ops import control_flow_ops
    names = ("cond", "while_loop", "case", "switch_case", "map_fn", "scan", "foldl", "foldr")
    found = [getattr(control_flow_ops, n) for n in names if hasattr(control_flow_ops, n)]
    return {id(fn): fn for fn in found}


_TAKES_FUNCTIONS = _control_flow_functions()


def _tensor_args(args):
    from ember.framework.tensor import Tensor
    return any(isinstance(a, Tensor) for a in args)


def _range(*args, **kwargs):
    if _tensor_args(args) or _tensor_args(kwargs.values()):
        return _ember_range(*args, **kwargs)
    return range(*args, **kwargs)


def _ember_range(start, limit=None, delta=1, dtype=None, name="range"):
    """``ember.range`` that a ``for`` loop recognises (Note [Range loops] in operators.py)."""
    if limit is None:
        start, limit = 0, start
    return operators.range_tensor(start, limit, delta, dtype=dtype, name=name)


def _len(x):
    from ember.framework.tensor import Tensor
    if isinstance(x, Tensor):
        if x.shape.rank == 0:
            raise ValueError(operators.in_user_code(f"len requires a non-scalar tensor, got one of shape {x.shape}"))
        if x.shape.rank is not None and x.shape[0] is not None:
            return x.shape[0]
        from ember.ops import array_ops
        return array_ops.shape(x)[0]
    if operators._is_tensor_array(x):
        return x.size()
    return len(x)


def _abs(x):
    from ember.framework.tensor import Tensor
    if isinstance(x, Tensor):
        from ember.ops import math_ops
        return math_ops.abs(x)
    return abs(x)


def _cast_builtin(python_type, dtype_name):
    def cast(x=0, *args):
        if operators._is_graph_tensor(x) and not args:
            from ember import dtypes
            from ember.ops import math_ops
            return math_ops.cast(x, getattr(dtypes, dtype_name))
        return python_type(x, *args)
    return cast


def _overrides():
    from ember.ops import array_ops
    pairs = [(range, _range), (len, _len), (abs, _abs), (int, _cast_builtin(int, "int32")),
             (float, _cast_builtin(float, "float32")), (array_ops.range, _ember_range)]
    return {id(b): (b, o) for b, o in pairs}


_BUILTIN_OVERRIDES = _overrides()


# ---- public API --------------------------------------------------------------------------------------

def to_graph(entity, recursive=True, experimental_optional_features=None):
    """The converted Python function (``tf.autograph.to_graph``): its control flow on tensors stages graph
    ops when it runs inside ``ember.function``."""
    del recursive, experimental_optional_features
    if isinstance(entity, type):
        raise ConversionError(f"AutoGraph converts functions, not classes: got {entity!r}")
    target = getattr(entity, "python_function", entity)  # an ember.function: its Python function
    result = converted(target, user_requested=True)
    if result is target and not getattr(target, "__ag_do_not_convert__", False) and \
            not getattr(target, "__ag_converted__", False):
        raise ConversionError(f"AutoGraph can only convert Python functions and methods, got {entity!r}")
    return result


def to_code(entity, recursive=True, experimental_optional_features=None):
    """The converted source of ``entity`` (``tf.autograph.to_code``)."""
    del recursive, experimental_optional_features
    target = getattr(entity, "python_function", entity)
    target = getattr(target, "__func__", target)
    bound = getattr(target, "_ember_bound_method", None)
    if bound is not None:
        target = bound[0]
    if not isinstance(target, types.FunctionType):
        raise ConversionError(f"AutoGraph can only convert Python functions and methods, got {entity!r}")
    try:
        return _conversion(target).source + "\n"
    except _Unconvertible as e:
        raise ConversionError(f"AutoGraph could not convert {entity!r}: {e}") from None


def do_not_convert(func=None):
    """Marks ``func`` to run as it is, never converted (``tf.autograph.experimental.do_not_convert``)."""
    if func is None:
        return do_not_convert

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    wrapper.__ag_do_not_convert__ = True
    return wrapper


def set_verbosity(level, alsologtostdout=False):
    """AutoGraph's log level (``tf.autograph.set_verbosity``): 3 and above print each converted function."""
    global _verbosity, _log_to_stdout
    _verbosity = int(level)
    _log_to_stdout = bool(alsologtostdout)


def trace(*args):
    """Prints its arguments while tracing (``tf.autograph.trace``)."""
    print(*args)
