// TensorFlow's TensorProto, TensorShapeProto and DataType (proto/ember/tensor.proto, TensorFlow's field
// numbers) as ember's tensors, shapes and dtypes. The bytes are protobuf's business (libprotobuf); this
// file decides what a message means: which typed value list a dtype uses, how a splat fills a shape, and
// which sizes from untrusted bytes are refused before anything is allocated.
#pragma once

#include <span>
#include <vector>

#include "ember/core/tensor_impl.h"
#include "ember/tensor.pb.h"

namespace ember {

/// TensorFlow's DataType enum value for `dtype` (DT_FLOAT = 1, DT_HALF = 19, ...).
int tf_datatype(DType dtype);
/// The ember dtype of a TensorFlow DataType enum value; false for types ember lacks (DT_STRING, ...).
bool dtype_from_tf_datatype(int64_t datatype, DType* out);

/// Fills `out` with a dim per dimension (-1 for an unknown one), or unknown_rank.
void to_shape_proto(std::span<const int64_t> dims, bool unknown_rank, proto::TensorShapeProto* out);
/// Fills `out` with `t`: dtype, tensor_shape and raw little-endian tensor_content.
void to_tensor_proto(const TensorImpl& t, proto::TensorProto* out);

/// The dims of `shape` (-1 unknown), or unknown_rank (and no dims). A rank past kMaxRank, a dim below -1,
/// or known dims whose product overflows int64 (TensorFlow's limit of 2^63 - 1 elements) is
/// InvalidArgument.
Status from_shape_proto(const proto::TensorShapeProto& shape, std::vector<int64_t>& dims, bool& unknown_rank);

/// InvalidArgument when the known dims of a shape from bytes multiply past int64 (in order, as TensorFlow
/// checks them), so that no later size computation on it can overflow.
Status check_shape_size(std::span<const int64_t> dims);
/// A new tensor holding `proto`: from tensor_content, or from the typed value field of its dtype
/// (float_val, int_val, half_val, ...), where the last value repeats to fill the shape and no values mean
/// zeros, as TensorFlow reads them. A splat may expand to 1 GiB at most.
Status from_tensor_proto(const proto::TensorProto& proto, TensorRef& out);

}  // namespace ember
