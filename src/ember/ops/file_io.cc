// Whole-file reads and writes with TensorFlow's names: ReadFile(filename) -> contents and
// WriteFile(filename, contents), behind tf.io.read_file / write_file. A SavedModel's assets are read this way
// (docs/saved_model.md, Assets).
//
// Both are stateful: the file may change between calls, so a ReadFile of a constant path must not be folded
// at optimization time, and a WriteFile keeps its place in program order (automatic control dependencies).
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "ember/ops/families.h"
#include "ember/ops/registry.h"

namespace ember {
namespace {

Status check_scalar_string(const InferContext& ctx, int i, const char* what) {
  const TensorSpec& in = ctx.inputs[i];
  if (in.dtype != DType::kString)
    return invalid_argument(ctx.op->name, ": ", what, " must be a string tensor, got ", dtype_name(in.dtype));
  if (in.shape.rank_known() && in.shape.rank() != 0)
    return invalid_argument(ctx.op->name, ": input ", what,
                            " tensor must be scalar, but had shape: ", in.shape.to_string());
  return Status::OK();
}

// TensorFlow's messages: "<path>; No such file or directory" (NotFound), "<path>; Is a directory"
// (FailedPrecondition), other errors Unavailable.
Status file_error(const std::string& op, const std::string& path, int err) {
  const Code code = err == ENOENT   ? Code::kNotFound
                    : err == EISDIR ? Code::kFailedPrecondition
                    : err == EACCES ? Code::kPermissionDenied
                                    : Code::kUnavailable;
  return make_error(code, op, ": ", path, "; ", std::strerror(err));
}

Status check_kernel_scalar(const KernelContext& ctx, int i, const char* what) {
  if (ctx.input(i).num_elements() != 1 || ctx.input(i).shape().rank() != 0)
    return invalid_argument(ctx.op->name, ": input ", what,
                            " tensor must be scalar, but had shape: ", ctx.input(i).shape().to_string());
  return Status::OK();
}

Status read_file_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_scalar_string(ctx, 0, "filename"));
  ctx.outputs.push_back({DType::kString, Shape()});
  return Status::OK();
}

Status read_file_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_kernel_scalar(ctx, 0, "filename"));
  const std::string& path = ctx.input(0).data<std::string>()[0];
  struct stat info {};
  if (::stat(path.c_str(), &info) != 0) return file_error("ReadFile", path, errno);
  if (S_ISDIR(info.st_mode)) return file_error("ReadFile", path, EISDIR);
  std::ifstream in(path, std::ios::binary);
  if (!in) return file_error("ReadFile", path, errno ? errno : EIO);
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return file_error("ReadFile", path, errno ? errno : EIO);
  ctx.output(0).mutable_data<std::string>()[0] = std::move(contents).str();
  return Status::OK();
}

Status write_file_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_scalar_string(ctx, 0, "filename"));
  return check_scalar_string(ctx, 1, "contents");
}

// As TensorFlow's: the file's directory is created when missing, and the file is replaced.
Status write_file_kernel(KernelContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_kernel_scalar(ctx, 0, "filename"));
  EMBER_RETURN_IF_ERROR(check_kernel_scalar(ctx, 1, "contents"));
  const std::string& path = ctx.input(0).data<std::string>()[0];
  const std::string& contents = ctx.input(1).data<std::string>()[0];
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  std::error_code ignored;  // a failure shows when the file is opened
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return file_error("WriteFile", path, errno ? errno : EIO);
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) return file_error("WriteFile", path, errno ? errno : EIO);
  return Status::OK();
}

}  // namespace

void register_file_io_ops(OpRegistry& r) {
  OpBuilder("ReadFile")
      .doc("The whole contents of the file filename (a scalar string). read_file(\"/tmp/a.txt\") -> b\"...\"")
      .input_fixed("filename", dtype_bit(DType::kString))
      .output("contents")
      .type_var(dtype_bit(DType::kString))
      .dispatch_on_output()
      .flags(kStateful | kNotDifferentiable)
      .shape(&read_file_shape)
      .kernel(dtype_bit(DType::kString), &read_file_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("WriteFile")
      .doc(
          "Writes contents to the file filename (both scalar strings), replacing it and creating its "
          "directory. write_file(\"/tmp/a.txt\", \"hi\")")
      .input_fixed("filename", dtype_bit(DType::kString))
      .input_fixed("contents", dtype_bit(DType::kString))
      .type_var(dtype_bit(DType::kString))
      .dispatch_on_input(0)
      .flags(kStateful | kNotDifferentiable)
      .shape(&write_file_shape)
      .kernel(dtype_bit(DType::kString), &write_file_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
