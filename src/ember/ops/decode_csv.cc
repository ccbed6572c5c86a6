// DecodeCSV (tf.io.decode_csv; CsvDataset and make_csv_dataset parse their records with it): each string of
// `records` split into fields by TensorFlow's rules, one output per selected column, of the records' shape.
// Note [CSV records]: RFC 4180 quoting when use_quote_delim (a field that starts with '"' runs to the next
// '"' not doubled, which must end the record or precede the delimiter; "" inside stands for one '"'; an
// unquoted field may not hold a '"', nor, quoting or not, a CR or LF); an empty field or one equal to
// na_value takes the column's default and a column whose default is empty is required; numbers are read as
// TensorFlow's strtoX wrappers read them (surrounding spaces allowed, the whole field consumed, ints
// range-checked, floats by strtof/strtod, so "inf", "nan" and hexadecimal floats pass and overflow gives
// inf). Not differentiable. Python: python/ember/data/csv.py. Design: docs/data.md.
#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "ember/ops/families.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr DTypeSet kCsvTypes = dtype_bit(DType::kFloat32) | dtype_bit(DType::kFloat64) |
                               dtype_bit(DType::kInt32) | dtype_bit(DType::kInt64) |
                               dtype_bit(DType::kString);

enum CsvAttr { kOutType, kFieldDelim, kUseQuoteDelim, kNaValue, kSelectCols };

// Attribute checks, shared by the shape function and the kernel (a graph from a GraphDef skips the first).
Status check_csv_attrs(const AttrReader& a, size_t num_defaults) {
  const std::vector<DType>& types = a.attr_dtypes(kOutType);
  if (types.size() != num_defaults)
    return invalid_argument("DecodeCSV: OUT_TYPE has ", types.size(), " types but there are ", num_defaults,
                            " record_defaults");
  for (DType t : types)
    if ((kCsvTypes & dtype_bit(t)) == 0)
      return invalid_argument("DecodeCSV: OUT_TYPE must be float32, float64, int32, int64 or string, got ",
                              dtype_name(t));
  if (a.attr_string(kFieldDelim).size() != 1)
    return invalid_argument("DecodeCSV: field_delim should be only 1 char, got \"",
                            a.attr_string(kFieldDelim), "\"");
  const std::vector<int64_t>& select = a.attr_ints(kSelectCols);
  for (size_t i = 0; i < select.size(); ++i) {
    if (select[i] < 0) return invalid_argument("DecodeCSV: select_cols should be non-negative indices");
    if (i > 0 && select[i] <= select[i - 1])
      return invalid_argument("DecodeCSV: select_cols should be strictly increasing indices");
  }
  if (!select.empty() && select.size() != types.size())
    return invalid_argument("DecodeCSV: select_cols should match output size: ", select.size(),
                            " selected columns but ", types.size(), " record_defaults");
  return Status::OK();
}

Status decode_csv_shape(InferContext& ctx) {
  const size_t num_defaults = ctx.inputs.size() - 1;
  EMBER_RETURN_IF_ERROR(check_csv_attrs(ctx, num_defaults));
  const std::vector<DType>& types = ctx.attr_dtypes(kOutType);
  for (size_t i = 0; i < num_defaults; ++i) {
    const TensorSpec& d = ctx.inputs[i + 1];
    if (d.dtype != types[i])
      return invalid_argument("DecodeCSV: record_defaults[", i, "] is ", dtype_name(d.dtype),
                              " but OUT_TYPE[", i, "] is ", dtype_name(types[i]));
    if (d.shape.rank_known() && d.shape.rank() > 1)
      return invalid_argument("DecodeCSV: Each record default should be at most rank 1, record_defaults[", i,
                              "] has shape ", d.shape.to_string());
  }
  for (DType t : types) ctx.outputs.push_back({t, ctx.inputs[0].shape});
  return Status::OK();
}

// Splits `record` into `fields` (unquoted), TensorFlow's way (Note [CSV records]).
Status split_record(std::string_view record, char delim, bool use_quote_delim, int64_t row,
                    std::vector<std::string>& fields) {
  fields.clear();
  const size_t n = record.size();
  if (n == 0) return Status::OK();  // TensorFlow counts no fields in an empty record
  size_t i = 0;
  while (true) {
    std::string field;
    size_t j;
    if (use_quote_delim && record[i] == '"') {
      j = i + 1;
      while (true) {
        const size_t end = record.find('"', j);
        if (end == std::string_view::npos)
          return invalid_argument(
              "DecodeCSV: Quoted field has to end with quote followed by delim or end, in "
              "record ",
              row);
        field.append(record.substr(j, end - j));
        if (end + 1 < n && record[end + 1] == '"') {
          field.push_back('"');
          j = end + 2;
          continue;
        }
        j = end + 1;
        break;
      }
      if (j < n && record[j] != delim)
        return invalid_argument(
            "DecodeCSV: Quote inside a string has to be escaped by another quote, in record ", row);
    } else {
      j = record.find(delim, i);
      if (j == std::string_view::npos) j = n;
      field.assign(record.substr(i, j - i));
      if (field.find_first_of("\r\n") != std::string::npos ||
          (use_quote_delim && field.find('"') != std::string::npos))
        return invalid_argument("DecodeCSV: Unquoted fields cannot have quotes/CRLFs inside, in record ",
                                row);
    }
    fields.push_back(std::move(field));
    if (j >= n) return Status::OK();
    i = j + 1;
    if (i == n) {  // a trailing delimiter ends with an empty field
      fields.emplace_back();
      return Status::OK();
    }
  }
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'; }

std::string trimmed(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && is_space(s[b])) ++b;
  while (e > b && is_space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

bool parse_int(const std::string& field, int64_t low, int64_t high, int64_t* out) {
  const std::string s = trimmed(field);
  size_t k = (!s.empty() && (s[0] == '+' || s[0] == '-')) ? 1 : 0;
  if (k == s.size()) return false;
  for (size_t i = k; i < s.size(); ++i)
    if (s[i] < '0' || s[i] > '9') return false;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), nullptr, 10);
  if (errno == ERANGE || v < low || v > high) return false;
  *out = v;
  return true;
}

template <typename F>
bool parse_float(const std::string& field, F* out) {
  const std::string s = trimmed(field);
  if (s.empty()) return false;
  char* end = nullptr;
  // Out-of-range values are inf or 0 (errno ERANGE), as TensorFlow's reader gives them.
  const F v = std::is_same_v<F, float> ? static_cast<F>(std::strtof(s.c_str(), &end))
                                       : static_cast<F>(std::strtod(s.c_str(), &end));
  if (end != s.c_str() + s.size()) return false;
  *out = v;
  return true;
}

Status decode_csv_kernel(KernelContext& ctx) {
  const size_t num_defaults = ctx.inputs.size() - 1;
  EMBER_RETURN_IF_ERROR(check_csv_attrs(ctx, num_defaults));
  const std::vector<DType>& types = ctx.attr_dtypes(kOutType);
  const char delim = ctx.attr_string(kFieldDelim)[0];
  const bool use_quote_delim = ctx.attr_bool(kUseQuoteDelim);
  const std::string& na_value = ctx.attr_string(kNaValue);
  const std::vector<int64_t>& select = ctx.attr_ints(kSelectCols);
  for (size_t c = 0; c < num_defaults; ++c) {
    const TensorImpl& d = ctx.input(static_cast<int>(c + 1));
    if (d.dtype() != types[c])
      return invalid_argument("DecodeCSV: record_defaults[", c, "] is ", dtype_name(d.dtype()),
                              " but OUT_TYPE[", c, "] is ", dtype_name(types[c]));
    if (d.rank() > 1) return invalid_argument("DecodeCSV: Each record default should be at most rank 1");
    if (d.num_elements() > 1)
      return invalid_argument("DecodeCSV: There should only be 1 default per field but field ", c, " has ",
                              d.num_elements());
  }
  const TensorImpl& records = ctx.input(0);
  const int64_t n = records.num_elements();
  for (size_t c = 0; c < num_defaults; ++c)
    EMBER_RETURN_IF_ERROR(allocate_output(ctx, static_cast<int>(c), types[c], records.shape()));
  const std::string* text = records.data<std::string>();
  std::vector<std::string> fields;
  for (int64_t row = 0; row < n; ++row) {
    EMBER_RETURN_IF_ERROR(split_record(text[row], delim, use_quote_delim, row, fields));
    const int64_t have = static_cast<int64_t>(fields.size());
    if (select.empty() && have != static_cast<int64_t>(num_defaults))
      return invalid_argument("DecodeCSV: Expect ", num_defaults, " fields but have ", have, " in record ",
                              row);
    if (!select.empty() && have <= select.back()) {
      // TensorFlow counts the selected fields the record has.
      const int64_t found = std::count_if(select.begin(), select.end(), [&](int64_t c) { return c < have; });
      return invalid_argument("DecodeCSV: Expect ", num_defaults, " fields but have ", found, " in record ",
                              row, " (the record has ", have, " fields, select_cols needs ",
                              select.back() + 1, ")");
    }
    for (size_t c = 0; c < num_defaults; ++c) {
      const std::string& field = fields[select.empty() ? c : static_cast<size_t>(select[c])];
      const TensorImpl& def = ctx.input(static_cast<int>(c + 1));
      TensorImpl& out = ctx.output(static_cast<int>(c));
      if (field.empty() || field == na_value) {
        if (def.num_elements() == 0)
          return invalid_argument("DecodeCSV: Field ", c, " is required but missing in record ", row, "!");
        visit_dtype<kCsvTypes>(types[c],
                               [&]<typename T>() { out.mutable_data<T>()[row] = def.data<T>()[0]; });
        continue;
      }
      bool ok = true;
      switch (types[c]) {
        case DType::kString:
          out.mutable_data<std::string>()[row] = field;
          break;
        case DType::kInt32: {
          int64_t v = 0;
          ok = parse_int(field, std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max(), &v);
          out.mutable_data<int32_t>()[row] = static_cast<int32_t>(v);
          break;
        }
        case DType::kInt64:
          ok = parse_int(field, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max(),
                         &out.mutable_data<int64_t>()[row]);
          break;
        case DType::kFloat32:
          ok = parse_float(field, &out.mutable_data<float>()[row]);
          break;
        case DType::kFloat64:
          ok = parse_float(field, &out.mutable_data<double>()[row]);
          break;
        default:
          ok = false;
      }
      if (!ok)
        return invalid_argument("DecodeCSV: Field ", c, " in record ", row, " is not a valid ",
                                types[c] == DType::kFloat32 ? "float" : dtype_name(types[c]), ": ", field);
    }
  }
  return Status::OK();
}

}  // namespace

void register_csv_ops(OpRegistry& r) {
  OpBuilder("DecodeCSV")
      .doc(
          "Each string of records split into CSV fields (RFC 4180 quoting), one tensor per column of the "
          "records' shape; empty fields take the column's record_defaults entry. "
          "decode_csv([\"1,a\"], [[0], [\"\"]], OUT_TYPE=[int32, string]) == ([1], [\"a\"])")
      .input_fixed("records", dtype_bit(DType::kString))
      .input_fixed("record_defaults", kCsvTypes)
      .output("output")
      .type_var(dtype_bit(DType::kString))
      .attr("OUT_TYPE", AttrType::kDTypes)
      .attr("field_delim", AttrType::kString, std::string(","))
      .attr("use_quote_delim", AttrType::kBool, true)
      .attr("na_value", AttrType::kString, std::string(""))
      .attr("select_cols", AttrType::kInts, std::vector<int64_t>{})
      .flags(kVariadicInput | kNotDifferentiable | kKernelAllocates)
      .shape(&decode_csv_shape)
      .kernel(DType::kString, &decode_csv_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
