"""``ember.train.Checkpoint``: object-based checkpoints in TensorFlow's layout.

Saving walks the dependency graph (ember/trackable.py) breadth first from the Checkpoint, numbering the
objects in the order TensorFlow does, and writes one bundle: each variable's value under
``<path>/.ATTRIBUTES/VARIABLE_VALUE`` (the path of names from the root, "/" and "." escaped as TensorFlow
escapes them) and the TrackableObjectGraph under ``_CHECKPOINTABLE_OBJECT_GRAPH``.

Restoring matches the saved graph against the live objects by names, from the root down, never by
variable names, and assigns each matched variable its value. Saved objects with no live match yet stay
pending: when one appears later (a layer built after the restore, an optimizer's slots made on its first
step), it gets its value then (restore-on-create; see ember/trackable.py). The status ``restore`` returns
checks how complete the match was, as TensorFlow's does.
"""

import os
import weakref

from ember import _C, dtypes, errors, trackable
from ember.framework import protos
from ember.init_scope import init_scope
from ember.train import checkpoint_management
from ember.train.checkpoint_reader import OBJECT_GRAPH_KEY, CheckpointReader, DT_STRING
from ember.variables import Variable

TrackableObjectGraph = protos.message_class("TrackableObjectGraph")
VARIABLE_VALUE = "VARIABLE_VALUE"


def escape_name(name):
    """TensorFlow's escaping of one name in a key: "." -> "..", "/" -> ".S" (the SavedModel writer names
    its objects the same way)."""
    return name.replace(".", "..").replace("/", ".S")


def walk_objects(root, children=trackable.children):
    """The dependency graph breadth first, numbered as TensorFlow numbers it: (objects, paths, edges);
    objects[0] is the root, paths[i] the names from the root to objects[i], edges[i] the (name, node id) of
    objects[i]'s children. An object reachable twice is one node. ``children(obj)`` -> [(name, child)] may
    add nodes (SavedModel adds its functions, so both graphs share node ids)."""
    objects, paths, edges = [root], [()], [[]]
    ids = {id(root): 0}
    i = 0
    while i < len(objects):
        for name, child in children(objects[i]):
            node = ids.get(id(child))
            if node is None:
                node = ids[id(child)] = len(objects)
                objects.append(child)
                paths.append(paths[i] + (name,))
                edges.append([])
            edges[i].append((name, node))
        i += 1
    return objects, paths, edges


def variable_key(path, attribute=VARIABLE_VALUE):
    """The checkpoint key of the variable at ``path`` (names from the root), or of another saved
    ``attribute`` of the object there (a lookup table's "table")."""
    return "/".join(escape_name(name) for name in path) + "/.ATTRIBUTES/" + attribute


def _saved_tensors(obj):
    """{suffix: tensor} an object other than a variable saves under its attribute (a MutableHashTable's
    "-keys" and "-values", as TensorFlow's), or {}."""
    saver = getattr(obj, "_ember_checkpoint_tensors", None)
    return saver() if saver is not None else {}


def _full_name(variable):
    name = variable.name
    return name[:-2] if name.endswith(":0") else name


def save_objects(root, prefix, children=trackable.children, sync=True):
    """Writes the checkpoint of ``root``'s dependency graph (``walk_objects(root, children)``) to ``prefix``
    (SavedModel: ``<dir>/variables/variables``); returns ``prefix``. Atomic whatever happens to the process;
    with ``sync`` also fsynced, so that it survives a power loss (docs/checkpoint.md)."""
    if _C.in_trace():
        raise RuntimeError("Checkpoint saving runs eagerly: call it outside ember.function")
    objects, paths, edges = walk_objects(root, children)
    graph = TrackableObjectGraph()
    writer = _C.BundleWriter(os.fspath(prefix), sync)
    saved = [None if trackable.is_variable(obj) else _saved_tensors(obj) for obj in objects]
    has_values = [trackable.is_variable(obj) or bool(saved[i]) for i, obj in enumerate(objects)]
    changed = True
    while changed:  # a node has values when anything below it does (the graph may have cycles)
        changed = False
        for i, children in enumerate(edges):
            if not has_values[i] and any(has_values[child] for _, child in children):
                has_values[i] = changed = True
    for i, obj in enumerate(objects):
        node = graph.nodes.add()
        for name, child in edges[i]:
            node.children.add(node_id=child, local_name=name)
        if trackable.is_variable(obj):
            key = variable_key(paths[i])
            node.attributes.add(name=VARIABLE_VALUE, full_name=_full_name(obj), checkpoint_key=key)
            with init_scope():
                writer.add(key, obj.read_value())
        elif saved[i]:
            key = variable_key(paths[i], obj._ember_saved_attribute)
            node.attributes.add(name=obj._ember_saved_attribute, checkpoint_key=key)
            for suffix, tensor in saved[i].items():
                writer.add(key + suffix, tensor)
        node.has_checkpoint_values.value = has_values[i]
    writer.add_strings(OBJECT_GRAPH_KEY, [graph.SerializeToString()])
    writer.finish()
    return os.fspath(prefix)


class _Restore:
    """One restore in progress: the saved graph, which saved nodes are bound to which live objects, and
    which values have been assigned. Lives as long as its Checkpoint (and its status)."""

    def __init__(self, root, reader):
        self.root = root
        self.reader = reader
        self.prefix = reader.prefix
        try:
            data = reader._string(OBJECT_GRAPH_KEY)
        except errors.NotFoundError:
            raise errors.NotFoundError(
                None, None, f"{self.prefix}: the checkpoint has no object graph ({OBJECT_GRAPH_KEY}); it was "
                "written by a name-based saver (tf.compat.v1.train.Saver), which ember does not read") from None
        self.graph = TrackableObjectGraph()
        try:
            self.graph.ParseFromString(data)
        except Exception as e:  # protobuf's DecodeError
            raise errors.DataLossError(None, None, f"{self.prefix}: the object graph is not a valid "
                                       f"TrackableObjectGraph ({e})") from None
        count = len(self.graph.nodes)
        if count == 0:
            raise errors.DataLossError(None, None, f"{self.prefix}: the object graph has no nodes")
        for i, node in enumerate(self.graph.nodes):
            for ref in node.children:
                if not 0 <= ref.node_id < count:
                    raise errors.DataLossError(None, None, f"{self.prefix}: object graph node {i} names child "
                                               f"node {ref.node_id}, but there are {count} nodes")
            for slot in node.slot_variables:
                for n in (slot.original_variable_node_id, slot.slot_variable_node_id):
                    if not 0 <= n < count:
                        raise errors.DataLossError(None, None, f"{self.prefix}: object graph node {i} has a "
                                                   f"slot variable reference to node {n} of {count}")
        self.matched = {0: root}  # saved node id -> live object
        self.restored = set()  # saved node ids whose values were assigned
        self._pending_ref = None

    # ---- matching
    def match_new_objects(self):
        """Binds every saved node reachable by names from the root whose live object exists now, and
        assigns the values of those not assigned yet."""
        queue = list(self.matched)
        seen = set(queue)
        while queue:
            node_id = queue.pop(0)
            obj = self.matched[node_id]
            node = self.graph.nodes[node_id]
            if node.attributes and node_id not in self.restored:
                self._assign(node_id, node, obj)
            if not node.children:
                continue
            live = dict(trackable.children(obj))
            adapt = getattr(obj, "_ember_restore_children", None)
            if adapt is not None:  # an object whose saved layout has another form (an optimizer from tf_keras)
                live = adapt(live, {ref.local_name: ref.node_id for ref in node.children}, self._saved_children)
            for ref in node.children:
                child = live.get(ref.local_name)
                if child is None or ref.node_id in seen:
                    continue
                if ref.node_id not in self.matched:
                    self.matched[ref.node_id] = child
                seen.add(ref.node_id)
                queue.append(ref.node_id)
        self._update_pending()

    def _saved_children(self, node_id):
        return {ref.local_name: ref.node_id for ref in self.graph.nodes[node_id].children}

    def _assign(self, node_id, node, obj):
        if hasattr(obj, "_ember_restore_tensors"):
            self._assign_saved_tensors(node_id, node, obj)
            return
        if not trackable.is_variable(obj):
            return  # values of objects ember cannot hold (TensorFlow's Python state, ...): left unconsumed
        attribute = next((a for a in node.attributes if a.name == VARIABLE_VALUE), None)
        if attribute is None:
            return
        key = attribute.checkpoint_key
        if not self.reader.has_tensor(key):
            raise errors.NotFoundError(None, None, f"{self.prefix}: the object graph names the key {key!r}, "
                                       "which the checkpoint does not hold")
        if self.reader._bundle.tf_dtype(key) == DT_STRING and obj.dtype.name != "string":
            raise TypeError(f"{self.prefix}: {key!r} holds strings; the variable {obj.name} is {obj.dtype.name}")
        value = self.reader._tensor(key)
        if value.dtype != obj.dtype:
            raise TypeError(f"{self.prefix}: {key!r} holds {value.dtype.name}, but the variable {obj.name} it "
                            f"restores is {obj.dtype.name}")
        # A variable whose declared shape leaves dimensions unknown takes the saved value's, as TensorFlow's.
        if not obj.shape.is_compatible_with(value.shape):
            raise ValueError(f"Received incompatible tensor with shape {tuple(value.shape.as_list())} when "
                             f"attempting to restore variable with shape {tuple(obj.shape.as_list())} and name "
                             f"{key} (checkpoint {self.prefix})")
        with init_scope():
            obj.assign(value)
        self.restored.add(node_id)

    def _assign_saved_tensors(self, node_id, node, obj):
        attribute = next((a for a in node.attributes if a.name == obj._ember_saved_attribute), None)
        if attribute is None:
            return
        tensors = {}
        for suffix in obj._ember_saved_suffixes:
            key = attribute.checkpoint_key + suffix
            if not self.reader.has_tensor(key):
                raise errors.NotFoundError(None, None, f"{self.prefix}: the object graph names the key {key!r}, "
                                           "which the checkpoint does not hold")
            tensors[suffix] = self.reader._tensor(key)
        obj._ember_restore_tensors(tensors)
        self.restored.add(node_id)

    def unmatched_with_values(self):
        return [i for i, node in enumerate(self.graph.nodes) if node.attributes and i not in self.restored]

    def _update_pending(self):
        waiting = bool(self.unmatched_with_values())
        if waiting and self._pending_ref is None:
            self._pending_ref = weakref.ref(self)
            trackable._pending.append(self._pending_ref)
        elif not waiting and self._pending_ref is not None:
            if self._pending_ref in trackable._pending:
                trackable._pending.remove(self._pending_ref)
            self._pending_ref = None

    def __del__(self):
        ref = getattr(self, "_pending_ref", None)
        if ref is not None and ref in trackable._pending:
            trackable._pending.remove(ref)


def _describe(graph, node_id):
    node = graph.nodes[node_id]
    keys = [a.checkpoint_key for a in node.attributes]
    return f"node {node_id} ({', '.join(keys) or 'no values'})"


class CheckpointLoadStatus:
    """What ``Checkpoint.restore`` returns: checks of how completely the checkpoint matched."""

    def __init__(self, restore, root):
        self._restore = restore
        self._root = root

    def _live_variables(self):
        objects, paths, _ = walk_objects(self._root)
        return [(obj, path) for obj, path in zip(objects, paths) if trackable.is_variable(obj)]

    def assert_consumed(self):
        """Every saved value was assigned and every live variable got one; AssertionError otherwise."""
        self.assert_existing_objects_matched()
        restore = self._restore
        for node_id in restore.unmatched_with_values():
            raise AssertionError(f"Unresolved object in checkpoint {restore.prefix}: "
                                 f"{_describe(restore.graph, node_id)}")
        return self

    def assert_existing_objects_matched(self):
        """Every live variable reachable from the root was assigned a saved value; AssertionError otherwise."""
        restore = self._restore
        restore.match_new_objects()  # objects that joined through a plain list or dict since
        bound = {id(obj) for node_id, obj in restore.matched.items() if node_id in restore.restored}
        missing = ["/".join(path) for obj, path in self._live_variables() if id(obj) not in bound]
        if missing:
            raise AssertionError(f"Found {len(missing)} Python objects that were not bound to checkpointed "
                                 f"values, likely due to changes in the Python program (checkpoint "
                                 f"{restore.prefix}): {missing}")
        return self

    def assert_nontrivial_match(self):
        """Something besides the root (and save_counter) matched; AssertionError otherwise."""
        restore = self._restore
        restore.match_new_objects()
        matched = [i for i in restore.matched if i != 0 and restore.matched[i] is not
                   getattr(self._root, "_save_counter", None)]
        if not matched:
            live = [p for _, p in self._live_variables()]
            if live:
                raise AssertionError(f"Nothing except the root object matched a checkpointed value "
                                     f"({restore.prefix}). Typically this means that the checkpoint does not "
                                     f"match the Python program. Unmatched objects: {['/'.join(p) for p in live]}")
            raise AssertionError(f"Nothing to load. No dependencies have been added to {self._root} yet.")
        return self

    def expect_partial(self):
        """Silences nothing ember would print; kept for TensorFlow's API."""
        return self

    def run_restore_ops(self, session=None):
        """Restores values into objects created since (eagerly, everything else already happened)."""
        self._restore.match_new_objects()

    def initialize_or_restore(self, session=None):
        self._restore.match_new_objects()


class InitializationOnlyStatus:
    """What ``restore(None)`` returns: there was nothing to restore."""

    def assert_consumed(self):
        raise AssertionError("No checkpoint specified (save_path=None); nothing is being restored.")

    assert_existing_objects_matched = assert_consumed
    assert_nontrivial_match = assert_consumed

    def expect_partial(self):
        return self

    def run_restore_ops(self, session=None):
        pass

    def initialize_or_restore(self, session=None):
        pass


class Checkpoint(trackable.Trackable):
    """``ember.train.Checkpoint(**objects)``: saves and restores the objects' variables, by path."""

    def __init__(self, root=None, **kwargs):
        objects = {}
        if root is not None:
            _check_trackable("root", root)
        for name, value in sorted(kwargs.items()):  # TensorFlow adds keyword objects in sorted order
            _check_trackable(name, value)
            objects[name] = value
        object.__setattr__(self, "_objects", objects)
        object.__setattr__(self, "_root", root)
        object.__setattr__(self, "_save_counter", None)
        object.__setattr__(self, "_last_restore", None)
        for name, value in kwargs.items():
            object.__setattr__(self, name, value)

    def __setattr__(self, name, value):
        if not name.startswith("_"):
            _check_trackable(name, value)
            self._objects[name] = value
        super().__setattr__(name, value)

    def _trackable_children(self):
        # With a root object, its own children come first and the keyword objects join them (TensorFlow
        # attaches them to the root).
        children = trackable.children(self._root) if self._root is not None else []
        children = children + list(self._objects.items())
        if self._save_counter is not None:
            children.append(("save_counter", self._save_counter))
        return children

    def _ensure_save_counter(self):
        if self._save_counter is None:
            with init_scope():
                object.__setattr__(self, "_save_counter",
                                   Variable(lambda: _C_int64_zero(), trainable=False, name="save_counter"))
        return self._save_counter

    @property
    def save_counter(self):
        """How many times ``save`` ran (an int64 Variable, made on first use)."""
        return self._ensure_save_counter()

    def write(self, file_prefix, options=None):
        """Writes a checkpoint at exactly ``file_prefix`` (no number, no state file); returns the prefix."""
        return save_objects(self, os.fspath(file_prefix), sync=bool(getattr(options, "experimental_sync", True)))

    def save(self, file_prefix, options=None):
        """Writes ``<file_prefix>-<n>`` for the next save_counter value n and records it in the directory's
        ``checkpoint`` state file; returns the path."""
        counter = self._ensure_save_counter()
        with init_scope():
            counter.assign_add(1)
        path = self.write(f"{os.fspath(file_prefix)}-{int(counter.numpy())}", options)
        checkpoint_management.update_checkpoint_state(os.path.dirname(path) or ".", path, [path])
        return path

    def read(self, save_path, options=None):
        """Restores from exactly ``save_path``; as ``restore``."""
        return self.restore(save_path, options)

    def restore(self, save_path, options=None):
        """Restores the values saved at ``save_path`` (a prefix or a directory) into the matching live
        objects, now or when they are created; returns a CheckpointLoadStatus."""
        if save_path is None:
            return InitializationOnlyStatus()
        path = os.fspath(save_path)
        if os.path.isdir(path):
            latest = checkpoint_management.latest_checkpoint(path)
            if latest is None:
                raise errors.NotFoundError(None, None, f"Failed to restore from checkpoint at {path}: the "
                                           "directory has no checkpoint state file naming an existing checkpoint")
            path = latest
        try:
            reader = CheckpointReader(path)
        except errors.NotFoundError as e:
            raise errors.NotFoundError(None, None, f"Failed to restore from checkpoint at {path}: {e}") from None
        restore = _Restore(self, reader)
        # The counter exists once something saved or reads it (TensorFlow makes it lazily): a checkpoint that
        # holds one restores it, one that does not (Checkpoint.write) leaves it out of assert_consumed.
        if any(ref.local_name == "save_counter" for ref in restore.graph.nodes[0].children):
            self._ensure_save_counter()
        object.__setattr__(self, "_last_restore", restore)
        restore.match_new_objects()
        return CheckpointLoadStatus(restore, self)


def _C_int64_zero():
    from ember.framework.tensor import convert_to_tensor
    return convert_to_tensor(0, dtype=dtypes.int64)


def _check_trackable(name, value):
    if not trackable.is_trackable_value(value):
        raise ValueError(f"`Checkpoint` was expecting a trackable object (an object derived from `Trackable`), "
                         f"got {value!r} for '{name}'. If you believe this object should be trackable (i.e. it "
                         "is part of the TensorFlow Python API and manages state), please open an issue.")
