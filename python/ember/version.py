"""``tf.version``: ember's own version strings under TensorFlow's names, for code that reads them.

GRAPH_DEF_VERSION is the producer version of the GraphDefs ember writes (graph/graph_def.h), TensorFlow
2.21's; ember reads GraphDefs of any version, hence minimum versions of 0, as TensorFlow's."""
from ember import _C

VERSION = "0.1.0"
GIT_VERSION = "v" + VERSION
COMPILER_VERSION = _C.compiler_version
GRAPH_DEF_VERSION = _C.graph_def_version
GRAPH_DEF_VERSION_MIN_CONSUMER = 0
GRAPH_DEF_VERSION_MIN_PRODUCER = 0
