"""``ember.saved_model.load``: a SavedModel (ember's or TensorFlow's) as Python objects.

Each node of the object graph becomes an object: user objects a ``Loaded`` (an ember.Module whose
attributes are the node's children), variables ``ember.Variable``s holding the checkpoint's values,
functions ``RestoredFunction``s (callable like the saved ember.function: each call is matched against the
saved traces' input signatures) and bare concrete functions (signatures among them)
``RestoredConcreteFunction``s. A concrete function runs its FunctionDef from the MetaGraphDef's library,
imported by the C++ GraphDef reader as the body of a call whose trailing DT_RESOURCE arguments are bound
to the restored variables and tables (``bound_inputs``). A lookup table (a ``resource`` node whose
``_create_resource`` function holds a HashTableV2, MutableHashTableV2 or MutableDenseHashTableV2) is a
``RestoredTable`` owning a table made at load, filled by running its ``_initialize`` function and, for a
MutableHashTable, from the checkpoint's ``<object>/.ATTRIBUTES/table-keys`` and ``-values``.

Nothing from the file is executed as Python: class names (``identifier``) are not looked up, and every
reference (node ids, function names, checkpoint keys, dtypes) is checked; anything wrong is an
ember.errors exception naming the file and the problem.
"""

import os

import numpy as np
from google.protobuf.message import DecodeError

from ember import _C, errors
from ember.framework import graph_def as _gd
from ember.framework import protos
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_spec import TensorSpec
from ember.function_graph import _PartitionedCall, CarvedFunction
from ember.lookup import dense_buckets
from ember.module import Module
from ember.ops import script_ops
from ember.saved_model import structure, table_names
from ember.saved_model.asset import Asset
from ember.util import nest
from ember.variables import Variable

SavedModel = protos.message_class("SavedModel")
TrackableObjectGraph = protos.message_class("TrackableObjectGraph")

_ImportTable = _C.op("LookupTableImportV2")
_ExportTable = _C.op("LookupTableExportV2")

_MAX_FILE_BYTES = 2**31 - 1  # protobuf's limit for one message


class LoadOptions:
    """Accepted for TensorFlow's signature."""

    def __init__(self, allow_partial_checkpoint=False, experimental_io_device=None, **unused):
        self.allow_partial_checkpoint = allow_partial_checkpoint


def _error(path, message, cls=errors.InvalidArgumentError):
    return cls(None, None, f"SavedModel {path}: {message}")


def read_saved_model(export_dir):
    """The SavedModel message of ``export_dir/saved_model.pb`` or, when there is none, of the text form
    ``saved_model.pbtxt`` (TensorFlow's loader reads both)."""
    path = os.path.join(os.fspath(export_dir), "saved_model.pb")
    if not os.path.isfile(path):
        text_path = os.path.join(os.fspath(export_dir), "saved_model.pbtxt")
        if os.path.isfile(text_path):
            return _read_text(text_path), text_path
        raise errors.NotFoundError(None, None, f"SavedModel file does not exist at: "
                                   f"{os.fspath(export_dir)}{os.sep}{{saved_model.pbtxt|saved_model.pb}}")
    size = os.path.getsize(path)
    if size > _MAX_FILE_BYTES:
        raise _error(path, f"the file has {size} bytes, more than a protobuf message may hold (2 GiB)",
                     errors.DataLossError)
    with open(path, "rb") as f:
        data = f.read()
    try:
        saved_model = SavedModel.FromString(data)
    except (DecodeError, RuntimeError, ValueError) as e:
        raise _error(path, f"the bytes are not a serialized SavedModel ({e})", errors.DataLossError) from None
    return saved_model, path


def _read_text(path):
    from google.protobuf import text_format

    size = os.path.getsize(path)
    if size > _MAX_FILE_BYTES:
        raise _error(path, f"the file has {size} bytes, more than a protobuf message may hold (2 GiB)",
                     errors.DataLossError)
    with open(path, "rb") as f:
        data = f.read()
    try:
        return text_format.Parse(data.decode("utf-8"), SavedModel())
    except (text_format.ParseError, UnicodeDecodeError, RuntimeError, ValueError) as e:
        raise _error(path, f"the text is not a SavedModel in protobuf's text format ({e})",
                     errors.DataLossError) from None


def load(export_dir, tags=None, options=None):
    """The object saved in ``export_dir``."""
    export_dir = os.fspath(export_dir)
    saved_model, path = read_saved_model(export_dir)
    if not saved_model.meta_graphs:
        raise _error(path, "it holds no MetaGraphDef")
    if isinstance(tags, str):
        tags = [tags]
    meta = saved_model.meta_graphs[0]
    if tags is not None:
        matches = [m for m in saved_model.meta_graphs if set(m.meta_info_def.tags) == set(tags)]
        if not matches:
            available = [list(m.meta_info_def.tags) for m in saved_model.meta_graphs]
            raise _error(path, f"no MetaGraphDef has tags {sorted(tags)}; available: {available}",
                         errors.NotFoundError)
        meta = matches[0]
    if not meta.HasField("object_graph_def") or not meta.object_graph_def.nodes:
        from ember.saved_model import loader_v1  # a TensorFlow 1 SavedModel: no object graph

        def fail(message, cls=errors.InvalidArgumentError):
            return _error(path, message, cls)

        table_names.scope_table_names_to_load(meta.graph_def)
        try:
            return loader_v1.LoadedV1(loader_v1.LoaderV1(export_dir, path, meta, fail))
        except errors.OpError as e:  # from the GraphDef importer or the checkpoint: name the SavedModel
            if path in e.message:
                raise
            raise type(e)(None, None, f"SavedModel {path}: {e.message}") from None
    table_names.scope_table_names_to_load(meta.graph_def)
    return _Loader(export_dir, path, meta, options or LoadOptions()).load()


class _Default:
    """A Module property that a restored attribute of the same name replaces (a non-data descriptor: the
    instance's own attribute wins). Keras objects save "variables", "trainable_variables", ... lists."""

    def __init__(self, prop):
        self._prop = prop

    def __get__(self, obj, owner=None):
        return self if obj is None else self._prop.__get__(obj, owner)


class Loaded(Module):
    """An object restored from a SavedModel: its attributes are the saved object's."""

    variables = _Default(Module.variables)
    trainable_variables = _Default(Module.trainable_variables)
    non_trainable_variables = _Default(Module.non_trainable_variables)
    submodules = _Default(Module.submodules)
    name = _Default(Module.name)

    def __init__(self, identifier):
        super().__init__(name="loaded")
        self._ember_identifier = identifier

    def __repr__(self):
        return f"<ember.saved_model.Loaded {self._ember_identifier}>"


class _CallableLoaded(Loaded):
    """A restored object with a ``__call__`` function (Python looks ``__call__`` up on the class)."""

    def __call__(self, *args, **kwargs):
        return self.__dict__["__call__"](*args, **kwargs)


class _SignatureMap(dict):
    """``loaded.signatures``: signature key -> RestoredConcreteFunction."""


class RestoredConcreteFunction:
    """One saved concrete function: called with tensors (or values) matching its input signature, it
    returns the saved output structure."""

    def __init__(self, loader, name):
        self._loader = loader
        self.name = name
        saved = loader.graph.concrete_functions[name]
        self._bound = [loader.bound_input(node_id, f"function {name}") for node_id in saved.bound_inputs]
        signature = loader.decode(saved.canonicalized_input_signature, f"function {name}'s input signature")
        if not (isinstance(signature, tuple) and len(signature) == 2 and isinstance(signature[0], (tuple, list))
                and isinstance(signature[1], dict)):
            signature = (tuple(signature) if isinstance(signature, (list, tuple)) else (signature,), {})
        self.structured_input_signature = (tuple(signature[0]), dict(signature[1]))
        self.structured_outputs = loader.decode(saved.output_signature, f"function {name}'s output signature")
        self._specs = [s for s in nest.flatten(list(self.structured_input_signature[0]) +
                                               [self.structured_input_signature[1][k]
                                                for k in sorted(self.structured_input_signature[1])])
                       if isinstance(s, TensorSpec)]
        self._out_specs = [s for s in nest.flatten(self.structured_outputs) if isinstance(s, TensorSpec)]
        self._positional = None
        self._keywords = None
        self._fn = None

    @property
    def _input_specs(self):
        return self._specs

    def _function(self):
        if self._fn is None:
            self._fn = self._loader.instantiate(self.name, self._specs, self._out_specs, self._bound)
        return self._fn

    def _call_flat(self, tensors):
        graph_function = self._function()._gf
        if _C.in_trace():
            # Called while an ember.function traces: a call node of that graph, as a ConcreteFunction's.
            out = _PartitionedCall(list(tensors), graph_function.library_name)
            flat = list(out) if isinstance(out, tuple) else [out]
        else:
            flat = graph_function(list(tensors))
        results = iter(flat)
        flat = [next(results) if isinstance(s, TensorSpec) else s for s in nest.flatten(self.structured_outputs)]
        return nest.pack_sequence_as(self.structured_outputs, flat)

    def _flat_tensors(self, values):
        tensors = []
        for value, spec in zip(values, self._specs):
            t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype_hint=spec.dtype)
            if t.dtype != spec.dtype or not spec.shape.is_compatible_with(t.shape):
                return None
            tensors.append(t)
        return tensors

    def __call__(self, *args, **kwargs):
        if self._keywords is not None:  # a bare concrete function: positional prefix, then keywords
            if len(args) > self._positional:
                raise TypeError(f"{self.name}: takes {self._positional} positional argument(s), got {len(args)}")
            named = dict(zip(self._keywords, args))
            for k, v in kwargs.items():
                if k in named:
                    raise TypeError(f"{self.name}: got argument '{k}' twice")
                if k not in self._keywords:
                    raise TypeError(f"{self.name}: unexpected argument '{k}' (expected {self._keywords})")
                named[k] = v
            missing = [k for k in self._keywords if k not in named]
            if missing:
                raise TypeError(f"{self.name}: missing argument(s) {missing}")
            positional, keywords = self.structured_input_signature
            if keywords and not positional:
                values = [named[k] for k in sorted(keywords)]
            else:
                values = [named[k] for k in self._keywords]
        else:
            values = nest.flatten(list(args) + [kwargs[k] for k in sorted(kwargs)])
        if len(values) != len(self._specs):
            raise TypeError(f"{self.name}: expected {len(self._specs)} tensor argument(s) {self._specs}, got "
                            f"{len(values)}")
        tensors = self._flat_tensors(values)
        if tensors is None:
            raise TypeError(f"{self.name}: the arguments do not match its input signature {self._specs}")
        return self._call_flat(tensors)

    def __repr__(self):
        return f"<ember.saved_model.RestoredConcreteFunction {self.name}{self._specs}>"


class RestoredFunction:
    """A saved ember.function (or tf.function): each call runs the first saved trace whose input
    signature accepts the arguments; none accepting them is a ValueError listing the saved signatures."""

    _saved_function_spec = None

    def __init__(self, name, concrete_functions, fullargspec, input_signature):
        self.name = name
        self.concrete_functions = concrete_functions
        self._argspec = fullargspec
        self.input_signature = input_signature

    def _bind(self, args, kwargs):
        spec = self._argspec
        names = list(getattr(spec, "args", None) or []) if spec is not None else []
        if names and names[0] == "self":
            names = names[1:]
        if not names:
            return list(args) + [kwargs[k] for k in sorted(kwargs)], {}
        defaults = getattr(spec, "defaults", None) or ()
        values = list(args)
        if len(values) > len(names) and not getattr(spec, "varargs", None):
            raise TypeError(f"{self.name}() takes {len(names)} argument(s), got {len(values)}")
        kwargs = dict(kwargs)
        for i in range(len(values), len(names)):
            if names[i] in kwargs:
                values.append(kwargs.pop(names[i]))
            elif i >= len(names) - len(defaults):
                values.append(defaults[i - (len(names) - len(defaults))])
            else:
                raise TypeError(f"{self.name}() missing argument '{names[i]}'")
        return values, kwargs

    def __call__(self, *args, **kwargs):
        try:
            positional, keywords = self._bind(args, kwargs)
        except TypeError:
            positional, keywords = list(args), dict(kwargs)
        for cf in self.concrete_functions:
            tensors = _match(cf, positional, keywords)
            if tensors is not None:
                return cf._call_flat(tensors)
        listing = "\n".join(f"  Option {i + 1}: {_signature_text(cf)}" for i, cf in enumerate(self.concrete_functions))
        given = ", ".join([_describe(v) for v in positional] + [f"{k}={_describe(v)}" for k, v in keywords.items()])
        raise ValueError(f"Could not find matching concrete function to call loaded from the SavedModel. Got:\n"
                         f"  {self.name}({given})\n Expected these arguments to match one of the following "
                         f"{len(self.concrete_functions)} option(s):\n{listing or '  (none: the function was never traced)'}")

    def __repr__(self):
        return f"<ember.saved_model.RestoredFunction {self.name}>"


def _describe(value):
    if isinstance(value, Tensor):
        return f"Tensor(shape={value.shape}, dtype={value.dtype.name})"
    return repr(value)


def _signature_text(cf):
    positional, keywords = cf.structured_input_signature
    return f"{cf.name}(args={positional!r}, kwargs={keywords!r})"


def _match(cf, positional, keywords):
    """The flat tensors for ``cf`` if the arguments fit its saved input signature, else None."""
    saved_positional, saved_keywords = cf.structured_input_signature
    if len(positional) != len(saved_positional) or set(keywords) != set(saved_keywords):
        return None
    tensors = []

    def walk(value, spec):
        if isinstance(spec, TensorSpec):
            try:
                t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype_hint=spec.dtype)
            except (TypeError, ValueError):
                return False
            if t.dtype != spec.dtype or not spec.shape.is_compatible_with(t.shape):
                return False
            tensors.append(t)
            return True
        if isinstance(spec, dict):
            return isinstance(value, dict) and set(value) == set(spec) and all(walk(value[k], spec[k]) for k in sorted(spec))
        if isinstance(spec, (list, tuple)):
            return (isinstance(value, (list, tuple)) and len(value) == len(spec) and
                    all(walk(v, s) for v, s in zip(value, spec)))
        if isinstance(value, Tensor):
            return False
        return value == spec

    if not all(walk(v, s) for v, s in zip(positional, saved_positional)):
        return None
    if not all(walk(keywords[k], saved_keywords[k]) for k in sorted(saved_keywords)):
        return None
    return tensors


class RestoredTable(Loaded):
    """A lookup table of the SavedModel (TensorFlow's TrackableResource with ``_create_resource``,
    ``_initialize`` and ``_destroy_resource`` functions): the table its creating node describes, made at
    load and owned by this object; functions that use it bind it to their DT_RESOURCE arguments."""

    def __init__(self, name, key_dtype, value_dtype, is_mutable):
        super().__init__("resource")
        self.key_dtype = key_dtype
        self.value_dtype = value_dtype
        self._handle = _C.create_lookup_table(name, key_dtype._enum, value_dtype._enum, is_mutable)
        self._id = self._handle.id
        self._reserved_keys = []  # a DenseHashTable's empty and deleted keys: never entries
        self._initial_num_buckets = None  # a DenseHashTable's, where its creating node gives one

    def export(self):
        """(keys, values): every entry, in no particular order."""
        return _ExportTable(self._id, self.key_dtype, self.value_dtype)

    @property
    def name(self):
        return self._handle.name

    # ---- checkpointing (train/checkpoint.py): a MutableHashTable's entries, as lookup.MutableHashTable's
    _ember_saved_attribute = "table"
    _ember_saved_suffixes = ("-keys", "-values")

    def _ember_checkpoint_tensors(self):
        if not self._handle.is_mutable:
            return {}
        keys, values = self.export()
        if self._reserved_keys:  # a DenseHashTable: TensorFlow's bucket array
            buckets = dense_buckets.num_buckets_for(int(keys.shape[0]), self._initial_num_buckets)
            keys, values = (convert_to_tensor(t, dtype=d) for t, d in zip(
                dense_buckets.to_buckets(keys.numpy(), values.numpy(), self._reserved_keys[0], buckets),
                (self.key_dtype, self.value_dtype)))
        return {"-keys": keys, "-values": values}

    def _ember_restore_tensors(self, tensors):
        keys, values = tensors["-keys"], tensors["-values"]
        if self._reserved_keys and keys.dtype == self.key_dtype:
            keys, values = (convert_to_tensor(t) for t in dense_buckets.entries_of(keys.numpy(), values.numpy(),
                                                                                  self._reserved_keys))
        _ImportTable(keys, values, self._id)

    def __repr__(self):
        kind = "MutableHashTable" if self._handle.is_mutable else "HashTable"
        return f"<RestoredTable {self._handle.name!r}: {kind} {self.key_dtype.name} -> {self.value_dtype.name}>"


class _CompositeSignature(Exception):
    """A function whose signature ember cannot call (structure.CompositeSignatureError), met while loading."""


class _UncallableFunction:
    """A function of the SavedModel whose signature holds composite values (tf_keras saves, for one, an
    ``adapt_step`` taking a dataset iterator): restored so that the rest of the model loads, and failing
    plainly when called."""

    def __init__(self, name, reason):
        self.name = name
        self.reason = reason

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"{self.name}: ember cannot call this restored function: {self.reason}")


class _TableCreator:
    """A table's ``_create_resource`` function, which ember does not restore (it returns a DT_RESOURCE)."""

    def __init__(self, name):
        self.name = name

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"{self.name}: ember made this table when the SavedModel was loaded; it "
                                  "cannot run a function returning a table handle (DT_RESOURCE)")


class _Loader:
    def __init__(self, export_dir, path, meta, options):
        self.export_dir = export_dir
        self.path = path
        self.meta = meta
        self.graph = meta.object_graph_def
        self.options = options
        self.library = {f.signature.name: f for f in meta.graph_def.library.function}
        # The Python functions of the library's py_function ops, while this process still has them: a
        # GraphDef names them by token only, and the restored functions (which hold this loader) keep them.
        self.py_functions = script_ops.registered_in(self.library.values())
        self.objects = {}
        self._checked = set()  # library functions whose calls are known to resolve

    def fail(self, message, cls=errors.InvalidArgumentError):
        return _error(self.path, message, cls)

    def decode(self, proto, what):
        try:
            return structure.decode(proto)
        except structure.CompositeSignatureError as e:
            raise _CompositeSignature(f"{what}: {e}") from None
        except structure.SavedModelFormatError as e:
            raise self.fail(f"{what}: {e}") from None

    def node(self, node_id, what):
        if not 0 <= node_id < len(self.graph.nodes):
            raise self.fail(f"{what} refers to object {node_id}, but the object graph has "
                            f"{len(self.graph.nodes)} objects")
        return self.graph.nodes[node_id]

    def bound_input(self, node_id, what):
        """The variable (or captured constant) a function's bound input names."""
        node = self.node(node_id, what)
        kind = node.WhichOneof("kind")
        if kind not in ("variable", "constant", "asset", "resource"):
            raise self.fail(f"{what} binds object {node_id} as a variable, a constant, an asset or a table, but "
                            f"it is a {kind}")
        obj = self.get(node_id)
        if kind == "resource" and not isinstance(obj, RestoredTable):
            raise self.fail(f"{what} binds object {node_id}, a resource that is not a lookup table (its "
                            f"_create_resource function creates no table), which ember cannot restore")
        return obj

    # ---- objects

    def load(self):
        kinds = [n.WhichOneof("kind") for n in self.graph.nodes]
        for node_id, kind in enumerate(kinds):
            if kind is None:
                raise self.fail(f"object {node_id} has no kind")
            for child in self.graph.nodes[node_id].children:
                self.node(child.node_id, f"object {node_id}'s child '{child.local_name}'")
        for name in self.graph.concrete_functions:
            if name not in self.library:
                raise self.fail(f"the object graph names concrete function '{name}', which the function library "
                                f"does not hold", errors.NotFoundError)
        self._names = {}  # the first name each object has under a parent (for messages)
        for node in self.graph.nodes:
            for child in node.children:
                self._names.setdefault(child.node_id, child.local_name)
        self._read_checkpoint()
        # A table's _create_resource function returns a DT_RESOURCE, which ember's functions cannot: the
        # table is made from its creating node instead (_resource), and the function is not restored.
        self._creators = set()
        pending = [c.node_id for n in self.graph.nodes if n.WhichOneof("kind") == "resource"
                   for c in n.children if c.local_name == "_create_resource"]
        while pending:
            node_id = pending.pop()
            if node_id not in self._creators:
                self._creators.add(node_id)
                pending += [c.node_id for c in self.graph.nodes[node_id].children]
        # Every object first, then the edges: a graph with cycles needs no recursion.
        for node_id in range(len(self.graph.nodes)):
            self.get(node_id)
        for node_id, node in enumerate(self.graph.nodes):
            obj = self.objects[node_id]
            for child in node.children:
                value = self.objects[child.node_id]
                if isinstance(obj, _SignatureMap):
                    if not isinstance(value, RestoredConcreteFunction):
                        raise self.fail(f"signature '{child.local_name}' is object {child.node_id}, a "
                                        f"{self.graph.nodes[child.node_id].WhichOneof('kind')}, not a function")
                    obj[child.local_name] = value
                elif isinstance(obj, list):
                    obj.append(value)
                elif isinstance(obj, dict):
                    obj[child.local_name] = value
                elif isinstance(obj, Loaded):
                    try:
                        setattr(obj, child.local_name, value)
                    except (AttributeError, TypeError) as e:
                        raise self.fail(f"object {node_id} cannot take attribute {child.local_name!r} ({e})") from None
        self._initialize_tables()
        root = self.objects[0]
        if isinstance(root, Loaded) and not isinstance(getattr(root, "signatures", None), _SignatureMap):
            root.signatures = _SignatureMap()
        for key, signature in self.meta.signature_def.items():
            if key.startswith("__saved_model"):
                continue
            if isinstance(root, Loaded) and key not in root.signatures:
                raise self.fail(f"signature_def '{key}' has no function in the object graph's signatures",
                                errors.NotFoundError)
        return root

    def get(self, node_id):
        obj = self.objects.get(node_id)
        if obj is not None:
            return obj
        node = self.graph.nodes[node_id]
        kind = node.WhichOneof("kind")
        if node_id in self._creators:
            obj = _TableCreator(self._names.get(node_id, "_create_resource"))
        elif kind == "user_object":
            identifier = node.user_object.identifier
            if identifier == "signature_map":
                obj = _SignatureMap()
            elif identifier == "trackable_list_wrapper":
                obj = []
            elif identifier == "trackable_dict_wrapper":
                obj = {}
            elif any(c.local_name == "__call__" for c in node.children):
                obj = _CallableLoaded(identifier)
            else:
                obj = Loaded(identifier)
        elif kind == "variable":
            obj = self._variable(node_id, node.variable)
        elif kind == "function":
            try:
                obj = self._function(node_id, node.function)
            except _CompositeSignature as e:
                obj = _UncallableFunction(self._names.get(node_id, "function"), str(e))
        elif kind == "bare_concrete_function" and not self._callable(node.bare_concrete_function):
            obj = _UncallableFunction(node.bare_concrete_function.concrete_function_name, self._why)
        elif kind == "bare_concrete_function":
            bare = node.bare_concrete_function
            obj = self.concrete(bare.concrete_function_name, f"object {node_id}")
            obj._keywords = list(bare.argument_keywords)
            obj._positional = bare.allowed_positional_arguments
            if obj._positional < 0 or obj._positional > len(obj._keywords):
                raise self.fail(f"object {node_id}: allowed_positional_arguments {obj._positional} is not "
                                f"within its {len(obj._keywords)} argument keywords")
        elif kind == "constant":
            obj = self._constant(node_id, node.constant.operation)
        elif kind == "asset":
            obj = self._asset(node_id, node.asset.asset_file_def_index)
        elif kind == "resource":
            obj = self._resource(node_id, node)
        else:
            obj = Loaded(kind)
        self.objects[node_id] = obj
        return obj

    def _callable(self, bare):
        try:
            self.concrete(bare.concrete_function_name, "a bare concrete function")
            return True
        except _CompositeSignature as e:
            self._why = str(e)
            return False

    def _function(self, node_id, proto):
        concretes = [self.concrete(name, f"object {node_id}") for name in proto.concrete_functions]
        spec = proto.function_spec
        argspec = self.decode(spec.fullargspec, f"object {node_id}'s argument spec") if spec.HasField(
            "fullargspec") else None
        signature = self.decode(spec.input_signature, f"object {node_id}'s input signature") if spec.HasField(
            "input_signature") else None
        name = self._names.get(node_id, "function")
        restored = RestoredFunction(name, concretes, argspec, signature)
        restored._saved_function_spec = proto.function_spec if proto.HasField("function_spec") else None
        return restored

    def concrete(self, name, what):
        if name not in self.graph.concrete_functions:
            raise self.fail(f"{what} names concrete function '{name}', which is not in the object graph's "
                            f"concrete_functions", errors.NotFoundError)
        if name not in self.library:
            raise self.fail(f"{what} names concrete function '{name}', which the function library does not "
                            f"hold", errors.NotFoundError)
        cache = self.__dict__.setdefault("_concrete", {})
        if name not in cache:
            _reachable(self.library, name, self.fail, self._checked)  # a call of a missing function fails the load
            cache[name] = RestoredConcreteFunction(self, name)
        return cache[name]

    # ---- variables

    def _read_checkpoint(self):
        prefix = os.path.join(self.export_dir, "variables", "variables")
        self.reader = None
        if not any(n.WhichOneof("kind") == "variable" for n in self.graph.nodes):
            # Tables save their entries there too (MutableHashTable), but a model of tables alone may have
            # no checkpoint at all (TensorFlow writes none when nothing is saved).
            if not any(n.WhichOneof("kind") == "resource" for n in self.graph.nodes) or not os.path.exists(
                    prefix + ".index"):
                return
        if not os.path.exists(prefix + ".index"):
            raise self.fail(f"it has variables but no checkpoint ({prefix}.index)", errors.NotFoundError)
        reader = _C.BundleReader.open(prefix)
        try:
            graph = TrackableObjectGraph.FromString(reader.read_string("_CHECKPOINTABLE_OBJECT_GRAPH"))
        except DecodeError as e:
            raise self.fail(f"the checkpoint's object graph is corrupt ({e})", errors.DataLossError) from None
        self.reader = reader
        self.checkpoint_graph = graph

    def _variable(self, node_id, proto):
        try:
            dtype = _gd.as_dtype(proto.dtype)
        except TypeError as e:
            raise self.fail(f"variable {node_id} ({proto.name}): {e}") from None
        try:
            shape = structure.shape_from_proto(proto.shape)
        except structure.SavedModelFormatError as e:
            raise self.fail(f"variable {node_id} ({proto.name}): {e}") from None
        if node_id >= len(self.checkpoint_graph.nodes):
            raise self.fail(f"variable {node_id} ({proto.name}) has no node in the checkpoint's object graph")
        attributes = [a for a in self.checkpoint_graph.nodes[node_id].attributes if a.name == "VARIABLE_VALUE"]
        if not attributes:
            raise self.fail(f"variable {node_id} ({proto.name}) has no saved value in the checkpoint")
        key = attributes[0].checkpoint_key
        if not self.reader.contains(key):
            raise self.fail(f"variable {node_id} ({proto.name}): the checkpoint has no tensor '{key}'",
                            errors.NotFoundError)
        value = self.reader.read(key)
        if value.dtype != dtype or not shape.is_compatible_with(value.shape):
            raise self.fail(f"variable {node_id} ({proto.name}) is {dtype.name}{shape}, but the checkpoint "
                            f"holds {value.dtype.name}{value.shape} under '{key}'")
        # The saved shape, which may leave dimensions unknown: the loaded functions were traced for it.
        return Variable(value, trainable=proto.trainable, name=proto.name or "Variable", shape=shape)

    # ---- lookup tables

    def _resource(self, node_id, node):
        """A table, when the resource's ``_create_resource`` function holds a table-creating node; any other
        resource stays an empty object (a function binding it fails to load)."""
        creator = None
        for child in node.children:
            if child.local_name == "_create_resource":
                function = self.node(child.node_id, f"resource {node_id}'s _create_resource")
                if function.WhichOneof("kind") == "function":
                    names = list(function.function.concrete_functions)
                elif function.WhichOneof("kind") == "bare_concrete_function":
                    names = [function.bare_concrete_function.concrete_function_name]
                else:
                    names = []
                for name in names:
                    if name not in self.library:
                        raise self.fail(f"resource {node_id}: _create_resource names function '{name}', which the "
                                        f"function library does not hold", errors.NotFoundError)
                    found = next((n for n in self.library[name].node_def if n.op in table_names.TABLE_CREATORS), None)
                    if found is not None:
                        creator, body = found, self.library[name]
        if creator is None:
            return Loaded("resource")
        try:
            key_dtype = _gd.as_dtype(creator.attr["key_dtype"].type)
            value_dtype = _gd.as_dtype(creator.attr["value_dtype"].type)
        except TypeError as e:
            raise self.fail(f"resource {node_id}: table node '{creator.name}': {e}") from None
        name = creator.attr["shared_name"].s.decode("utf-8", "replace") or self._names.get(node_id, creator.name)
        try:
            table = RestoredTable(name, key_dtype, value_dtype, creator.op != "HashTableV2")
        except errors.OpError as e:
            raise self.fail(f"resource {node_id}: table node '{creator.name}': {e.message}") from None
        if creator.op == "MutableDenseHashTableV2":
            # TensorFlow checkpoints a dense table's buckets, empty and deleted ones (holding these keys) too.
            consts = {n.name: n for n in body.node_def if n.op == "Const"}
            for source in creator.input[:2]:
                const = consts.get(source.split(":")[0])
                if const is None:
                    raise self.fail(f"resource {node_id}: table node '{creator.name}' takes its reserved keys "
                                    f"from '{source}', which is not a Const of its function")
                table._reserved_keys.append(np.asarray(_gd.make_ndarray(const.attr["value"].tensor)).item())
            if "initial_num_buckets" in creator.attr:
                table._initial_num_buckets = creator.attr["initial_num_buckets"].i
        return table

    def _initialize_tables(self):
        """Fills each table as TensorFlow's loader does: its ``_initialize`` function (an initializer's
        keys and values, or a vocabulary file of the assets) and, for a MutableHashTable, the entries the
        checkpoint holds under its ``table`` attribute."""
        for node_id, node in enumerate(self.graph.nodes):
            table = self.objects.get(node_id)
            if not isinstance(table, RestoredTable):
                continue
            what = f"table {self._names.get(node_id, node_id)!r} (object {node_id})"
            for child in node.children:
                if child.local_name != "_initialize":
                    continue
                initialize = self.objects[child.node_id]
                if not callable(initialize):
                    raise self.fail(f"{what}: _initialize is a {self.graph.nodes[child.node_id].WhichOneof('kind')}, "
                                    f"not a function")
                try:
                    initialize()
                except errors.OpError as e:
                    message = e.message if self.path in e.message else f"SavedModel {self.path}: {e.message}"
                    raise type(e)(None, None, f"{message} (initializing {what})") from None
            if self.reader is None or node_id >= len(self.checkpoint_graph.nodes):
                continue
            for attribute in self.checkpoint_graph.nodes[node_id].attributes:
                if attribute.name != "table":
                    continue
                keys, values = (attribute.checkpoint_key + suffix for suffix in ("-keys", "-values"))
                for key in (keys, values):
                    if not self.reader.contains(key):
                        raise self.fail(f"{what}: the checkpoint has no tensor '{key}'", errors.NotFoundError)
                keys, values = self.reader.read(keys), self.reader.read(values)
                if keys.dtype != table.key_dtype or values.dtype != table.value_dtype:
                    raise self.fail(f"{what} maps {table.key_dtype.name} -> {table.value_dtype.name}, but the "
                                    f"checkpoint holds {keys.dtype.name} -> {values.dtype.name} entries")
                table._ember_restore_tensors({"-keys": keys, "-values": values})

    def _constant(self, node_id, operation):
        """A tensor captured by value (TensorFlow saves one as a Const node of the MetaGraphDef's graph)."""
        if not hasattr(self, "_graph_nodes"):
            self._graph_nodes = {n.name: n for n in self.meta.graph_def.node}
        node = self._graph_nodes.get(operation)
        if node is None or node.op != "Const" or not node.attr["value"].HasField("tensor"):
            raise self.fail(f"constant {node_id} names graph node '{operation}', which is not a Const with a value")
        try:
            return convert_to_tensor(_gd.make_ndarray(node.attr["value"].tensor))
        except (TypeError, ValueError) as e:
            raise self.fail(f"constant {node_id} (node '{operation}'): {e}") from None

    def _asset(self, node_id, index):
        """An Asset whose path is the file's copy in this SavedModel's ``assets/``."""
        files = self.meta.asset_file_def
        if not 0 <= index < len(files):
            raise self.fail(f"asset {node_id} names asset_file_def {index}, but the MetaGraphDef has {len(files)}")
        filename = files[index].filename
        parts = filename.replace("\\", "/").split("/")
        if not filename or os.path.isabs(filename) or any(p in ("", ".", "..") for p in parts):
            raise self.fail(f"asset {node_id}: the file name {filename!r} is not a plain name inside assets/")
        return Asset(os.path.join(os.fspath(self.export_dir), "assets", filename))

    # ---- functions

    def instantiate(self, name, specs, out_specs, variables):
        """A CarvedFunction running library function ``name`` on tensors of ``specs`` with ``variables``
        bound to its trailing DT_RESOURCE arguments."""
        function = self.library[name]
        inputs = function.signature.input_arg
        if len(inputs) != len(specs) + len(variables):
            raise self.fail(f"function '{name}' takes {len(inputs)} arguments, but its saved signature gives "
                            f"{len(specs)} tensor(s) and {len(variables)} bound variable(s)")
        if len(function.signature.output_arg) != len(out_specs):
            raise self.fail(f"function '{name}' returns {len(function.signature.output_arg)} value(s), but its "
                            f"output signature has {len(out_specs)} tensor(s)")
        graph = _gd.GraphDef()
        graph.versions.CopyFrom(self.meta.graph_def.versions)
        feeds, bindings = [], {}
        for i, spec in enumerate(specs):
            node = graph.node.add(name=f"input_{i}", op="Placeholder")
            node.attr["dtype"].type = _gd.as_datatype_enum(spec.dtype)
            node.attr["shape"].shape.CopyFrom(structure.shape_proto(spec.shape))
            feeds.append(f"input_{i}:0")
        for i, variable in enumerate(variables):
            expected = inputs[len(specs) + i].type
            if isinstance(variable, (Variable, RestoredTable)):  # a resource: bound by id
                if expected != _gd.DT_RESOURCE:
                    kind = "lookup table" if isinstance(variable, RestoredTable) else "variable"
                    raise self.fail(f"function '{name}': argument {len(specs) + i} is bound to a {kind} but "
                                    f"has type {_gd._DT_NAMES.get(expected, expected)}, not DT_RESOURCE")
                node = graph.node.add(name=f"variable_{i}", op="Placeholder")
                node.attr["dtype"].type = _gd.DT_RESOURCE
                node.attr["shape"].shape.SetInParent()
                bindings[f"variable_{i}"] = variable._id
                continue
            if isinstance(variable, Asset):  # its path, a scalar string
                proto = _gd.TensorProto(dtype=_gd.as_datatype_enum(variable.asset_path.dtype),
                                        tensor_shape=_gd.TensorShapeProto(),
                                        string_val=[variable.asset_path.numpy()])
            else:
                proto = _gd.make_tensor_proto(variable)  # a captured constant: its value, inline
            if expected != proto.dtype:
                raise self.fail(f"function '{name}': argument {len(specs) + i} is bound to a "
                                f"{variable.dtype.name} constant but has type {_gd._DT_NAMES.get(expected, expected)}")
            node = graph.node.add(name=f"variable_{i}", op="Const")
            node.attr["dtype"].type = proto.dtype
            node.attr["value"].tensor.CopyFrom(proto)
        call = graph.node.add(name="call", op="StatefulPartitionedCall")
        call.input.extend([f"input_{i}" for i in range(len(specs))] + [f"variable_{i}" for i in range(len(variables))])
        call.attr["f"].func.name = name
        call.attr["Tin"].list.type.extend([a.type for a in inputs])
        call.attr["Tout"].list.type.extend([a.type for a in function.signature.output_arg])
        for f in _reachable(self.library, name, self.fail):
            graph.library.function.add().CopyFrom(f)
        fetches = []
        for i in range(len(out_specs)):
            graph.node.add(name=f"output_{i}", op="Identity", input=[f"call:{i}" if i else "call"]).attr[
                "T"].type = function.signature.output_arg[i].type
            fetches.append(f"output_{i}:0")
        try:
            gf = _C.function_from_graph_def(graph.SerializeToString(), name, bindings)
            return CarvedFunction(gf.prune(feeds, fetches), False)
        except errors.OpError as e:
            raise type(e)(None, None, f"SavedModel {self.path}: function '{name}': {e.message}") from None


def _reachable(library, name, fail, checked=None):
    """``name`` and every library function it reaches through function-valued attributes (those in
    ``checked`` were walked before, with what they reach: they are skipped, and the walk adds to it)."""
    if checked is not None and name in checked:
        return []
    seen = checked if checked is not None else set()
    seen.add(name)
    out, stack = [], [name]
    while stack:
        f = library[stack.pop()]
        out.append(f)
        for node in f.node_def:
            for attr in node.attr.values():
                names = []
                if attr.HasField("func"):
                    names.append(attr.func.name)
                elif attr.HasField("list"):
                    names += [fn.name for fn in attr.list.func]
                for callee in names:
                    if callee not in library:
                        raise fail(f"function '{f.signature.name}': node '{node.name}' calls function "
                                   f"'{callee}', which the function library does not hold", errors.NotFoundError)
                    if callee not in seen:
                        seen.add(callee)
                        stack.append(callee)
    return out
