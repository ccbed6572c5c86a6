// CRC-32C (Castagnoli), the checksum of TensorFlow's checkpoint files: the table format's block trailers
// and each tensor's bytes in the data shards. Debian ships no C++ CRC32C library (LevelDB keeps its copy
// private, and libcrc32c is a kernel module), so the checksum is here: the SSE4.2 instruction where the
// CPU has it, a slicing-by-8 table otherwise. Both give the same values; tests check known vectors.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ember::crc32c {

/// The CRC-32C of `data[0, n)` continuing from `crc` (0 to start).
uint32_t extend(uint32_t crc, const void* data, size_t n);
inline uint32_t value(const void* data, size_t n) { return extend(0, data, n); }

// Note [Masked CRCs]
// A file that stores CRCs of data which itself contains CRCs checksums badly (the CRC of a string with its
// own CRC appended is a constant), so TensorFlow and LevelDB store a rotated, offset form.
constexpr uint32_t kMaskDelta = 0xa282ead8u;
inline uint32_t mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + kMaskDelta; }
inline uint32_t unmask(uint32_t masked) {
  uint32_t rot = masked - kMaskDelta;
  return (rot >> 17) | (rot << 15);
}

}  // namespace ember::crc32c
