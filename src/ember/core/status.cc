#include "ember/core/status.h"

namespace ember {
namespace {
const char* code_name(Code code) {
  switch (code) {
    case Code::kOk:
      return "OK";
    case Code::kCancelled:
      return "CANCELLED";
    case Code::kUnknown:
      return "UNKNOWN";
    case Code::kInvalidArgument:
      return "INVALID_ARGUMENT";
    case Code::kDeadlineExceeded:
      return "DEADLINE_EXCEEDED";
    case Code::kNotFound:
      return "NOT_FOUND";
    case Code::kAlreadyExists:
      return "ALREADY_EXISTS";
    case Code::kPermissionDenied:
      return "PERMISSION_DENIED";
    case Code::kResourceExhausted:
      return "RESOURCE_EXHAUSTED";
    case Code::kFailedPrecondition:
      return "FAILED_PRECONDITION";
    case Code::kAborted:
      return "ABORTED";
    case Code::kOutOfRange:
      return "OUT_OF_RANGE";
    case Code::kUnimplemented:
      return "UNIMPLEMENTED";
    case Code::kInternal:
      return "INTERNAL";
    case Code::kUnavailable:
      return "UNAVAILABLE";
    case Code::kDataLoss:
      return "DATA_LOSS";
    case Code::kUnauthenticated:
      return "UNAUTHENTICATED";
  }
  return "UNKNOWN";
}
}  // namespace

std::string Status::to_string() const {
  if (ok()) return "OK";
  return std::string(code_name(code_)) + ": " + message_;
}

}  // namespace ember
