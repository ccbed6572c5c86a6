"""The protobuf message classes of proto/ember/*.proto, for every module that reads or writes them.

``message_class("GraphDef")`` (or ``"ember.proto.GraphDef"``) gives a real ``protobuf`` message class whose
bytes are TensorFlow's (the files carry TensorFlow's names and field numbers under the package
``ember.proto``). graph_def.py (GraphDef), ember.train (checkpoints) and ember.saved_model build their
classes here, so there is one pool and one way of making them.
"""

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from ember import _C


# Note [Python message classes from the C++ descriptors]
# The classes are made at import from the FileDescriptorSet compiled into ember's C++ extension
# (_C.graph_def_descriptors(), every proto/ember file with its imports first), not from protoc-generated
# _pb2.py files. Generated Python code must stay inside the window of gencode versions its runtime accepts:
# protobuf promises only a window, and the runtime here is whatever pip version TensorFlow or the user
# installs. Descriptors have no such version. And since they are the very descriptors the C++ codec was
# compiled from, the two languages cannot disagree on a field, and no generated file has to be built,
# installed and kept in step. They go into a pool of their own, so they never meet TensorFlow's
# registrations (its messages are "tensorflow.*"; ember's "ember.proto.*") in the default pool.
def _make_pool():
    files = descriptor_pb2.FileDescriptorSet.FromString(_C.graph_def_descriptors())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.AddSerializedFile(file.SerializeToString())
    return pool


POOL = _make_pool()
_CLASSES = {}


def message_class(name):
    """The message class of ``name`` ("GraphDef", "TrackableObjectGraph.TrackableObject", or a full name)."""
    full_name = name if "." in name and name.startswith(("ember.", "google.")) else "ember.proto." + name
    cls = _CLASSES.get(full_name)
    if cls is None:
        cls = _CLASSES[full_name] = message_factory.GetMessageClass(POOL.FindMessageTypeByName(full_name))
    return cls


def enum_values(name):
    """{value name: number} of the enum ``name`` ("DataType")."""
    return {value.name: value.number for value in POOL.FindEnumTypeByName("ember.proto." + name).values}
