// 16-bit floating point storage types. Arithmetic on them is done in float: kernels load, compute in
// float and round back, as TensorFlow's CPU kernels do.
#pragma once

#include <bit>
#include <cstdint>

// Note [Inline functions in ISA files]
// kernels/isa/*_isa.cc are compiled with AVX2/AVX-512 flags. An ordinary inline function they use is emitted
// as a weak symbol in each object, and the linker keeps one copy for the whole program — possibly the
// AVX-512 one, which would fault on an older CPU. Conversions used there are therefore always inlined.
#define EMBER_ALWAYS_INLINE inline __attribute__((always_inline))

namespace ember {

struct float16 {
  uint16_t bits = 0;
  float16() = default;
  EMBER_ALWAYS_INLINE explicit float16(float f) : bits(from_float(f)) {}
  EMBER_ALWAYS_INLINE operator float() const { return to_float(bits); }

  EMBER_ALWAYS_INLINE static uint16_t from_float(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t abs = x & 0x7fffffffu;
    if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
    if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // rounds to infinity
    if (abs < 0x38800000u) {                                               // subnormal half or zero
      float magic = std::bit_cast<float>(abs) + 0.5f;                      // round to nearest even at 2^-24
      return static_cast<uint16_t>(sign | (std::bit_cast<uint32_t>(magic) - 0x3f000000u));
    }
    uint32_t mant_odd = (abs >> 13) & 1u;
    abs += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to nearest even
    return static_cast<uint16_t>(sign | (abs >> 13));
  }
  EMBER_ALWAYS_INLINE static float to_float(uint16_t h) {
    uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    if (em >= 0x7c00u) return std::bit_cast<float>(sign | 0x7f800000u | ((em & 0x3ffu) << 13));
    if (em < 0x0400u) {  // subnormal: value = mantissa * 2^-24
      float f = static_cast<float>(em) * 5.9604644775390625e-8f;
      return std::bit_cast<float>(sign | std::bit_cast<uint32_t>(f));
    }
    return std::bit_cast<float>(sign | ((em + 0x1c000u) << 13));
  }
};

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  EMBER_ALWAYS_INLINE explicit bfloat16(float f) : bits(from_float(f)) {}
  EMBER_ALWAYS_INLINE operator float() const {
    return std::bit_cast<float>(static_cast<uint32_t>(bits) << 16);
  }

  EMBER_ALWAYS_INLINE static uint16_t from_float(float f) {
    uint32_t x = std::bit_cast<uint32_t>(f);
    if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
    x += 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
    return static_cast<uint16_t>(x >> 16);
  }
};

}  // namespace ember
