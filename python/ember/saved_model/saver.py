"""``ember.saved_model.save``: an object (a Module, a function, containers of them) as a SavedModel that
TensorFlow 2.21 loads. See docs/saved_model.md for the layout; in short:

- ``saved_model.pb``: a SavedModel with one MetaGraphDef tagged "serve". Its ``graph_def.library`` holds
  every concrete function (TensorFlow's FunctionDef form, written by the C++ GraphDef exporter: the
  variables a function uses are its trailing DT_RESOURCE arguments); its ``graph_def`` nodes are one
  VarHandleOp per variable and, per signature, Placeholders ``<signature>_<input>`` feeding a
  StatefulPartitionedCall of the signature's function; ``object_graph_def`` is the object graph (node 0
  the root), whose ``concrete_functions`` map gives each function's bound variables (``bound_inputs``:
  object ids, in the order of the trailing arguments) and its input and output structures.
- ``variables/variables.{index,data-00000-of-00001}``: a checkpoint (ember.train's bundle format, i.e.
  TensorFlow's) whose object graph has the same nodes, ids and edges as ``object_graph_def``.
- ``assets/``: a copy of each saved ``Asset``'s file, which functions read through a string argument bound
  to the asset (Note [Saving assets]).
- ``fingerprint.pb``, as TensorFlow writes it.

Everything is written into a temporary directory beside ``export_dir`` and renamed into place.
"""

import hashlib
import os
import shutil
import tempfile
import uuid

from ember import _C, errors, trackable
from ember.framework import graph_def as _gd
from ember.framework import protos
from ember.framework.tensor import Tensor
from ember.framework.tensor_spec import TensorSpec
from ember.function_graph import _RESULT, ConcreteFunction
from ember.module import Module
from ember.polymorphic_function import Function
from ember.saved_model import structure
from ember.saved_model.asset import Asset
from ember.saved_model import table_saving
from ember.train import checkpoint
from ember.saved_model.loader import RestoredConcreteFunction, RestoredFunction, RestoredTable
from ember.saved_model.loader import _SignatureMap as _LoadedSignatures
from ember.util import nest
from ember.variables import Variable

SavedModel = protos.message_class("SavedModel")
MetaGraphDef = protos.message_class("MetaGraphDef")
SavedObjectGraph = protos.message_class("SavedObjectGraph")
SavedObject = protos.message_class("SavedObject")
TensorInfo = protos.message_class("TensorInfo")
SignatureDef = protos.message_class("SignatureDef")
FingerprintDef = protos.message_class("FingerprintDef")

SCHEMA_VERSION = 1
SERVE_TAG = "serve"
DEFAULT_SIGNATURE_KEY = "serving_default"
PREDICT_METHOD_NAME = "tensorflow/serving/predict"
_CALL_OPS = ("PartitionedCall", "StatefulPartitionedCall")


class SaveOptions:
    """Accepted for TensorFlow's signature; ember writes every SavedModel the same way."""

    def __init__(self, namespace_whitelist=None, save_debug_info=False, function_aliases=None,
                 experimental_io_device=None, experimental_variable_policy=None, **unused):
        self.function_aliases = dict(function_aliases or {})


def save(obj, export_dir, signatures=None, options=None):
    """Writes ``obj`` (an ember.Module, an ember.function, or any object whose attributes hold them) as a
    SavedModel in ``export_dir``. ``signatures``: an ember.function with an input_signature, a
    ConcreteFunction, or a dict of them by signature key; by default the root's only function with an
    input_signature becomes ``serving_default``."""
    export_dir = os.fspath(export_dir)
    if isinstance(obj, (Tensor, Variable)) or not (_trackable(obj) or _children(obj)):
        raise ValueError(f"Expected an object to save (a Module, a function or an object holding them), got "
                         f"{type(obj).__name__}")
    writer = _Writer(obj, _signature_functions(obj, signatures), options or SaveOptions())
    writer.build()
    writer.write(export_dir)


# ---- which objects are saved


_FUNCTIONS = (Function, ConcreteFunction, RestoredFunction, RestoredConcreteFunction)


def _trackable(value):
    return isinstance(value, _FUNCTIONS) or trackable.is_trackable_value(value)


def _children(obj):
    """(local name, value) pairs of the objects ``obj`` holds: its checkpoint dependencies as ember.train
    names them (ember.trackable), then the functions among its attributes and its class's ember.functions
    (bound to it), as TensorFlow's AutoTrackable lists them."""
    if isinstance(obj, (Variable, Tensor) + _FUNCTIONS) or not hasattr(obj, "__dict__") and not isinstance(
            obj, (list, tuple, dict)):
        return []
    if isinstance(obj, _LoadedSignatures):  # a loaded object's signatures: saved as signatures, if at all
        return []
    out = [(k, v) for k, v in trackable.children(obj) if not isinstance(v, _LoadedSignatures)]
    if isinstance(obj, (list, tuple, dict)):
        return out
    seen = {k for k, _ in out}
    for k, v in vars(obj).items():
        if k not in seen and not k.startswith("_ember") and isinstance(v, _FUNCTIONS):
            seen.add(k)
            out.append((k, v))
    for klass in type(obj).__mro__:
        for k, v in vars(klass).items():
            if k not in seen and isinstance(v, Function):
                seen.add(k)
                out.append((k, getattr(obj, k)))
    return out


def _concrete_functions(fn):
    """The traces of an ember.function to save: every cached one, or the input_signature's."""
    if not fn._cache and fn.input_signature is not None:
        fn.get_concrete_function()
    return sorted(fn._cache.values(), key=lambda c: getattr(c, "_trace_number", 0))


def _signature_functions(obj, signatures):
    """{signature key: ConcreteFunction}."""
    def concrete(value, key):
        if isinstance(value, (ConcreteFunction, RestoredConcreteFunction)):
            return value
        if isinstance(value, Function):
            if value.input_signature is None:
                raise ValueError(f"signature '{key}': an ember.function given as a signature needs an "
                                 f"input_signature; pass f.get_concrete_function(...) instead")
            return value.get_concrete_function()
        raise ValueError(f"signature '{key}': expected an ember.function or a ConcreteFunction, got "
                         f"{type(value).__name__}")

    if signatures is None and isinstance(getattr(obj, "signatures", None), _LoadedSignatures):
        return dict(obj.signatures)  # a loaded SavedModel saved again keeps its signatures
    if signatures is None:
        # A Keras model names its own (tf_keras' _default_save_signature): the call on its input specs.
        default = getattr(type(obj), "_ember_default_save_signature", None)
        default = default(obj) if callable(default) else None
        if default is not None:
            return {DEFAULT_SIGNATURE_KEY: default.get_concrete_function()}
        candidates = [v for _, v in _children(obj) if isinstance(v, Function) and v.input_signature is not None]
        if isinstance(obj, Function) and obj.input_signature is not None:
            candidates = [obj]
        return {DEFAULT_SIGNATURE_KEY: candidates[0].get_concrete_function()} if len(candidates) == 1 else {}
    if isinstance(signatures, dict):
        for key in signatures:
            if not isinstance(key, str) or not key:
                raise ValueError(f"signature keys must be non-empty strings, got {key!r}")
        return {key: concrete(value, key) for key, value in signatures.items()}
    return {DEFAULT_SIGNATURE_KEY: concrete(signatures, DEFAULT_SIGNATURE_KEY)}


def _unique(base, taken):
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{base}_{k}"
    taken.add(name)
    return name


def _sanitize(name):
    out = "".join(c if c.isalnum() or c in "_.-" else "_" for c in name)
    return out if out and (out[0].isalnum() or out[0] == ".") else "x" + out


# ---- the signature wrapper


def _output_dict(structured):
    """A signature's outputs as TensorFlow names them: a dict of tensors keeps its keys; otherwise the
    flattened tensors are output_0, output_1, ..."""
    if isinstance(structured, dict) and all(isinstance(k, str) for k in structured) and all(
            isinstance(v, Tensor) for v in structured.values()):
        return dict(structured)
    flat = [t for t in nest.flatten(structured) if isinstance(t, Tensor)]
    return {f"output_{i}": t for i, t in enumerate(flat)}


def _signature_wrapper(cf, key):
    """(ConcreteFunction taking the inputs by name, sorted, and returning a dict; input names in order)."""
    from ember import polymorphic_function

    if isinstance(cf, RestoredConcreteFunction):  # a loaded signature: already takes keywords, returns a dict
        positional, keywords = cf.structured_input_signature
        if positional or not isinstance(cf.structured_outputs, dict):
            raise ValueError(f"signature '{key}': a restored function used as a signature must take keyword "
                             f"arguments and return a dict (a loaded signature does)")
        return cf, sorted(keywords)

    specs = list(cf._input_specs)
    taken, names = set(), []
    for i, spec in enumerate(specs):
        names.append(_unique(_sanitize(spec.name or f"input_{i}"), taken))
    order = sorted(range(len(specs)), key=lambda i: names[i])

    def signature_function(*args):
        flat = [None] * len(specs)
        for position, i in enumerate(order):
            flat[i] = args[position]
        return _output_dict(cf._call_flat(flat))

    wrapper = polymorphic_function.Function(
        signature_function, name=f"signature_wrapper_{_sanitize(key)}", autograph=False,
        input_signature=[TensorSpec(specs[i].shape, specs[i].dtype, names[i]) for i in order])
    return wrapper.get_concrete_function(), [names[i] for i in order]


# ---- writing


class _Writer:
    def __init__(self, root, signatures, options):
        self.root = root
        self.signatures = signatures
        self.options = options
        self.objects = []  # object per node id (ember.train.checkpoint.walk_objects)
        self.edges = []  # node id -> [(local name, child id)]
        self.paths = []  # node id -> its path from the root, escaped and joined by "/"
        self.library = {}  # FunctionDef name -> FunctionDef
        self.concrete = {}  # FunctionDef name -> SavedConcreteFunction
        self.exported = {}  # id(ConcreteFunction) -> FunctionDef name
        self.variable_of = {}  # variable resource id -> node id
        self.table_of = {}  # lookup table resource id -> node id
        self.tables = table_saving.TableFunctions()
        self.keys = {}  # node id of a variable -> its checkpoint key
        self.meta = MetaGraphDef()

    def _walk_children(self, obj):
        """The SavedModel's object graph: ``_children``, a function's traces as ``trace_<i>``, and the
        root's ``signatures`` (a signature map holding one function per key). Both the SavedObjectGraph and
        the checkpoint (ember.train.checkpoint.save_objects) walk it, so their node ids agree."""
        if isinstance(obj, Function):
            out = [(f"trace_{i}", c) for i, c in enumerate(_concrete_functions(obj))]
        elif isinstance(obj, RestoredFunction):
            out = [(f"trace_{i}", c) for i, c in enumerate(obj.concrete_functions)]
        elif obj is self._signature_map:
            return [(key, self._signature_wrappers[key][0]) for key in sorted(self._signature_wrappers)]
        elif isinstance(obj, RestoredConcreteFunction):  # constants it captured (TensorFlow's "capture_<i>")
            out = [(f"capture_{i}", b) for i, b in enumerate(obj._bound)
                   if not isinstance(b, (Variable, RestoredTable))]
        elif isinstance(obj, table_saving.TableFunction):
            out = obj.children()
        elif table_saving.is_table(obj):  # its functions; a MutableHashTable's save and restore functions too
            # A loaded table's own children are the functions it was loaded with: written anew instead.
            out = ([] if isinstance(obj, RestoredTable) else _children(obj)) + self.tables.children(obj)
            saveables = self.tables.saveables(obj)
            if saveables is not None:
                out += [("_save_fn", saveables[0]), ("_restore_fn", saveables[1])]
        else:
            out = _children(obj)
        if obj is self.root and self._signature_map is not None:
            out = out + [("signatures", self._signature_map)]
        return out

    def build(self):
        self._signature_wrappers = {key: _signature_wrapper(self.signatures[key], key)
                                    for key in sorted(self.signatures)}
        self._signature_map = _SignatureMap() if self.signatures else None
        self.objects, paths, self.edges = checkpoint.walk_objects(self.root, self._walk_children)
        # A path as one string (VarHandleOp names) and as the checkpoint key of a variable there.
        self.paths = ["/".join(checkpoint.escape_name(name) for name in path) for path in paths]
        self.keys = {i: checkpoint.variable_key(path) for i, path in enumerate(paths)
                     if isinstance(self.objects[i], Variable)}
        self.variable_of = {obj._id: i for i, obj in enumerate(self.objects) if isinstance(obj, Variable)}
        self.table_of = {obj._id: i for i, obj in enumerate(self.objects) if table_saving.is_table(obj)}
        self.node_of = {id(obj): i for i, obj in enumerate(self.objects)}
        self.assets = {}  # node id -> (asset_file_def index, file name in assets/)
        taken_files = set()
        for node_id, obj in enumerate(self.objects):
            if isinstance(obj, Asset):
                self.assets[node_id] = (len(self.assets), _unique_file_name(obj, taken_files))
        self.constants = {}  # node id -> (Const node name, tensor)
        graph = self.meta.object_graph_def
        for node_id, obj in enumerate(self.objects):
            proto = graph.nodes.add()
            for name, child in self.edges[node_id]:
                proto.children.add(node_id=child, local_name=name)
            self._describe(node_id, obj, proto)
        self._write_graph()
        self._write_signature_defs()
        info = self.meta.meta_info_def
        info.tags.append(SERVE_TAG)
        info.tensorflow_version = "2.21.0"  # the TensorFlow whose formats ember writes
        info.tensorflow_git_version = "ember"
        info.stripped_default_attrs = True
        for alias, fn in self.options.function_aliases.items():
            for cf in ([fn] if isinstance(fn, ConcreteFunction) else _concrete_functions(fn)):
                info.function_aliases[self._export(cf)] = alias
        for name, saved in self.concrete.items():
            graph.concrete_functions[name].CopyFrom(saved)
        self.meta.saver_def.version = 2  # V2: the checkpoint is an index and data shards

    def _describe(self, node_id, obj, proto):
        if table_saving.is_table(obj):
            proto.resource.SetInParent()
            saveables = self.tables.saveables(obj)
            if saveables is not None:
                saveable = proto.saveable_objects["table"]
                saveable.save_function = self.node_of[id(saveables[0])]
                saveable.restore_function = self.node_of[id(saveables[1])]
        elif isinstance(obj, table_saving.TableFunction):
            bare = proto.bare_concrete_function
            bare.concrete_function_name = obj.name
            bare.argument_keywords.extend(obj.keywords)
            bare.allowed_positional_arguments = len(obj.keywords)
            self.library[obj.name] = obj.function_def
            saved = protos.message_class("SavedConcreteFunction")()
            saved.bound_inputs.extend(self.node_of[id(b)] for b in obj.bound)
            saved.canonicalized_input_signature.CopyFrom(obj.input_signature)
            saved.output_signature.CopyFrom(obj.output_signature)
            self.concrete[obj.name] = saved
        elif isinstance(obj, Variable):
            v = proto.variable
            v.dtype = _gd.as_datatype_enum(obj.dtype)
            v.shape.CopyFrom(structure.shape_proto(obj.shape))
            v.trainable = obj.trainable
            v.name = obj.name[:-2] if obj.name.endswith(":0") else obj.name
        elif isinstance(obj, Function):
            f = proto.function
            for cf in _concrete_functions(obj):
                f.concrete_functions.append(self._export(cf))
            f.function_spec.CopyFrom(_function_spec(obj))
        elif isinstance(obj, ConcreteFunction):
            bare = proto.bare_concrete_function
            bare.concrete_function_name = self._export(obj)
            if isinstance(getattr(obj, "_saved_signature_names", None), list):
                bare.argument_keywords.extend(obj._saved_signature_names)
            else:
                positional, keywords = obj.structured_input_signature
                bare.argument_keywords.extend(s.name or f"input_{i}" for i, s in enumerate(
                    [x for x in nest.flatten(positional) if isinstance(x, TensorSpec)]))
                bare.allowed_positional_arguments = len(bare.argument_keywords)
        elif isinstance(obj, RestoredFunction):
            f = proto.function
            for cf in obj.concrete_functions:
                f.concrete_functions.append(self._export(cf))
            if obj._saved_function_spec is not None:
                f.function_spec.CopyFrom(obj._saved_function_spec)
        elif isinstance(obj, RestoredConcreteFunction):
            bare = proto.bare_concrete_function
            bare.concrete_function_name = self._export(obj)
            if obj._keywords is not None:
                bare.argument_keywords.extend(obj._keywords)
                bare.allowed_positional_arguments = obj._positional
            elif obj.structured_input_signature[0]:
                bare.argument_keywords.extend(s.name or f"input_{i}" for i, s in enumerate(obj._specs))
                bare.allowed_positional_arguments = len(bare.argument_keywords)
            else:
                bare.argument_keywords.extend(sorted(obj.structured_input_signature[1]))
        elif isinstance(obj, Asset):
            proto.asset.asset_file_def_index = self.assets[node_id][0]
        elif isinstance(obj, Tensor):  # a constant a restored function captured
            self.constants[node_id] = (f"capture_constant_{node_id}", obj)
            proto.constant.operation = self.constants[node_id][0]
        elif isinstance(obj, _SignatureMap):
            proto.user_object.identifier = "signature_map"
            proto.user_object.version.producer = 1
            proto.user_object.version.min_consumer = 1
        else:
            proto.user_object.identifier = (
                "trackable_list_wrapper" if isinstance(obj, list) else "trackable_tuple_wrapper"
                if isinstance(obj, tuple) else "trackable_dict_wrapper" if isinstance(obj, dict)
                else "_generic_user_object")
            proto.user_object.version.producer = 1
            proto.user_object.version.min_consumer = 1

    def _export(self, cf):
        """The FunctionDef name of ``cf``, adding it (and what it calls) to the library."""
        name = self.exported.get(id(cf))
        if name is not None:
            return name
        if isinstance(cf, RestoredConcreteFunction):
            return self._export_restored(cf)
        signature = next((k for k, (w, _) in getattr(self, "_signature_wrappers", {}).items() if w is cf), None)
        call_specs = list(cf._input_specs)
        caller = _caller(cf)
        data, variable_nodes = _C.graph_def_and_variable_nodes(caller._gf)
        graph = _gd.GraphDef.FromString(data)
        calls = [n for n in graph.node if n.op in _CALL_OPS]
        if len(calls) != 1:
            raise errors.InternalError(None, None, f"saved_model.save: exporting {cf.name} gave {len(calls)} calls")
        call = calls[0]
        name = call.attr["f"].func.name
        for function in graph.library.function:
            self.library.setdefault(function.signature.name, function)
        node_of_variable = {node: vid for vid, node in variable_nodes.items()}
        bound = []
        for inp in call.input[len(call_specs):]:
            vid = node_of_variable.get(inp)
            node_id = self.variable_of.get(vid, self.table_of.get(vid))
            if node_id is None and vid is not None and vid >= _C.FIRST_LOOKUP_TABLE_ID:
                raise ValueError(f"saved_model.save: function {cf._name} uses a lookup table that is not "
                                 f"reachable from the saved object (attach it as an attribute of a saved Module)")
            if node_id is None:
                raise ValueError(f"saved_model.save: function {cf._name} uses a variable that is not reachable "
                                 f"from the saved object (attach it as an attribute of a saved Module)")
            bound.append(node_id)
        saved = protos.message_class("SavedConcreteFunction")()
        saved.bound_inputs.extend(bound)
        if signature is not None:
            _, names = self._signature_wrappers[signature]
            cf._saved_signature_names = names
            specs = {n: TensorSpec(s.shape, s.dtype, n) for n, s in zip(names, cf._input_specs)}
            saved.canonicalized_input_signature.CopyFrom(structure.encode(((), specs)))
        else:
            saved.canonicalized_input_signature.CopyFrom(structure.encode(_input_signature(cf)))
        saved.output_signature.CopyFrom(structure.encode(_output_signature(cf)))
        self.concrete[name] = saved
        self.exported[id(cf)] = name
        return name

    def _export_restored(self, cf):
        """A function of a loaded SavedModel: its FunctionDefs and records, copied, its variables renumbered."""
        loader = cf._loader
        for function in _reachable_functions(loader, cf.name):
            self.library.setdefault(function.signature.name, function)
        saved = protos.message_class("SavedConcreteFunction")()
        saved.CopyFrom(loader.graph.concrete_functions[cf.name])
        del saved.bound_inputs[:]
        for variable in cf._bound:
            node_id = (self.variable_of.get(variable._id) if isinstance(variable, Variable)
                       else self.node_of.get(id(variable)))
            if node_id is None:
                raise ValueError(f"saved_model.save: restored function {cf.name} uses a variable that is not "
                                 f"reachable from the saved object")
            saved.bound_inputs.append(node_id)
        self.concrete[cf.name] = saved
        self.exported[id(cf)] = cf.name
        return cf.name

    def _write_graph(self):
        graph = self.meta.graph_def
        graph.versions.producer = 2474
        graph.versions.min_consumer = 12
        taken = set()
        for name, tensor in self.constants.values():
            taken.add(name)
            value = _gd.make_tensor_proto(tensor)
            node = graph.node.add(name=name, op="Const")
            node.attr["dtype"].type = value.dtype
            node.attr["value"].tensor.CopyFrom(value)
        self.handle_nodes = {}
        for node_id, obj in enumerate(self.objects):
            if isinstance(obj, Variable):
                name = _unique(_sanitize(self.paths[node_id].replace("/", "_")) or "variable", taken)
                self.handle_nodes[node_id] = name
                node = graph.node.add(name=name, op="VarHandleOp")
                node.attr["dtype"].type = _gd.as_datatype_enum(obj.dtype)
                node.attr["shape"].shape.CopyFrom(structure.shape_proto(obj.shape))
                node.attr["shared_name"].s = name.encode()
                node.attr["container"].s = b""
        self._write_restore_ops(graph, taken)
        self.asset_reads = self._write_asset_nodes(graph, taken)
        self._write_tables(graph, taken)
        self.signature_nodes = {}
        for k, key in enumerate(sorted(self._signature_wrappers)):
            wrapper, names = self._signature_wrappers[key]
            fname = self._export(wrapper)
            placeholders = []
            for n, spec in zip(names, wrapper._input_specs):
                pname = _unique(f"{key}_{n}", taken)
                node = graph.node.add(name=pname, op="Placeholder")
                node.attr["dtype"].type = _gd.as_datatype_enum(spec.dtype)
                node.attr["shape"].shape.CopyFrom(structure.shape_proto(spec.shape))
                placeholders.append((n, pname, spec))
            call_name = _unique("StatefulPartitionedCall", taken)
            call = graph.node.add(name=call_name, op="StatefulPartitionedCall")
            call.input.extend([p for _, p, _ in placeholders])
            call.attr["Tin"].list.type.extend([_gd.as_datatype_enum(s.dtype) for _, _, s in placeholders])
            self.signature_nodes[key] = (placeholders, call_name, None)
            outputs = (wrapper.structured_outputs if isinstance(wrapper, RestoredConcreteFunction)
                       else _output_signature(wrapper))
            call.attr["Tout"].list.type.extend([_gd.as_datatype_enum(outputs[o].dtype) for o in sorted(outputs)])
            call.attr["f"].func.name = fname
            call.attr["config_proto"].s = b""
            call.attr["config"].s = b""
            call.attr["executor_type"].s = b""
            self.signature_nodes[key] = (placeholders, call_name, outputs)
        if self.assets:
            _AssetArguments(self).rewrite()
        # The bound inputs (final once assets are arguments): a variable's handle, an asset's path as its
        # variable's read, a restored function's captured constant.
        by_name = {node.name: node for node in graph.node}
        for key, (placeholders, call_name, outputs) in self.signature_nodes.items():
            call = by_name[call_name]
            for b in self.concrete[call.attr["f"].func.name].bound_inputs:
                if b in self.handle_nodes or b in self.table_nodes:
                    call.input.append(self.handle_nodes.get(b, self.table_nodes.get(b)))
                    call.attr["Tin"].list.type.append(_gd.DT_RESOURCE)
                elif b in self.asset_reads:
                    call.input.append(self.asset_reads[b])
                    call.attr["Tin"].list.type.append(_gd.DT_STRING)
                else:
                    call.input.append(self.constants[b][0])
                    call.attr["Tin"].list.type.append(_gd.as_datatype_enum(self.constants[b][1].dtype))
        for function in self.library.values():
            graph.library.function.add().CopyFrom(function)

    def _write_asset_nodes(self, graph, taken):
        """TensorFlow's graph form of the assets, which its C++ loader (and ember's) runs: per asset a string
        Placeholder named by ``asset_file_def`` (fed the file's path at load), a string variable the init
        op ``__saved_model_init_op`` assigns from it, and a read of that variable that signature calls
        take as the asset's argument. Returns {asset node id: the read's name}."""
        reads, assigns = {}, []
        self.asset_assigns = {}  # asset node id -> the AssignVariableOp of its path
        for node_id, (index, filename) in sorted(self.assets.items(), key=lambda item: item[1][0]):
            placeholder = graph.node.add(name=_unique("asset_path_initializer", taken), op="Placeholder")
            placeholder.attr["dtype"].type = _gd.DT_STRING
            placeholder.attr["shape"].shape.SetInParent()
            handle = graph.node.add(name=_unique("asset_path_variable", taken), op="VarHandleOp")
            handle.attr["dtype"].type = _gd.DT_STRING
            handle.attr["shape"].shape.SetInParent()
            handle.attr["shared_name"].s = handle.name.encode()
            handle.attr["container"].s = b""
            assign = graph.node.add(name=_unique(f"{handle.name}/Assign", taken), op="AssignVariableOp",
                                    input=[handle.name, placeholder.name])
            assign.attr["dtype"].type = _gd.DT_STRING
            assigns.append(assign.name)
            self.asset_assigns[node_id] = assign.name
            read = graph.node.add(name=_unique(f"{handle.name}/Read", taken), op="ReadVariableOp",
                                  input=[handle.name])
            read.attr["dtype"].type = _gd.DT_STRING
            reads[node_id] = read.name
            asset_file = self.meta.asset_file_def.add()
            asset_file.tensor_info.name = f"{placeholder.name}:0"
            asset_file.tensor_info.dtype = _gd.DT_STRING
            asset_file.tensor_info.tensor_shape.SetInParent()
            asset_file.filename = filename
        if assigns:
            init = graph.node.add(name=_unique("asset_init", taken), op="NoOp", input=["^" + a for a in assigns])
            self.meta.signature_def["__saved_model_init_op"].outputs["__saved_model_init_op"].name = init.name
        return reads

    def _write_tables(self, graph, taken):
        """Each table as TensorFlow's C++ loader finds it: its creating node, and a call of its
        ``_initialize`` function run by the init op ``__saved_model_init_op`` (with the asset paths once
        they are assigned). Signature calls take the creating node's handle."""
        self.table_nodes = {}
        initializers = []
        for node_id, obj in enumerate(self.objects):
            if not table_saving.is_table(obj):
                continue
            name = _unique(_sanitize(self.paths[node_id].replace("/", "_")) or "table", taken)
            self.table_nodes[node_id] = name
            for node in table_saving.creator_nodes(obj, name, in_function=False):
                graph.node.add().CopyFrom(node)
            initializers.append((node_id, self.tables.of(obj)["_initialize"]))
        calls = []
        for node_id, initialize in initializers:
            if not initialize.bound:
                continue  # nothing to fill
            inputs = []
            for b in initialize.bound:
                b = self.node_of[id(b)]
                if b in self.table_nodes:
                    inputs.append((self.table_nodes[b], _gd.DT_RESOURCE))
                elif b in self.asset_assigns:
                    handle = graph.node[[n.name for n in graph.node].index(self.asset_assigns[b])].input[0]
                    read = graph.node.add(name=_unique(f"{handle}/ReadForTable", taken), op="ReadVariableOp",
                                          input=[handle, "^" + self.asset_assigns[b]])
                    read.attr["dtype"].type = _gd.DT_STRING
                    inputs.append((read.name, _gd.DT_STRING))
                else:
                    name, tensor = self.constants[b]
                    inputs.append((name, _gd.as_datatype_enum(tensor.dtype)))
            call = graph.node.add(name=_unique("StatefulPartitionedCall", taken), op="StatefulPartitionedCall",
                                  input=[n for n, _ in inputs])
            call.attr["Tin"].list.type.extend(t for _, t in inputs)
            call.attr["Tout"].list.type.append(_gd.DT_INT32)
            call.attr["f"].func.name = initialize.name
            for key in ("config_proto", "config", "executor_type"):
                call.attr[key].s = b""
            calls.append(call.name)
        if calls:
            init = self.meta.signature_def["__saved_model_init_op"].outputs["__saved_model_init_op"]
            inputs = ["^" + c for c in calls] + (["^" + init.name] if init.name else [])
            init.name = graph.node.add(name=_unique("table_init", taken), op="NoOp", input=inputs).name

    def _write_restore_ops(self, graph, taken):
        """The graph's restore op, as TensorFlow's C++ loader (TF Serving, tf.compat.v1 loader, other
        languages' bindings) runs it: ``saver_def.restore_op_name`` fed the checkpoint prefix at
        ``saver_def.filename_tensor_name``; a RestoreV2 of every variable's key, each assigned to its
        VarHandleOp. TensorFlow 2's Python loader and ember's restore through the object graph instead."""
        variables = [node_id for node_id, obj in enumerate(self.objects) if isinstance(obj, Variable)]
        if not variables:
            return
        string = 7  # DT_STRING

        def strings(name, values):
            node = graph.node.add(name=_unique(name, taken), op="Const")
            node.attr["dtype"].type = string
            value = node.attr["value"].tensor
            value.dtype = string
            value.tensor_shape.dim.add(size=len(values))
            value.string_val.extend(values)
            return node.name

        filename = graph.node.add(name=_unique("saver_filename", taken), op="Placeholder")
        filename.attr["dtype"].type = string
        filename.attr["shape"].shape.SetInParent()
        names = strings("save/tensor_names", [self.keys[i].encode() for i in variables])
        slices = strings("save/shape_and_slices", [b""] * len(variables))
        restore = graph.node.add(name=_unique("save/RestoreV2", taken), op="RestoreV2",
                                 input=[filename.name, names, slices])
        restore.attr["dtypes"].list.type.extend(_gd.as_datatype_enum(self.objects[i].dtype) for i in variables)
        assigns = []
        for k, node_id in enumerate(variables):
            assign = graph.node.add(name=_unique(f"save/AssignVariableOp_{k}", taken), op="AssignVariableOp",
                                    input=[self.handle_nodes[node_id], f"{restore.name}:{k}"])
            assign.attr["dtype"].type = _gd.as_datatype_enum(self.objects[node_id].dtype)
            assigns.append(assign.name)
        restore_all = graph.node.add(name=_unique("save/restore_all", taken), op="NoOp",
                                     input=["^" + a for a in assigns])
        reads = []
        for k, node_id in enumerate(variables):
            read = graph.node.add(name=_unique(f"save/ReadVariableOp_{k}", taken), op="ReadVariableOp",
                                  input=[self.handle_nodes[node_id]])
            read.attr["dtype"].type = _gd.as_datatype_enum(self.objects[node_id].dtype)
            reads.append(read.name)
        save = graph.node.add(name=_unique("save/SaveV2", taken), op="SaveV2",
                              input=[filename.name, names, slices] + reads)
        save.attr["dtypes"].list.type.extend(_gd.as_datatype_enum(self.objects[i].dtype) for i in variables)
        saved = graph.node.add(name=_unique("save/control_dependency", taken), op="Identity",
                               input=[filename.name, "^" + save.name])
        saved.attr["T"].type = string
        self.meta.saver_def.filename_tensor_name = f"{filename.name}:0"
        self.meta.saver_def.save_tensor_name = f"{saved.name}:0"
        self.meta.saver_def.restore_op_name = restore_all.name

    def _write_signature_defs(self):
        for key, (placeholders, call_name, outputs) in self.signature_nodes.items():
            sig = self.meta.signature_def[key]
            sig.method_name = PREDICT_METHOD_NAME
            for n, pname, spec in placeholders:
                sig.inputs[n].CopyFrom(_tensor_info(f"{pname}:0", spec.dtype, spec.shape))
            for i, o in enumerate(sorted(outputs)):
                sig.outputs[o].CopyFrom(_tensor_info(f"{call_name}:{i}", outputs[o].dtype, outputs[o].shape))

    def write(self, export_dir):
        saved_model = SavedModel(saved_model_schema_version=SCHEMA_VERSION)
        saved_model.meta_graphs.add().CopyFrom(self.meta)
        data = saved_model.SerializeToString()
        parent = os.path.dirname(os.path.abspath(export_dir))
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(export_dir)}.tmp-", dir=parent)
        try:
            os.makedirs(os.path.join(tmp, "variables"))
            os.makedirs(os.path.join(tmp, "assets"))
            for node_id, (_, filename) in self.assets.items():
                _copy_asset(self.objects[node_id], os.path.join(tmp, "assets", filename))
            if [id(o) for o in checkpoint.walk_objects(self.root, self._walk_children)[0]] != [
                    id(o) for o in self.objects]:
                raise errors.InternalError(None, None, "saved_model.save: the object graph changed while saving")
            checkpoint.save_objects(self.root, os.path.join(tmp, "variables", "variables"), self._walk_children,
                                    sync=True)
            _write_file(os.path.join(tmp, "saved_model.pb"), data)
            fingerprint = FingerprintDef(saved_model_checksum=_hash64(data), uuid=str(uuid.uuid4()))
            fingerprint.graph_def_program_hash = _hash64(self.meta.graph_def.SerializeToString(deterministic=True))
            fingerprint.signature_def_hash = _hash64(b"".join(
                self.meta.signature_def[k].SerializeToString(deterministic=True) for k in sorted(self.meta.signature_def)))
            fingerprint.saved_object_graph_hash = _hash64(self.meta.object_graph_def.SerializeToString(deterministic=True))
            fingerprint.version.producer = 1
            _write_file(os.path.join(tmp, "fingerprint.pb"), fingerprint.SerializeToString())
            _fsync_dir(tmp)
            _replace_dir(tmp, export_dir)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


def _unique_file_name(asset, taken):
    """The asset's file name inside ``assets/``: its own base name, with ``_1``, ``_2``... before the
    extension when another asset already took it."""
    base = os.path.basename(os.path.normpath(asset._ember_path)) or "asset"
    stem, ext = os.path.splitext(base)
    name, k = base, 0
    while name in taken:
        k += 1
        name = f"{stem}_{k}{ext}"
    taken.add(name)
    return name


def _copy_asset(asset, target):
    source = asset._ember_path
    if os.path.isdir(source):
        shutil.copytree(source, target)
    elif os.path.isfile(source):
        shutil.copyfile(source, target)
    else:
        raise errors.NotFoundError(None, None, f"saved_model.save: the asset file {source!r} does not exist")


# Note [Saving assets]
# A function that reads asset.asset_path captured the path as an eager string tensor, which the GraphDef
# exporter writes as a Const inside the function's FunctionDef. TensorFlow instead passes an asset's path
# as an argument bound to the asset object (bound_inputs), so that a loader can hand in the path of the
# copy in assets/ wherever the directory has moved. _AssetArguments turns each such Const (a scalar string
# holding an asset's path) into a trailing DT_STRING argument of its function, and threads the argument
# through every PartitionedCall/StatefulPartitionedCall that reaches the function, up to the concrete
# functions, whose bound_inputs then name the asset after their variables. A Const inside a function
# that control flow calls (an If branch, a While body) stays a Const: its caller's operands are fixed by
# the op, so such a function reads the original path (docs/saved_model.md says so).


class _AssetArguments:
    def __init__(self, writer):
        self.writer = writer
        self.library = writer.library
        self.asset_of_path = {}
        for node_id in writer.assets:
            self.asset_of_path.setdefault(writer.objects[node_id].asset_path.numpy(), node_id)
        self.args = {}  # FunctionDef name -> {asset node id: argument name}, in argument order
        self.passed = {}  # (function, call node name) -> asset node ids already passed along

    def rewrite(self):
        control_flow_bodies = self._control_flow_bodies()
        for name, function in self.library.items():
            if name not in control_flow_bodies:
                self._constants_to_arguments(function)
        changed = True
        while changed:
            changed = False
            for name, function in self.library.items():
                if name not in control_flow_bodies:
                    changed |= self._pass_along(function)
        for name, saved in self.writer.concrete.items():
            saved.bound_inputs.extend(self.args.get(name, {}))

    def _control_flow_bodies(self):
        bodies = set()
        for function in self.library.values():
            for node in function.node_def:
                for key, value in node.attr.items():
                    if node.op in _CALL_OPS and key == "f":
                        continue
                    if value.HasField("func"):
                        bodies.add(value.func.name)
                    bodies.update(f.name for f in value.list.func)
        return bodies

    def _argument(self, function, asset, base):
        args = self.args.setdefault(function.signature.name, {})
        if asset not in args:
            taken = {a.name for a in function.signature.input_arg} | {n.name for n in function.node_def}
            name = _unique(base, taken)
            function.signature.input_arg.add(name=name, type=_gd.DT_STRING)
            args[asset] = name
        return args[asset]

    def _constants_to_arguments(self, function):
        renamed = {}
        for node in list(function.node_def):
            if node.op != "Const" or node.attr["dtype"].type != _gd.DT_STRING:
                continue
            value = node.attr["value"].tensor
            if len(value.tensor_shape.dim) != 0 or len(value.string_val) != 1:
                continue
            asset = self.asset_of_path.get(value.string_val[0])
            if asset is None:
                continue
            function.node_def.remove(node)
            renamed[node.name] = self._argument(function, asset, _sanitize(node.name).lower())
        if not renamed:
            return
        for node in function.node_def:
            for i, source in enumerate(node.input):
                control = source.startswith("^")
                base = source[1:] if control else source.split(":")[0]
                if base in renamed:
                    node.input[i] = ("^" if control else "") + renamed[base]
        for key, source in list(function.ret.items()):
            if source.split(":")[0] in renamed:
                function.ret[key] = renamed[source.split(":")[0]]

    def _pass_along(self, function):
        changed = False
        for node in function.node_def:
            if node.op not in _CALL_OPS:
                continue
            callee = self.args.get(node.attr["f"].func.name, {})
            passed = self.passed.setdefault((function.signature.name, node.name), [])
            for asset in callee:
                if asset in passed:
                    continue
                node.input.append(self._argument(function, asset, "asset_path"))
                node.attr["Tin"].list.type.append(_gd.DT_STRING)
                passed.append(asset)
                changed = True
        return changed


class _SignatureMap:
    """The root's "signatures" object."""


def _reachable_functions(loader, name):
    from ember.saved_model.loader import _reachable

    return _reachable(loader.library, name, loader.fail)


def _caller(cf):
    """A trace that only calls ``cf`` with its arguments: its GraphDef's library holds ``cf`` as
    TensorFlow writes a function (captured variables as trailing DT_RESOURCE arguments)."""
    from ember import polymorphic_function

    wrapper = polymorphic_function.Function(lambda *args: cf._call_flat(list(args)), name="saved_model_export",
                                            autograph=False, input_signature=list(cf._input_specs))
    return wrapper.get_concrete_function()


def _input_signature(cf):
    positional, keywords = cf.structured_input_signature
    return (tuple(positional), dict(keywords))


def _output_signature(cf):
    outputs = iter(cf.graph.outputs)
    flat = []
    for t in cf._template:
        if t is _RESULT:
            out = next(outputs)
            flat.append(TensorSpec(out.shape, out.dtype, None))
        else:
            flat.append(t if t is None or isinstance(t, (bool, int, float, str)) else None)
    return nest.pack_sequence_as(cf._structured_outputs, flat)


def _function_spec(fn):
    import inspect

    spec = protos.message_class("FunctionSpec")()
    try:
        full = inspect.getfullargspec(fn.python_function)
        args = list(full.args)
        is_method = bool(args) and args[0] == "self" and hasattr(fn.python_function, "__self__")
        values = {"args": args, "varargs": full.varargs, "varkw": full.varkw,
                  "defaults": tuple(full.defaults) if full.defaults else None, "kwonlyargs": list(full.kwonlyargs),
                  "kwonlydefaults": dict(full.kwonlydefaults) if full.kwonlydefaults else None, "annotations": {}}
        fullargspec = structure.StructuredValue()
        fullargspec.named_tuple_value.name = "FullArgSpec"
        for key in ("args", "varargs", "varkw", "defaults", "kwonlyargs", "kwonlydefaults", "annotations"):
            try:
                encoded = structure.encode(values[key])
            except ValueError:
                encoded = structure.encode(None)
            fullargspec.named_tuple_value.values.add(key=key).value.CopyFrom(encoded)
        spec.fullargspec.CopyFrom(fullargspec)
        spec.is_method = is_method
    except TypeError:
        pass
    if fn.input_signature is not None:
        spec.input_signature.CopyFrom(structure.encode(tuple(fn.input_signature)))
    else:
        spec.input_signature.none_value.SetInParent()
    return spec


def _tensor_info(name, dtype, shape):
    return TensorInfo(name=name, dtype=_gd.as_datatype_enum(dtype), tensor_shape=structure.shape_proto(shape))


def _hash64(data):
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little")


def _write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _exchange(a, b):
    """Atomically swaps two paths (Linux renameat2 RENAME_EXCHANGE); False where the system cannot."""
    import ctypes

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        renameat2 = libc.renameat2
    except (OSError, AttributeError):
        return False
    at_fdcwd, rename_exchange = -100, 2
    renameat2.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    return False


def _replace_dir(tmp, export_dir):
    """Moves the finished ``tmp`` to ``export_dir``. An existing SavedModel there is swapped with it in one
    atomic step (RENAME_EXCHANGE), so at every moment ``export_dir`` holds the old SavedModel or the new one;
    where the file system cannot swap, the old one is moved aside first (a short window with neither)."""
    if os.path.lexists(export_dir):
        if not os.path.isdir(export_dir) or os.path.islink(export_dir):
            raise errors.FailedPreconditionError(None, None, f"saved_model.save: {export_dir} exists and is not "
                                                 f"a directory")
        if _exchange(tmp, export_dir):
            _fsync_dir(os.path.dirname(os.path.abspath(export_dir)))
            shutil.rmtree(tmp, ignore_errors=True)  # now the old SavedModel
            return
        old = tempfile.mkdtemp(prefix=f".{os.path.basename(export_dir)}.old-", dir=os.path.dirname(tmp))
        os.rmdir(old)
        os.rename(export_dir, old)
        os.rename(tmp, export_dir)
        _fsync_dir(os.path.dirname(os.path.abspath(export_dir)))
        shutil.rmtree(old, ignore_errors=True)
        return
    os.rename(tmp, export_dir)
    _fsync_dir(os.path.dirname(os.path.abspath(export_dir)))
