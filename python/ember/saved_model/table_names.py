"""The shared names of the tables a SavedModel creates, scoped to one load as TensorFlow's loader scopes them.

TensorFlow's Python loader (``load`` of a TensorFlow 2 SavedModel, and of a TensorFlow 1 one) rewrites the
``shared_name`` of every resource-creating node of the MetaGraphDef, at the top level and in its function
library, before it runs anything: the name (or the node's name where it is empty) gets a suffix unique to
the load, ``_load_<n>``, so nodes naming one table share it within a load and two loads of one SavedModel
never share (run against TensorFlow 2.21: a MutableHashTable inserted into through one load is empty in
another). A HashTableV2 node that does not set ``use_node_name_sharing`` also gets a suffix of its own,
so it shares with no other node, not even one of the same ``shared_name``; a call that runs the node again
finds the same table. ember's table registry holds op-created tables by (container, shared name) for the
whole process (docs/lookup.md), so the loaders apply the same rewrite to the table-creating nodes; the
other resources (variables) are bound by the loaders themselves and keep their names.
"""

import itertools

TABLE_CREATORS = ("HashTableV2", "MutableHashTableV2", "MutableDenseHashTableV2")

_loads = itertools.count(1)
_private_tables = itertools.count(1)


def scope_table_names_to_load(graph_def):
    """Rewrites, in place, the shared names of the table-creating nodes of ``graph_def`` (a GraphDef) and
    of its function library to names unique to this load."""
    suffix = f"_load_{next(_loads)}"
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes.extend(function.node_def)
    for node in nodes:
        if node.op not in TABLE_CREATORS:
            continue
        name = node.attr["shared_name"].s or node.name.encode()
        node_suffix = suffix
        if node.op == "HashTableV2" and not node.attr["use_node_name_sharing"].b:
            node_suffix += f"_{next(_private_tables)}"
        node.attr["shared_name"].s = name + node_suffix.encode()
