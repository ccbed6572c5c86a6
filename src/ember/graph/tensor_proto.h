// TensorFlow's TensorProto, TensorShapeProto and DataType (tensorflow/core/framework/{tensor,tensor_shape,
// types}.proto) as ember's tensors, shapes and dtypes, on the hand-written wire format of proto_wire.h.
// graph_def.cc uses them for Const values and shape attributes.
#pragma once

#include <span>
#include <vector>

#include "ember/core/tensor_impl.h"
#include "ember/graph/proto_wire.h"

namespace ember {

/// TensorFlow's DataType enum value for `dtype` (DT_FLOAT = 1, DT_HALF = 19, ...).
int tf_datatype(DType dtype);
/// The ember dtype of a TensorFlow DataType enum value; false for types ember lacks (DT_STRING, ...).
bool dtype_from_tf_datatype(int64_t datatype, DType* out);

/// Writes the fields of a TensorShapeProto: a dim per dimension (-1 for an unknown one), or unknown_rank.
void write_shape_proto(proto::Writer& w, std::span<const int64_t> dims, bool unknown_rank);
/// Writes the fields of a TensorProto holding `t`: dtype, tensor_shape and raw little-endian tensor_content.
void write_tensor_proto(proto::Writer& w, const TensorImpl& t);

/// Reads the TensorShapeProto in `field`: its dims (-1 unknown), or unknown_rank (and no dims). A rank past
/// kMaxRank, a dim below -1, or known dims whose product overflows int64 (TensorFlow's limit of 2^63 - 1
/// elements) is InvalidArgument.
Status read_shape_proto(const proto::Field& field, std::vector<int64_t>& dims, bool& unknown_rank);

/// InvalidArgument when the known dims of a shape from bytes multiply past int64 (in order, as TensorFlow
/// checks them), so that no later size computation on it can overflow.
Status check_shape_size(std::span<const int64_t> dims);
/// Reads the TensorProto in `field` into a new tensor: from tensor_content, or from the typed value field
/// of its dtype (float_val, int_val, half_val, ...), where the last value repeats to fill the shape and no
/// values mean zeros, as TensorFlow reads them. A splat may expand to 1 GiB at most.
Status read_tensor_proto(const proto::Field& field, TensorRef& out);

}  // namespace ember
