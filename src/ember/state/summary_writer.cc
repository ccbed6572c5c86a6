#include "ember/state/summary_writer.h"

#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <new>

#include "ember/graph/tensor_proto.h"

namespace ember {
namespace {

constexpr int kDtString = 7;  // TensorFlow's DT_STRING

double now_seconds() {
  using namespace std::chrono;
  return duration_cast<duration<double>>(system_clock::now().time_since_epoch()).count();
}

std::string hostname() {
  char buffer[256] = {0};
  if (::gethostname(buffer, sizeof(buffer) - 1) != 0) return "localhost";
  return buffer;
}

std::atomic<int64_t> g_file_counter{0};

void put_be32(std::string& out, uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}
void put_le(std::string& out, uint32_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void png_chunk(std::string& out, const char* type, const std::string& data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  std::string body(type, 4);
  body += data;
  out += body;
  put_be32(out, static_cast<uint32_t>(
                    crc32(0, reinterpret_cast<const Bytef*>(body.data()), static_cast<uInt>(body.size()))));
}

// A uint8 pixel from an image value: TensorFlow's convert_image_dtype(saturate=True) scales floats by
// 255.5 and truncates after clipping to [0, 255].
template <typename T>
uint8_t to_pixel(T v) {
  if constexpr (std::is_same_v<T, uint8_t>) {
    return v;
  } else {
    double x = static_cast<double>(static_cast<float>(v)) * 255.5;
    if (!(x > 0)) return 0;  // negative or NaN
    if (x >= 255) return 255;
    return static_cast<uint8_t>(x);
  }
}

void set_string_tensor(proto::TensorProto* t, std::initializer_list<int64_t> dims) {
  t->set_dtype(static_cast<proto::DataType>(kDtString));
  for (int64_t d : dims) t->mutable_tensor_shape()->add_dim()->set_size(d);
}

Status image_value(const SummaryRequest& r, proto::TensorProto* out) {
  const TensorImpl& t = *r.tensor;
  const Shape& s = t.shape();
  if (s.rank() != 4 || s.dim(3) < 1 || s.dim(3) > 4)
    return invalid_argument("image data must be [k, h, w, c] with c in 1..4, got shape ", s.to_string());
  if (t.dtype() != DType::kUInt8 && !is_floating(t.dtype()))
    return invalid_argument("image data must be uint8 or floating, got ", dtype_name(t.dtype()));
  const int64_t k = std::min<int64_t>(s.dim(0), std::max<int64_t>(r.param, 0));
  const int64_t h = s.dim(1), w = s.dim(2), c = s.dim(3);
  if (h > (1 << 24) || w > (1 << 24) || h * w > (int64_t(1) << 31))
    return invalid_argument("image of ", h, "x", w, " is too large for PNG");
  set_string_tensor(out, {k + 2});
  out->add_string_val(std::to_string(w));
  out->add_string_val(std::to_string(h));
  std::vector<uint8_t> pixels(static_cast<size_t>(h * w * c));
  for (int64_t i = 0; i < k; ++i) {
    visit_dtype<kFloatTypes | dtype_bit(DType::kUInt8)>(t.dtype(), [&]<typename T>() {
      const T* src = t.data<T>() + i * h * w * c;
      for (size_t j = 0; j < pixels.size(); ++j) pixels[j] = to_pixel(src[j]);
    });
    out->add_string_val(encode_png(pixels.data(), h, w, c));
  }
  return Status::OK();
}

Status audio_value(const SummaryRequest& r, proto::TensorProto* out) {
  const TensorImpl& t = *r.tensor;
  const Shape& s = t.shape();
  if (s.rank() != 3) return invalid_argument("audio data must be [k, t, c], got shape ", s.to_string());
  if (t.dtype() != DType::kFloat32)
    return invalid_argument("audio data must be float32, got ", dtype_name(t.dtype()));
  if (!(r.sample_rate > 0) || r.sample_rate > 2147483647.0)
    return invalid_argument("audio sample_rate must be positive, got ", r.sample_rate);
  const int64_t k = std::min<int64_t>(s.dim(0), std::max<int64_t>(r.param, 0));
  const int64_t frames = s.dim(1), channels = s.dim(2);
  if (channels < 1 || channels > 65535)
    return invalid_argument("audio needs 1..65535 channels, got ", channels);
  if (frames * channels * 2 > (int64_t(1) << 31)) return invalid_argument("audio clip too long for WAV");
  set_string_tensor(out, {k, 2});
  for (int64_t i = 0; i < k; ++i) {
    out->add_string_val(encode_wav(t.data<float>() + i * frames * channels, frames, channels,
                                   static_cast<int32_t>(r.sample_rate)));
    out->add_string_val("");
  }
  return Status::OK();
}

}  // namespace

std::vector<double> histogram_buckets(const TensorImpl& data, int64_t bucket_count) {
  const int64_t k = std::max<int64_t>(bucket_count, 0);
  const int64_t n = data.num_elements();
  std::vector<double> out(static_cast<size_t>(k * 3), 0.0);
  if (n == 0 || k == 0) return out;
  std::vector<double> v(static_cast<size_t>(n));
  visit_dtype(data.dtype(), [&]<typename T>() {
    const T* src = data.data<T>();
    for (int64_t i = 0; i < n; ++i) {
      if constexpr (std::is_same_v<T, float16> || std::is_same_v<T, bfloat16>)
        v[i] = static_cast<double>(static_cast<float>(src[i]));
      else
        v[i] = static_cast<double>(src[i]);
    }
  });
  // A NaN makes the minimum and maximum NaN, as TensorFlow's reductions (then every count is 0).
  double lo = v[0], hi = v[0];
  for (double x : v) {
    if (std::isnan(x) || std::isnan(lo)) {
      lo = hi = std::nan("");
      break;
    }
    lo = std::min(lo, x);
    hi = std::max(hi, x);
  }
  const double range = hi - lo;
  if (range == 0) {
    for (int64_t i = 0; i < k; ++i) out[i * 3] = out[i * 3 + 1] = hi;
    out[(k - 1) * 3 + 2] = static_cast<double>(n);
    return out;
  }
  const double width = range / static_cast<double>(k);
  for (double x : v) {
    double q = std::floor((x - lo) / width);
    // TensorBoard casts to int32 and one-hot encodes: an index that is not a valid int32 (NaN) or that is
    // negative counts nowhere; one past the end (the maximum) goes to the last bucket.
    if (!(q >= -2147483648.0 && q < 2147483648.0)) continue;
    int64_t idx = std::min<int64_t>(static_cast<int64_t>(q), k - 1);
    if (idx >= 0) out[idx * 3 + 2] += 1;
  }
  for (int64_t i = 0; i < k; ++i) {
    // TensorFlow's linspace starts exactly at the minimum (0 * inf would be NaN).
    out[i * 3] = i == 0 ? lo : lo + width * static_cast<double>(i);
    out[i * 3 + 1] = i + 1 == k ? hi : lo + width * static_cast<double>(i + 1);
  }
  return out;
}

std::string encode_png(const uint8_t* pixels, int64_t height, int64_t width, int64_t channels) {
  static const uint8_t kColorType[5] = {0, 0, 4, 2, 6};  // gray, gray+alpha, RGB, RGBA
  std::string raw;
  raw.reserve(static_cast<size_t>(height * (width * channels + 1)));
  for (int64_t y = 0; y < height; ++y) {
    raw.push_back('\0');  // filter: none
    raw.append(reinterpret_cast<const char*>(pixels + y * width * channels),
               static_cast<size_t>(width * channels));
  }
  uLongf packed_size = compressBound(static_cast<uLong>(raw.size()));
  std::string packed(packed_size, '\0');
  compress2(reinterpret_cast<Bytef*>(packed.data()), &packed_size, reinterpret_cast<const Bytef*>(raw.data()),
            static_cast<uLong>(raw.size()), 6);
  packed.resize(packed_size);
  std::string out("\x89PNG\r\n\x1a\n", 8);
  std::string ihdr;
  put_be32(ihdr, static_cast<uint32_t>(width));
  put_be32(ihdr, static_cast<uint32_t>(height));
  ihdr.push_back(8);
  ihdr.push_back(static_cast<char>(kColorType[channels]));
  ihdr.append(3, '\0');  // deflate, adaptive filtering, no interlace
  png_chunk(out, "IHDR", ihdr);
  png_chunk(out, "IDAT", packed);
  png_chunk(out, "IEND", "");
  return out;
}

std::string encode_wav(const float* samples, int64_t frames, int64_t channels, int32_t sample_rate) {
  const uint32_t data_bytes = static_cast<uint32_t>(frames * channels * 2);
  std::string out = "RIFF";
  put_le(out, 36 + data_bytes, 4);
  out += "WAVEfmt ";
  put_le(out, 16, 4);
  put_le(out, 1, 2);  // PCM
  put_le(out, static_cast<uint32_t>(channels), 2);
  put_le(out, static_cast<uint32_t>(sample_rate), 4);
  put_le(out, static_cast<uint32_t>(sample_rate) * static_cast<uint32_t>(channels) * 2, 4);
  put_le(out, static_cast<uint32_t>(channels * 2), 2);
  put_le(out, 16, 2);
  out += "data";
  put_le(out, data_bytes, 4);
  for (int64_t i = 0; i < frames * channels; ++i) {
    // Full scale is 2^15; the positive end saturates at 32767 (TensorFlow's encode_wav).
    float x = std::round(samples[i] * 32768.0f);
    x = std::isnan(x) ? 0.0f : std::min(32767.0f, std::max(-32768.0f, x));
    put_le(out, static_cast<uint32_t>(static_cast<int32_t>(x)) & 0xffff, 2);
  }
  return out;
}

EventFileWriter::EventFileWriter(std::string path, std::unique_ptr<record_io::RecordWriter> file,
                                 int64_t max_queue, int64_t flush_millis)
    : path_(std::move(path)),
      file_(std::move(file)),
      max_queue_(max_queue),
      flush_millis_(flush_millis),
      last_flush_(std::chrono::steady_clock::now()) {}

EventFileWriter::~EventFileWriter() { (void)close(); }

StatusOr<std::shared_ptr<EventFileWriter>> EventFileWriter::create(const std::string& logdir,
                                                                   int64_t max_queue, int64_t flush_millis,
                                                                   const std::string& filename_suffix) {
  if (logdir.empty()) return invalid_argument("create_file_writer: logdir must not be empty");
  if (max_queue < 0) return invalid_argument("create_file_writer: max_queue must be >= 0, got ", max_queue);
  if (flush_millis < 0)
    return invalid_argument("create_file_writer: flush_millis must be >= 0, got ", flush_millis);
  std::error_code ec;
  std::filesystem::create_directories(logdir, ec);
  if (ec)
    return make_error(Code::kNotFound, "create_file_writer: cannot create ", logdir, ": ", ec.message());
  char stamp[32];
  std::snprintf(stamp, sizeof stamp, "%010lld", static_cast<long long>(std::time(nullptr)));
  std::string path = (std::filesystem::path(logdir) /
                      ("events.out.tfevents." + std::string(stamp) + "." + hostname() + "." +
                       std::to_string(::getpid()) + "." + std::to_string(g_file_counter++) + filename_suffix))
                         .string();
  auto file = record_io::RecordWriter::open(path, record_io::RecordOptions{});
  if (!file.ok()) return file.status();
  std::shared_ptr<EventFileWriter> w(
      new (std::nothrow) EventFileWriter(path, std::move(file).value(), max_queue, flush_millis));
  if (!w) return make_error(Code::kResourceExhausted, "create_file_writer: out of memory");
  proto::Event version;
  version.set_wall_time(now_seconds());
  version.set_file_version("brain.Event:2");
  version.mutable_source_metadata()->set_writer("ember");
  EMBER_RETURN_IF_ERROR(w->write_event(std::move(version)));
  EMBER_RETURN_IF_ERROR(w->flush());
  return w;
}

bool EventFileWriter::closed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return file_ == nullptr;
}

Status EventFileWriter::enqueue_locked(std::string bytes) {
  if (!file_) return make_error(Code::kFailedPrecondition, "the summary writer for ", path_, " is closed");
  queue_.push_back(std::move(bytes));
  auto elapsed = std::chrono::steady_clock::now() - last_flush_;
  if (static_cast<int64_t>(queue_.size()) > max_queue_ || elapsed >= std::chrono::milliseconds(flush_millis_))
    return flush_locked();
  return Status::OK();
}

Status EventFileWriter::flush_locked() {
  if (!file_) return Status::OK();
  for (const std::string& e : queue_) EMBER_RETURN_IF_ERROR(file_->write(e));
  queue_.clear();
  last_flush_ = std::chrono::steady_clock::now();
  return file_->flush();
}

Status EventFileWriter::write_event(proto::Event event) {
  if (event.wall_time() == 0) event.set_wall_time(now_seconds());
  std::string bytes;
  if (!event.SerializeToString(&bytes)) return make_error(Code::kInternal, "serializing an Event failed");
  std::lock_guard<std::mutex> lock(mu_);
  return enqueue_locked(std::move(bytes));
}

Status EventFileWriter::write_serialized_event(std::string bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  return enqueue_locked(std::move(bytes));
}

Status EventFileWriter::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  return flush_locked();
}

Status EventFileWriter::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) return Status::OK();
  Status s = flush_locked();
  Status c = file_->close();
  file_.reset();
  return s.ok() ? c : s;
}

Status EventFileWriter::write_summary(const SummaryRequest& r) {
  try {
    proto::Event event;
    event.set_step(r.step);
    proto::Summary::Value* value = event.mutable_summary()->add_value();
    value->set_tag(std::string(r.tag));
    if (!r.metadata.empty() &&
        !value->mutable_metadata()->ParseFromArray(r.metadata.data(), static_cast<int>(r.metadata.size())))
      return invalid_argument("the summary metadata is not a serialized SummaryMetadata");
    proto::TensorProto* tensor = value->mutable_tensor();
    switch (r.kind) {
      case SummaryRequest::kTensor:
        to_tensor_proto(*r.tensor, tensor);
        break;
      case SummaryRequest::kHistogram: {
        std::vector<double> buckets = histogram_buckets(*r.tensor, r.param);
        tensor->set_dtype(proto::DT_DOUBLE);
        tensor->mutable_tensor_shape()->add_dim()->set_size(static_cast<int64_t>(buckets.size() / 3));
        tensor->mutable_tensor_shape()->add_dim()->set_size(3);
        tensor->set_tensor_content(reinterpret_cast<const char*>(buckets.data()),
                                   buckets.size() * sizeof(double));
        break;
      }
      case SummaryRequest::kImage:
        EMBER_RETURN_IF_ERROR(image_value(r, tensor));
        break;
      case SummaryRequest::kAudio:
        EMBER_RETURN_IF_ERROR(audio_value(r, tensor));
        break;
      case SummaryRequest::kPayload:
        if (!tensor->ParseFromArray(r.payload.data(), static_cast<int>(r.payload.size())))
          return invalid_argument("the summary payload is not a serialized TensorProto");
        break;
      default:
        return invalid_argument("unknown summary kind ", r.kind);
    }
    return write_event(std::move(event));
  } catch (const std::bad_alloc&) {
    return make_error(Code::kResourceExhausted, "out of memory writing summary ", r.tag);
  }
}

}  // namespace ember
