"""How ``saved_model.save`` writes a lookup table: TensorFlow 2.21's layout, learnt from its own SavedModels.

A table is a ``resource`` node of the object graph with three functions as children, each a FunctionDef
of the library written here by hand (ember's traced functions never create a table: Note [Table-creating
ops] in src/ember/ops/lookup.cc):

- ``_create_resource``: the table-creating node (HashTableV2 or MutableHashTableV2, with a ``shared_name``
  unique to this save) returned through an Identity, a DT_RESOURCE;
- ``_initialize``: for a StaticHashTable, its initializer's LookupTableImportV2 of the keys and values
  (captured constants) or InitializeTableFromTextFileV2 of the vocabulary file (an asset, child
  ``_filename`` of the initializer); for a HashTable of a loaded SavedModel, LookupTableImportV2 of its
  entries; nothing for a MutableHashTable; it returns the int32 1;
- ``_destroy_resource``: returns 1 (TensorFlow 2.21 writes no DestroyResourceOp either).

A MutableHashTable's entries are in the checkpoint (``<path>/.ATTRIBUTES/table-keys`` and ``-values``,
written by ember.train.checkpoint), and its ``saveable_objects["table"]`` names two more functions,
``save_fn`` (the checkpoint key -> the names, slices and tensors to save) and ``restore_fn`` (the restored
keys and values -> LookupTableImportV2), through which TensorFlow's loader restores them. Each function's
captured inputs (the table, constants, the asset) are its ``bound_inputs``, as for traced functions.
A DenseHashTable (or a loaded one) is a MutableDenseHashTableV2 taking its empty and deleted keys from two
Consts beside it; its checkpoint holds TensorFlow's bucket array (lookup/dense_buckets.py), which the same
save and restore functions export and import.
"""

import uuid

from ember import dtypes
from ember.framework import graph_def as _gd
from ember.framework import protos
from ember.lookup.tables import DenseHashTable, KeyValueTensorInitializer, TextFileInitializer
from ember.lookup.tables import _Table
from ember.saved_model import structure
from ember.saved_model.asset import Asset
from ember.saved_model.loader import RestoredTable

FunctionDef = protos.message_class("FunctionDef")
StructuredValue = protos.message_class("StructuredValue")


def is_table(obj):
    return isinstance(obj, (_Table, RestoredTable))


def _is_mutable(table):
    return table._handle.is_mutable


class TableFunction:
    """One of a table's functions: its FunctionDef, its captured inputs (``bound``: objects of the object
    graph, in argument order after the user's), its input and output structures, and, for the save and
    restore functions, its argument keywords. An object of the object graph (a ``bare_concrete_function``)
    whose children are the constants it captured (``capture_<i>``, as TensorFlow names them)."""

    def __init__(self, function_def, bound, input_signature, output_signature, keywords=()):
        self.function_def = function_def
        self.bound = bound
        self.input_signature = input_signature
        self.output_signature = output_signature
        self.keywords = list(keywords)

    @property
    def name(self):
        return self.function_def.signature.name

    def children(self):
        return [(f"capture_{i}", b) for i, b in enumerate(self.bound) if not is_table(b) and not isinstance(b, Asset)]


class TableFunctions:
    """The functions of each table of one save, made once per table (the object graph and the checkpoint
    walk them twice, and must meet the same objects)."""

    def __init__(self):
        self._of = {}  # id(table) -> {role: TableFunction}
        self._keep = []  # the tables, so their ids stay theirs while saving

    def of(self, table):
        functions = self._of.get(id(table))
        if functions is None:
            functions = _functions(table)
            self._of[id(table)] = functions
            self._keep.append(table)
        return functions

    def children(self, table):
        """The table's children in the object graph: its own, then its functions."""
        functions = self.of(table)
        return [(role, functions[role]) for role in ("_create_resource", "_initialize", "_destroy_resource")]

    def saveables(self, table):
        """(save TableFunction, restore TableFunction) of a MutableHashTable that checkpoints its entries."""
        functions = self.of(table)
        if "save_fn" not in functions:
            return None
        return functions["save_fn"], functions["restore_fn"]


def _dense_layout(table):
    """(empty_key, deleted_key, initial_num_buckets) of a DenseHashTable, ember's or a loaded one; None for
    another table."""
    if isinstance(table, DenseHashTable):
        return table._empty_key.numpy(), table._deleted_key.numpy(), table._initial_num_buckets
    if isinstance(table, RestoredTable) and table._reserved_keys:
        return (*table._reserved_keys, table._initial_num_buckets)
    return None


def creator_nodes(table, name, in_function):
    """The NodeDefs that create ``table`` (in ``_create_resource``, and in the MetaGraphDef's graph for
    TensorFlow's C++ loader), of the library's message classes: the creating node last, after a dense
    table's Consts of its empty and deleted keys (named for a FunctionDef's body when ``in_function``)."""
    graph = _gd.GraphDef()
    dense = _dense_layout(table)
    inputs = []
    if dense is not None:
        for role, key in zip(("empty_key", "deleted_key"), dense[:2]):
            const = graph.node.add(name=role if in_function else f"{name}/{role}", op="Const")
            const.attr["dtype"].type = _gd.as_datatype_enum(table.key_dtype)
            const.attr["value"].tensor.CopyFrom(_gd.make_tensor_proto(key, dtype=table.key_dtype))
            inputs.append(f"{const.name}:output:0" if in_function else const.name)
    node = graph.node.add(name=name, input=inputs)
    node.op = "MutableDenseHashTableV2" if dense is not None else \
        "MutableHashTableV2" if _is_mutable(table) else "HashTableV2"
    node.attr["key_dtype"].type = _gd.as_datatype_enum(table.key_dtype)
    node.attr["value_dtype"].type = _gd.as_datatype_enum(table.value_dtype)
    node.attr["shared_name"].s = table._ember_shared_name.encode()
    if dense is not None and dense[2] is not None:
        node.attr["initial_num_buckets"].i = int(dense[2])
    return list(graph.node)


def _functions(table):
    # A shared name unique to this save: TensorFlow shares tables by name within a process, and two models
    # loaded there must not meet in one table.
    table._ember_shared_name = f"{_sanitize(table.name)}_{uuid.uuid4().hex[:16]}"
    functions = {"_create_resource": _create(table), "_destroy_resource": _does_nothing("destroyer")}
    initializer = getattr(table, "_initializer", None)
    if isinstance(table, RestoredTable) and not _is_mutable(table):
        # A loaded HashTable, however it was filled: its entries, as constants.
        functions["_initialize"] = _initialize_from_tensors(table, *table.export())
    elif isinstance(initializer, KeyValueTensorInitializer):
        functions["_initialize"] = _initialize_from_tensors(table, initializer._keys, initializer._values)
    elif isinstance(initializer, TextFileInitializer):
        functions["_initialize"] = _initialize_from_file(table, initializer)
    else:
        functions["_initialize"] = _does_nothing("initializer")  # a MutableHashTable: empty, or restored
    if _is_mutable(table) and getattr(table, "_checkpoint", True):
        functions["save_fn"] = _save_fn(table)
        functions["restore_fn"] = _restore_fn(table)
    return functions


_unique_number = iter(range(1, 1 << 62))


def _function_def(base, inputs, outputs):
    f = FunctionDef()
    f.signature.name = f"__inference_{base}_{next(_unique_number)}"
    for name, dtype in inputs:
        f.signature.input_arg.add(name=name, type=dtype)
    for name, dtype in outputs:
        f.signature.output_arg.add(name=name, type=dtype)
    f.signature.is_stateful = True
    f.attr["_construction_context"].s = b"kEagerRuntime"
    return f


def _node(f, name, op, inputs=(), **attrs):
    node = f.node_def.add(name=name, op=op, input=list(inputs))
    for key, value in attrs.items():
        if isinstance(value, int) and key.startswith("T") or key in ("dtype", "key_dtype", "value_dtype"):
            node.attr[key].type = value
        elif isinstance(value, bool):
            node.attr[key].b = value
        elif isinstance(value, int):
            node.attr[key].i = value
        elif isinstance(value, str):
            node.attr[key].s = value.encode()
        else:
            node.attr[key].tensor.CopyFrom(value)
    return node


def _finish(f, effects, results):
    """Returns ``results`` (node outputs, one per output_arg) after ``effects`` (node names) have run, as
    TensorFlow writes it: Identity nodes waiting on a NoOp that waits on the effects."""
    if effects:
        _node(f, "NoOp", "NoOp", ["^" + e for e in effects])
        for e in effects:
            f.control_ret[e] = e
            f.signature.control_output.append(e)
    for arg, (source, dtype) in zip(f.signature.output_arg, results):
        identity = _node(f, f"Identity{arg.name[len('identity'):]}", "Identity",
                         [source] + (["^NoOp"] if effects else []), T=dtype)
        f.ret[arg.name] = f"{identity.name}:output:0"


def _returns_one(base, inputs, effects, f=None):
    """A function returning the int32 1 after ``effects`` (TensorFlow's initializers and destroyers)."""
    f = f or _function_def(base, inputs, [("identity", _gd.DT_INT32)])
    _node(f, "Const", "Const", dtype=_gd.DT_INT32, value=_gd.make_tensor_proto(1))
    _finish(f, effects, [("Const:output:0", _gd.DT_INT32)])
    return f


def _does_nothing(base):
    return TableFunction(_returns_one(base, [], []), [], _no_arguments(), _spec(_gd.DT_INT32))


def _spec(dtype, shape=()):
    """A StructuredValue TensorSpec of a DataType enum (DT_RESOURCE too, which ember has no dtype for)."""
    value = StructuredValue()
    value.tensor_spec_value.dtype = dtype
    value.tensor_spec_value.shape.CopyFrom(structure.shape_proto(shape))
    return value


def _no_arguments():
    return structure.encode(((), {}))


def _create(table):
    f = _function_def("creator", [], [("identity", _gd.DT_RESOURCE)])
    for node in creator_nodes(table, "table", in_function=True):
        f.node_def.add().CopyFrom(node)
    _finish(f, ["table"], [("table:table_handle:0", _gd.DT_RESOURCE)])
    return TableFunction(f, [], _no_arguments(), _spec(_gd.DT_RESOURCE))


def _initialize_from_tensors(table, keys, values):
    key_type, value_type = _gd.as_datatype_enum(table.key_dtype), _gd.as_datatype_enum(table.value_dtype)
    f = _function_def("initializer", [("table_handle", _gd.DT_RESOURCE), ("keys", key_type),
                                      ("values", value_type)], [("identity", _gd.DT_INT32)])
    _node(f, "key_value_init/LookupTableImportV2", "LookupTableImportV2", ["table_handle", "keys", "values"],
          Tin=key_type, Tout=value_type)
    _returns_one(None, None, ["key_value_init/LookupTableImportV2"], f)
    return TableFunction(f, [table, keys, values], _no_arguments(), _spec(_gd.DT_INT32))


def _initialize_from_file(table, initializer):
    f = _function_def("initializer", [("asset_filepath", _gd.DT_STRING), ("table_handle", _gd.DT_RESOURCE)],
                      [("identity", _gd.DT_INT32)])
    vocab_size = -1 if initializer._vocab_size is None else initializer._vocab_size
    _node(f, "text_file_init/InitializeTableFromTextFileV2", "InitializeTableFromTextFileV2",
          ["table_handle", "asset_filepath"], key_index=initializer._key_index,
          value_index=initializer._value_index, vocab_size=vocab_size, delimiter=initializer._delimiter,
          offset=initializer._offset)
    _returns_one(None, None, ["text_file_init/InitializeTableFromTextFileV2"], f)
    return TableFunction(f, [initializer._filename_asset, table], _no_arguments(), _spec(_gd.DT_INT32))


def _save_fn(table):
    """checkpoint_key -> [{name, slice_spec, tensor}] for the keys and the values, as TensorFlow's
    SaveableObject of a MutableHashTable."""
    key_type, value_type = _gd.as_datatype_enum(table.key_dtype), _gd.as_datatype_enum(table.value_dtype)
    outputs = [("identity", _gd.DT_STRING), ("identity_1", _gd.DT_STRING), ("identity_2", key_type),
               ("identity_3", _gd.DT_STRING), ("identity_4", _gd.DT_STRING), ("identity_5", value_type)]
    f = _function_def("save_fn", [("checkpoint_key", _gd.DT_STRING), ("table_handle", _gd.DT_RESOURCE)], outputs)
    export = _node(f, "LookupTableExportV2", "LookupTableExportV2", ["table_handle"], Tkeys=key_type,
                   Tvalues=value_type)
    results = []
    for k, suffix in enumerate(("-keys", "-values")):
        _node(f, f"suffix_{k}", "Const", dtype=_gd.DT_STRING, value=_gd.make_tensor_proto(suffix))
        _node(f, f"name_{k}", "Add", ["checkpoint_key", f"suffix_{k}:output:0"], T=_gd.DT_STRING)
        _node(f, f"slice_{k}", "Const", dtype=_gd.DT_STRING, value=_gd.make_tensor_proto(""))
        results += [(f"name_{k}:z:0", _gd.DT_STRING), (f"slice_{k}:output:0", _gd.DT_STRING),
                    (f"{export.name}:{('keys', 'values')[k]}:0", (key_type, value_type)[k])]
    _finish(f, [export.name], results)
    signature = structure.encode(((_named_spec("checkpoint_key", dtypes.string),), {}))
    output = StructuredValue()
    for k, dtype in enumerate((key_type, value_type)):
        fields = output.list_value.values.add().dict_value.fields
        fields["name"].CopyFrom(_spec(_gd.DT_STRING))
        fields["slice_spec"].CopyFrom(_spec(_gd.DT_STRING))
        fields["tensor"].CopyFrom(_spec(dtype, None))
    return TableFunction(f, [table], signature, output, keywords=["checkpoint_key"])


def _restore_fn(table):
    key_type, value_type = _gd.as_datatype_enum(table.key_dtype), _gd.as_datatype_enum(table.value_dtype)
    f = _function_def("restore_fn", [("restored_tensors_0", key_type), ("restored_tensors_1", value_type),
                                     ("table_handle", _gd.DT_RESOURCE)], [("identity", _gd.DT_INT32)])
    _node(f, "table_restore/LookupTableImportV2", "LookupTableImportV2",
          ["table_handle", "restored_tensors_0", "restored_tensors_1"], Tin=key_type, Tout=value_type)
    _returns_one(None, None, ["table_restore/LookupTableImportV2"], f)
    signature = structure.encode(((_named_spec("restored_tensors_0", table.key_dtype, None),
                                   _named_spec("restored_tensors_1", table.value_dtype, None)), {}))
    return TableFunction(f, [table], signature, _spec(_gd.DT_INT32),
                         keywords=["restored_tensors_0", "restored_tensors_1"])


def _named_spec(name, dtype, shape=()):
    from ember.framework.tensor_spec import TensorSpec

    return TensorSpec(shape, dtype, name)


def _sanitize(name):
    return "".join(c if c.isalnum() or c in "_-." else "_" for c in name) or "table"
