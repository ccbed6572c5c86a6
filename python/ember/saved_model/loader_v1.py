"""Loading a TensorFlow 1 SavedModel: one with no object graph, whose MetaGraphDef's GraphDef holds the
whole program at its top level (Placeholders, a VarHandleOp per variable, the saver's ops) and whose
``signature_def`` names graph tensors. TensorFlow 2 loads such a model as an object with ``signatures``,
``variables`` and ``prune``; so does ember:

- each VarHandleOp becomes an ``ember.Variable`` holding its value in ``variables/variables``, a name-based
  checkpoint whose key for a variable is what the saver's restore graph assigns it (``AssignVariableOp``
  of the handle from ``RestoreV2:k``: ``tensor_names[k]``), or the variable's name when no restore op
  mentions it (the C++ loader reads keys the same way);
- the init op (the ``__saved_model_init_op`` signature, else the ``saved_model_main_op`` or
  ``legacy_init_op`` collection: a table initializer) runs once, pruned and imported as a signature is;
- the string tensor an asset names (``asset_file_def``, or TensorFlow 1's ``saved_model_assets``
  collection) holds the path of the file's copy in ``<export_dir>/assets/``, wherever the directory moved;
- a signature is the graph pruned to what its outputs reach, imported with ``ember.graph_util`` (each
  VarHandleOp a resource Placeholder bound to its Variable) and carved from its input tensors to its
  output tensors; it is called with its inputs by keyword and returns a dict, as TensorFlow's.

Each import makes the graph's tables anew or finds them by shared name; the loader has scoped those names
to the load (table_names.py), so the init op and every signature of one load share their tables, and
another load has its own.
"""

import os

from ember import errors
from ember.framework import graph_def as _gd
from ember.framework import protos
from ember.framework.tensor import Tensor, convert_to_tensor
from ember.framework.tensor_spec import TensorSpec
from ember.function_graph import NewGraphFunction
from ember.saved_model import structure
from ember.variables import Variable

INIT_OP_SIGNATURE = "__saved_model_init_op"


def _varint(data, at):
    value, shift = 0, 0
    while True:
        if at >= len(data) or shift > 63:
            raise ValueError("a truncated varint")
        byte = data[at]
        value |= (byte & 0x7F) << shift
        at, shift = at + 1, shift + 7
        if byte < 0x80:
            return value, at


def _length_delimited_fields(data):
    """[(field number, bytes)] of a serialized message holding only length-delimited fields."""
    out, at = [], 0
    while at < len(data):
        key, at = _varint(data, at)
        if key & 7 != 2:
            raise ValueError(f"field {key >> 3} has wire type {key & 7}, not a length-delimited one")
        size, at = _varint(data, at)
        if at + size > len(data):
            raise ValueError("a field runs past the end")
        out.append((key >> 3, data[at:at + size]))
        at += size
    return out


def _node_of(name):
    name = name[1:] if name.startswith("^") else name
    return name.split(":")[0]


def _output_of(name):
    _, _, index = name.partition(":")
    return int(index) if index.isdigit() else 0


class LoadedV1:
    """What ``ember.saved_model.load`` returns for a TensorFlow 1 SavedModel."""

    def __init__(self, loader):
        self._loader = loader
        self.signatures = dict(loader.signatures)
        self.variables = list(loader.variables.values())
        self.tensorflow_version = loader.meta.meta_info_def.tensorflow_version
        self.tensorflow_git_version = loader.meta.meta_info_def.tensorflow_git_version

    @property
    def trainable_variables(self):
        return [v for v in self.variables if v.trainable]

    def prune(self, feeds, fetches):
        """A function from the tensors named ``feeds`` to those named ``fetches`` (names or lists of names)."""
        return self._loader.carve(feeds, fetches)


class V1Signature:
    """A signature of a TensorFlow 1 SavedModel: called with its inputs by keyword (or positionally, in the
    order of its sorted input keys), returns {output key: tensor}."""

    def __init__(self, name, inputs, outputs, function):
        self.name = name
        self._inputs = inputs  # [(key, TensorSpec)], sorted by key
        self._outputs = outputs  # [(key, TensorSpec)], sorted by key
        self._function = function

    @property
    def structured_input_signature(self):
        return (), {key: spec for key, spec in self._inputs}

    @property
    def structured_outputs(self):
        return {key: spec for key, spec in self._outputs}

    def __call__(self, *args, **kwargs):
        keys = [key for key, _ in self._inputs]
        if len(args) > len(keys):
            raise TypeError(f"signature '{self.name}' takes {len(keys)} input(s) ({', '.join(keys)}), got "
                            f"{len(args)} positional argument(s)")
        given = dict(zip(keys, args))
        for key, value in kwargs.items():
            if key not in keys:
                raise TypeError(f"signature '{self.name}' has no input '{key}'; its inputs are {', '.join(keys)}")
            if key in given:
                raise TypeError(f"signature '{self.name}': input '{key}' given twice")
            given[key] = value
        missing = [key for key in keys if key not in given]
        if missing:
            raise TypeError(f"signature '{self.name}' is missing input(s) {', '.join(missing)}")
        feeds = []
        for key, spec in self._inputs:
            value = given[key]
            t = value if isinstance(value, Tensor) else convert_to_tensor(value, dtype_hint=spec.dtype)
            if t.dtype != spec.dtype or not spec.shape.is_compatible_with(t.shape):
                raise errors.InvalidArgumentError(
                    None, None, f"signature '{self.name}' input '{key}': expected {spec.dtype.name} of shape "
                    f"{spec.shape}, got {t.dtype.name} of shape {t.shape}")
            feeds.append(t)
        out = self._function(*feeds) if feeds else self._function()
        out = out if isinstance(out, (list, tuple)) else [out]
        return {key: value for (key, _), value in zip(self._outputs, out)}


class LoaderV1:
    def __init__(self, export_dir, path, meta, fail):
        import os

        from ember.train.checkpoint_reader import CheckpointReader

        self.meta = meta
        self.fail = fail
        self.export_dir = export_dir
        self.nodes = {}
        for node in meta.graph_def.node:
            if node.name in self.nodes:
                raise fail(f"the graph has two nodes named '{node.name}'")
            self.nodes[node.name] = node
        handles = [node for node in meta.graph_def.node if node.op == "VarHandleOp"]
        self.variables = {}
        if handles:
            prefix = os.path.join(os.fspath(export_dir), "variables", "variables")
            if not os.path.exists(prefix + ".index"):
                raise fail("the graph has variables, but there is no variables checkpoint",
                           errors.NotFoundError)
            reader = CheckpointReader(prefix)
            for node in handles:
                key = self._key(node)
                if not reader.has_tensor(key):
                    raise fail(f"variable '{node.name}': the checkpoint has no entry '{key}'", errors.NotFoundError)
                value = reader.get_tensor(key)
                dtype = self._dtype(node.attr["dtype"].type, f"variable '{node.name}'")
                if value.dtype != dtype.as_numpy_dtype:
                    raise fail(f"variable '{node.name}': the graph says {dtype.name}, the checkpoint's '{key}' "
                               f"holds {value.dtype}")
                shape = self._shape(node.attr["shape"].shape, f"variable '{node.name}'")
                if not shape.is_compatible_with(value.shape):
                    raise fail(f"variable '{node.name}': the graph says shape {shape}, the checkpoint's '{key}' "
                               f"holds {list(value.shape)}")
                self.variables[node.name] = Variable(value, name=node.name, shape=shape)  # the graph's shape
        self.asset_files = self._asset_files()
        self._run_init_op()
        self.signatures = {}
        for name in sorted(meta.signature_def):
            if name == INIT_OP_SIGNATURE:
                continue
            sig = meta.signature_def[name]
            inputs = [(key, self._spec(sig.inputs[key], f"signature '{name}' input '{key}'"))
                      for key in sorted(sig.inputs)]
            outputs = [(key, self._spec(sig.outputs[key], f"signature '{name}' output '{key}'"))
                       for key in sorted(sig.outputs)]
            function = self.carve([sig.inputs[k].name for k, _ in inputs], [sig.outputs[k].name for k, _ in outputs],
                                  single=False)
            self.signatures[name] = V1Signature(name, inputs, outputs, function)

    def _asset_files(self):
        """{node name: path of its file's copy in ``assets/``} for the string tensors that name the assets:
        the MetaGraphDef's AssetFileDefs and those TensorFlow 1's builder keeps in the ``saved_model_assets``
        collection (an any_list of google.protobuf.Any, which ember's CollectionDef keeps as unknown field 5)."""
        asset_file_def = protos.message_class("AssetFileDef")
        files = list(self.meta.asset_file_def)
        if "saved_model_assets" in self.meta.collection_def:
            from google.protobuf import unknown_fields

            try:
                for field in unknown_fields.UnknownFieldSet(self.meta.collection_def["saved_model_assets"]):
                    if field.field_number != 5:
                        continue
                    for _, packed in _length_delimited_fields(field.data):  # AnyList.value: Any
                        value = [v for number, v in _length_delimited_fields(packed) if number == 2]
                        files.append(asset_file_def.FromString(value[0] if value else b""))
            except Exception as e:  # noqa: BLE001 - a malformed Any is the file's fault
                raise self.fail(f"the saved_model_assets collection is not a list of AssetFileDefs ({e})") from None
        paths = {}
        for file in files:
            parts = file.filename.replace("\\", "/").split("/")
            if not file.filename or os.path.isabs(file.filename) or any(p in ("", ".", "..") for p in parts):
                raise self.fail(f"asset '{file.tensor_info.name}': the file name {file.filename!r} is not a plain "
                                f"name inside assets/")
            paths[_node_of(file.tensor_info.name)] = os.path.join(os.fspath(self.export_dir), "assets",
                                                                  file.filename)
        return paths

    def _init_op(self):
        """The name of the op that initializes the model's tables, found where TensorFlow's loader finds it:
        the ``__saved_model_init_op`` signature, else the ``saved_model_main_op`` or ``legacy_init_op``
        collection; None when there is none."""
        if INIT_OP_SIGNATURE in self.meta.signature_def:
            outputs = self.meta.signature_def[INIT_OP_SIGNATURE].outputs
            if INIT_OP_SIGNATURE in outputs:
                return _node_of(outputs[INIT_OP_SIGNATURE].name)
        for key in ("saved_model_main_op", "legacy_init_op"):
            if key in self.meta.collection_def and self.meta.collection_def[key].node_list.value:
                return _node_of(self.meta.collection_def[key].node_list.value[0])
        return None

    def _run_init_op(self):
        """Runs the init op once, as TensorFlow's loader does: it fills the tables that the signatures, imported
        after it, find again by their shared names (table_names.py)."""
        init = self._init_op()
        if init is None:
            return
        if init not in self.nodes:
            raise self.fail(f"the init op '{init}' is not in the graph")
        # An op with no outputs is not a fetch: a constant that waits for it is.
        done = _gd.NodeDef(name=f"{init}/ember_init_done", op="Const", input=[f"^{init}"])
        done.attr["dtype"].type = _gd.DT_INT32
        done.attr["value"].tensor.CopyFrom(_gd.TensorProto(dtype=_gd.DT_INT32, int_val=[0]))
        self.carve([], [f"{done.name}:0"], extra_nodes=[done])()

    def _spec(self, info, what):
        if info.WhichOneof("encoding") != "name":
            raise self.fail(f"{what}: ember reads dense tensors named in a TensorInfo; this one is a "
                            f"{info.WhichOneof('encoding')}", errors.UnimplementedError)
        if _node_of(info.name) not in self.nodes:
            raise self.fail(f"{what} names tensor '{info.name}', which is not in the graph")
        return TensorSpec(self._shape(info.tensor_shape, what), self._dtype(info.dtype, what), _node_of(info.name))

    def _dtype(self, datatype, what):
        try:
            return _gd.as_dtype(datatype)
        except (TypeError, ValueError) as e:
            raise self.fail(f"{what}: {e}") from None

    def _shape(self, proto, what):
        try:
            return structure.shape_from_proto(proto)
        except (TypeError, ValueError) as e:
            raise self.fail(f"{what}: its shape is not one ({e})") from None

    def _key(self, handle):
        """The checkpoint entry the saver's restore graph assigns to ``handle`` (or its shared name)."""
        for node in self.nodes.values():
            if node.op != "AssignVariableOp" or len(node.input) < 2 or _node_of(node.input[0]) != handle.name:
                continue
            value = node.input[1]
            for _ in range(64):
                source = self.nodes.get(_node_of(value))
                if source is None:
                    break
                if source.op == "Identity" and source.input:
                    value = source.input[0]
                    continue
                if source.op != "RestoreV2" or len(source.input) < 2:
                    break
                names = self.nodes.get(_node_of(source.input[1]))
                index = _output_of(value)
                if names is None or names.op != "Const" or index >= len(names.attr["value"].tensor.string_val):
                    break
                return names.attr["value"].tensor.string_val[index].decode("utf-8", "replace")
        shared = handle.attr["shared_name"].s.decode("utf-8", "replace") if "shared_name" in handle.attr else ""
        return shared or handle.name

    def carve(self, feeds, fetches, single=None, extra_nodes=()):
        """The graph (with ``extra_nodes``) pruned to what ``fetches`` reach, imported, and carved from ``feeds``
        to ``fetches``."""
        from ember import graph_util

        nodes = dict(self.nodes, **{node.name: node for node in extra_nodes})
        feeds_list = [feeds] if isinstance(feeds, str) else list(feeds)
        fetches_list = [fetches] if isinstance(fetches, str) else list(fetches)
        for name in feeds_list + fetches_list:
            if _node_of(name) not in nodes:
                raise self.fail(f"prune: tensor '{name}' is not in the graph")
        reached, pending = set(), [_node_of(name) for name in fetches_list]
        while pending:
            name = pending.pop()
            if name in reached:
                continue
            reached.add(name)
            node = nodes.get(name)
            if node is None:
                raise self.fail(f"a node reached from the outputs reads '{name}', which is not in the graph")
            pending.extend(_node_of(i) for i in node.input)
        graph = _gd.GraphDef()
        graph.versions.CopyFrom(self.meta.graph_def.versions)
        graph.library.CopyFrom(self.meta.graph_def.library)
        input_map = {}
        for node in list(self.meta.graph_def.node) + list(extra_nodes):
            if node.name not in reached:
                continue
            out = graph.node.add()
            if node.name in self.asset_files:  # the asset's path: its copy in this directory
                out.name, out.op = node.name, "Const"
                out.attr["dtype"].type = _gd.DT_STRING
                out.attr["value"].tensor.CopyFrom(_gd.TensorProto(
                    dtype=_gd.DT_STRING, tensor_shape=_gd.TensorShapeProto(),
                    string_val=[self.asset_files[node.name].encode()]))
            elif node.op == "VarHandleOp":
                out.name, out.op = node.name, "Placeholder"
                out.attr["dtype"].type = _gd.DT_RESOURCE
                input_map[node.name + ":0"] = self.variables[node.name]
            else:
                out.CopyFrom(node)
        try:
            imported = graph_util.import_graph_def(graph, input_map=input_map or None)
            function = NewGraphFunction(imported, feeds_list, fetches_list)
        except errors.OpError as e:  # the GraphDef importer's error, naming the SavedModel
            raise self.fail(e.message, type(e)) from None
        if single is False and len(fetches_list) == 1:
            function._single = False
        return function
