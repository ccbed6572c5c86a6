// tf.audio's WAV codec with TensorFlow's names and format: DecodeWav(contents) -> (audio, sample_rate) reads
// a RIFF/WAVE file of 16-bit little-endian PCM into float32 [samples, channels] in [-1, 1), and
// EncodeWav(audio, sample_rate) writes one (a 44-byte header, then the samples rounded and saturated to
// int16).
//
// A file that is cut short, has a foreign header, a format other than 16-bit PCM or inconsistent sizes is an
// InvalidArgumentError naming what was expected and what was found, as TensorFlow's wav_io.cc reports it;
// nothing is read past the end of the contents.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "ember/ops/families.h"
#include "ember/ops/registry.h"
#include "ember/ops/shape_fns.h"

namespace ember {
namespace {

constexpr float kInt16Scale = 32768.0f;  // 1 << 15: int16 sample s is the float s / 32768
constexpr int kWavHeaderBytes = 44;

// Bytes of the file as they appear in a message: printable ASCII as it is, anything else as \xNN, so that a
// message about a damaged header is valid UTF-8.
std::string printable(std::string_view bytes) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out.push_back(static_cast<char>(c));
    } else {
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

// Reads the contents front to back; every read is checked against the end.
class WavReader {
 public:
  explicit WavReader(std::string_view data) : data_(data) {}

  bool at_end() const { return offset_ >= data_.size(); }

  Status skip(uint64_t n) {
    if (n > data_.size() - offset_) return too_short();
    offset_ += n;
    return Status::OK();
  }

  Status text(size_t n, std::string* out) {
    if (n > data_.size() - offset_) return too_short();
    out->assign(data_.substr(offset_, n));
    offset_ += n;
    return Status::OK();
  }

  Status expect(std::string_view expected) {
    std::string found;
    EMBER_RETURN_IF_ERROR(text(expected.size(), &found));
    if (found != expected)
      return invalid_argument("DecodeWav: header mismatch: expected ", expected, " but found ",
                              printable(found));
    return Status::OK();
  }

  template <typename T>
  Status little_endian(T* out) {
    if (sizeof(T) > data_.size() - offset_) return too_short();
    uint64_t value = 0;
    for (size_t i = 0; i < sizeof(T); ++i)
      value |= uint64_t{static_cast<unsigned char>(data_[offset_ + i])} << (8 * i);
    offset_ += sizeof(T);
    *out = static_cast<T>(value);
    return Status::OK();
  }

  size_t remaining() const { return data_.size() - offset_; }

 private:
  Status too_short() const {
    return invalid_argument(
        "DecodeWav: data too short when trying to read string: the WAV contents end at byte ", data_.size());
  }

  std::string_view data_;
  size_t offset_ = 0;
};

struct DecodedWav {
  std::vector<int16_t> samples;  // interleaved, frames * channels
  int64_t frames = 0;
  int channels = 0;
  uint32_t sample_rate = 0;
};

// TensorFlow's DecodeLin16WaveAsFloatVector: "RIFF" size "WAVE", a "fmt " chunk of 16 or 18 bytes describing
// 16-bit PCM, then chunks until the end, exactly one of them "data".
Status decode_wav(std::string_view contents, DecodedWav* out) {
  WavReader in(contents);
  uint32_t riff_size = 0;
  EMBER_RETURN_IF_ERROR(in.expect("RIFF"));
  EMBER_RETURN_IF_ERROR(in.little_endian(&riff_size));
  EMBER_RETURN_IF_ERROR(in.expect("WAVE"));
  EMBER_RETURN_IF_ERROR(in.expect("fmt "));
  uint32_t format_size = 0, bytes_per_second = 0;
  uint16_t audio_format = 0, channels = 0, bytes_per_frame = 0, bits_per_sample = 0;
  EMBER_RETURN_IF_ERROR(in.little_endian(&format_size));
  if (format_size != 16 && format_size != 18)
    return invalid_argument("DecodeWav: bad format chunk size for WAV: expected 16 or 18, but got ",
                            format_size);
  EMBER_RETURN_IF_ERROR(in.little_endian(&audio_format));
  if (audio_format != 1)
    return invalid_argument("DecodeWav: bad audio format for WAV: expected 1 (PCM), but got ", audio_format);
  EMBER_RETURN_IF_ERROR(in.little_endian(&channels));
  if (channels < 1)
    return invalid_argument("DecodeWav: bad number of channels for WAV: expected at least 1, but got ",
                            channels);
  EMBER_RETURN_IF_ERROR(in.little_endian(&out->sample_rate));
  EMBER_RETURN_IF_ERROR(in.little_endian(&bytes_per_second));
  EMBER_RETURN_IF_ERROR(in.little_endian(&bytes_per_frame));
  EMBER_RETURN_IF_ERROR(in.little_endian(&bits_per_sample));
  if (bits_per_sample != 16)
    return invalid_argument("DecodeWav: can only read 16-bit WAV files, but received ", bits_per_sample);
  const uint32_t expected_frame_bytes = uint32_t{bits_per_sample} * channels / 8;
  const uint64_t expected_second_bytes = uint64_t{expected_frame_bytes} * out->sample_rate;
  if (bytes_per_second != expected_second_bytes)
    return invalid_argument("DecodeWav: bad bytes per second in WAV header: expected ", expected_second_bytes,
                            " but got ", bytes_per_second);
  if (bytes_per_frame != expected_frame_bytes)
    return invalid_argument("DecodeWav: bad bytes per sample in WAV header: expected ", expected_frame_bytes,
                            " but got ", bytes_per_frame);
  if (format_size == 18) EMBER_RETURN_IF_ERROR(in.skip(2));
  bool found_data = false;
  while (!in.at_end()) {
    std::string chunk_id;
    uint32_t chunk_size = 0;
    EMBER_RETURN_IF_ERROR(in.text(4, &chunk_id));
    EMBER_RETURN_IF_ERROR(in.little_endian(&chunk_size));
    if (chunk_size > static_cast<uint32_t>(std::numeric_limits<int32_t>::max()))
      return invalid_argument("DecodeWav: WAV data chunk '", printable(chunk_id),
                              "' is too large: ", chunk_size, " bytes, but the limit is ",
                              std::numeric_limits<int32_t>::max());
    if (chunk_id != "data") {
      EMBER_RETURN_IF_ERROR(in.skip(chunk_size));
      continue;
    }
    if (found_data) return invalid_argument("DecodeWav: more than one data chunk found in WAV");
    found_data = true;
    out->channels = channels;
    out->frames = chunk_size / bytes_per_frame;
    const uint64_t count = static_cast<uint64_t>(out->frames) * channels;
    if (count * 2 > in.remaining())
      return invalid_argument("DecodeWav: data too short when trying to read string: the data chunk holds ",
                              chunk_size, " bytes but only ", in.remaining(), " remain");
    out->samples.resize(count);
    for (uint64_t i = 0; i < count; ++i) EMBER_RETURN_IF_ERROR(in.little_endian(&out->samples[i]));
  }
  if (!found_data) return invalid_argument("DecodeWav: no data chunk found in WAV");
  return Status::OK();
}

Status check_scalar(const TensorSpec& in, const char* op, const char* what) {
  if (in.shape.rank_known() && in.shape.rank() != 0)
    return invalid_argument(op, ": ", what, " must be scalar, got shape ", in.shape.to_string());
  return Status::OK();
}

Status check_desired(const AttrReader& attrs, const char* op) {
  for (int i = 0; i < 2; ++i)
    if (attrs.attr_int(i) < -1 || attrs.attr_int(i) > std::numeric_limits<int32_t>::max())
      return invalid_argument(op, ": ", i == 0 ? "desired_channels" : "desired_samples",
                              " must be -1 (as in the file) or a non-negative int32, got ",
                              attrs.attr_int(i));
  return Status::OK();
}

Status decode_wav_shape(InferContext& ctx) {
  EMBER_RETURN_IF_ERROR(check_scalar(ctx.inputs[0], "DecodeWav", "contents"));
  EMBER_RETURN_IF_ERROR(check_desired(ctx, "DecodeWav"));
  ctx.outputs.push_back({DType::kFloat32, Shape({ctx.attr_int(1), ctx.attr_int(0)})});  // -1: unknown
  ctx.outputs.push_back({DType::kInt32, Shape()});
  return Status::OK();
}

// desired_samples cuts the audio or pads it with silence; desired_channels drops channels or repeats the
// last one, as TensorFlow's kernel.
Status decode_wav_kernel(KernelContext& ctx) {
  const TensorImpl& contents = ctx.input(0);
  if (contents.shape().rank() != 0)
    return invalid_argument("DecodeWav: contents must be scalar, got shape ", contents.shape().to_string());
  EMBER_RETURN_IF_ERROR(check_desired(ctx, "DecodeWav"));
  DecodedWav wav;
  EMBER_RETURN_IF_ERROR(decode_wav(contents.data<std::string>()[0], &wav));
  if (wav.frames > std::numeric_limits<int32_t>::max())
    return invalid_argument("DecodeWav: the WAV holds ", wav.frames, " samples, more than int32 counts");
  const int64_t frames = ctx.attr_int(1) == -1 ? wav.frames : ctx.attr_int(1);
  const int64_t channels = ctx.attr_int(0) == -1 ? wav.channels : ctx.attr_int(0);
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 0, DType::kFloat32, Shape({frames, channels})));
  EMBER_RETURN_IF_ERROR(allocate_output(ctx, 1, DType::kInt32, Shape()));
  float* audio = ctx.output(0).mutable_data<float>();
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t source = std::min<int64_t>(c, wav.channels - 1);
      audio[f * channels + c] = f < wav.frames ? wav.samples[f * wav.channels + source] / kInt16Scale : 0.0f;
    }
  ctx.output(1).mutable_data<int32_t>()[0] = static_cast<int32_t>(wav.sample_rate);
  return Status::OK();
}

Status encode_wav_shape(InferContext& ctx) {
  const Shape& audio = ctx.inputs[0].shape;
  if (audio.rank_known() && audio.rank() != 2)
    return invalid_argument("EncodeWav: audio must be 2-dimensional [samples, channels], got shape ",
                            audio.to_string());
  EMBER_RETURN_IF_ERROR(check_scalar(ctx.inputs[1], "EncodeWav", "sample_rate"));
  ctx.outputs.push_back({DType::kString, Shape()});
  return Status::OK();
}

void append_le(std::string* out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

Status encode_wav_kernel(KernelContext& ctx) {
  const TensorImpl& audio = ctx.input(0);
  if (audio.shape().rank() != 2)
    return invalid_argument("EncodeWav: audio must be 2-dimensional [samples, channels], got shape ",
                            audio.shape().to_string());
  if (ctx.input(1).shape().rank() != 0)
    return invalid_argument("EncodeWav: sample_rate must be scalar, got shape ",
                            ctx.input(1).shape().to_string());
  const int64_t frames = audio.shape().dim(0), channels = audio.shape().dim(1);
  const int32_t sample_rate = ctx.input(1).data<int32_t>()[0];
  if (sample_rate <= 0)
    return invalid_argument("EncodeWav: sample_rate must be in (0, 2^32), got: ", sample_rate);
  if (channels == 0 || channels > std::numeric_limits<uint16_t>::max())
    return invalid_argument("EncodeWav: num_channels must be in (0, 2^16), got: ", channels);
  const uint64_t data_bytes = static_cast<uint64_t>(frames) * channels * 2;
  if (data_bytes + kWavHeaderBytes > std::numeric_limits<uint32_t>::max())
    return invalid_argument("EncodeWav: provided channels and frames cannot be encoded as a WAV: ", frames,
                            " x ", channels, " samples exceed 4 GiB");
  std::string wav;
  wav.reserve(kWavHeaderBytes + data_bytes);
  wav += "RIFF";
  append_le(&wav, data_bytes + kWavHeaderBytes - 8, 4);
  wav += "WAVEfmt ";
  append_le(&wav, 16, 4);  // the format chunk's size
  append_le(&wav, 1, 2);   // PCM
  append_le(&wav, channels, 2);
  append_le(&wav, sample_rate, 4);
  append_le(&wav, static_cast<uint64_t>(sample_rate) * channels * 2, 4);  // bytes per second
  append_le(&wav, channels * 2, 2);                                       // bytes per frame
  append_le(&wav, 16, 2);                                                 // bits per sample
  wav += "data";
  append_le(&wav, data_bytes, 4);
  const float* in = audio.data<float>();
  for (int64_t i = 0; i < frames * channels; ++i) {
    const float scaled = std::round(in[i] * kInt16Scale);
    // NaN is written as 0, what TensorFlow's undefined float-to-int conversion gives on x86.
    const float clamped = std::isnan(scaled) ? 0.0f : std::min(std::max(scaled, -32768.0f), 32767.0f);
    append_le(&wav, static_cast<uint16_t>(static_cast<int16_t>(clamped)), 2);
  }
  ctx.output(0).mutable_data<std::string>()[0] = std::move(wav);
  return Status::OK();
}

}  // namespace

void register_audio_ops(OpRegistry& r) {
  OpBuilder("DecodeWav")
      .doc(
          "A 16-bit PCM WAV file (a scalar string) as float32 [samples, channels] in [-1, 1) and its int32 "
          "sample rate; desired_channels / desired_samples (-1: the file's) reshape it. "
          "decode_wav(encode_wav([[0.5]], 8000)) -> ([[0.5]], 8000)")
      .input_fixed("contents", dtype_bit(DType::kString))
      .output("audio")
      .output("sample_rate")
      .type_var(dtype_bit(DType::kString))
      .dispatch_on_input(0)
      .attr("desired_channels", AttrType::kInt, int64_t{-1})
      .attr("desired_samples", AttrType::kInt, int64_t{-1})
      .flags(kNotDifferentiable | kKernelAllocates)
      .shape(&decode_wav_shape)
      .kernel(dtype_bit(DType::kString), &decode_wav_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
  OpBuilder("EncodeWav")
      .doc(
          "float32 audio [samples, channels] as a 16-bit PCM WAV file (a scalar string), samples rounded and "
          "saturated to int16. encode_wav([[0.5]], 8000) -> b\"RIFF&\\0\\0\\0WAVEfmt ...\"")
      .input("audio")
      .input_fixed("sample_rate", dtype_bit(DType::kInt32))
      .output("contents")
      .type_var(dtype_bit(DType::kFloat32))
      .dispatch_on_input(0)
      .flags(kNotDifferentiable)
      .shape(&encode_wav_shape)
      .kernel(dtype_bit(DType::kFloat32), &encode_wav_kernel)
      .batching(BatchingRule::kFallback)
      .done(r);
}

}  // namespace ember
