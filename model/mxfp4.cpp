// MXFP4 decode and nearest-code encode, from the checkpoint layout.
#include "model/mxfp4.h"

#include <cmath>
#include <limits>

namespace monotile::model {
namespace {

constexpr double kMagnitudes[8] = {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0};

}  // namespace

double mxfp4_code_value(uint8_t code) {
  double magnitude = kMagnitudes[code & 7];
  return (code & 8) ? -magnitude : magnitude;
}

double e8m0_scale_value(uint8_t code) {
  if (code == 255) return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, static_cast<int>(code) - 127);
}

uint8_t mxfp4_code_from_value(double value) {
  double magnitude = std::fabs(value);
  uint8_t best = 0;
  for (uint8_t i = 1; i < 8; ++i) {
    double here = std::fabs(kMagnitudes[i] - magnitude), there = std::fabs(kMagnitudes[best] - magnitude);
    if (here < there || (here == there && (i % 2 == 0))) best = i;
  }
  return static_cast<uint8_t>(best | (std::signbit(value) && best != 0 ? 8 : 0));
}

std::vector<double> mxfp4_dequantize(std::span<const uint8_t> packed, std::span<const uint8_t> scales, int64_t rows,
                                     int64_t cols, int64_t group) {
  std::vector<double> out(static_cast<size_t>(rows * cols));
  int64_t groups = cols / group;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t k = 0; k < cols; ++k) {
      uint8_t byte = packed[static_cast<size_t>(r * (cols / 2) + k / 2)];
      uint8_t code = (k % 2 == 0) ? (byte & 0xf) : (byte >> 4);
      out[static_cast<size_t>(r * cols + k)] =
          mxfp4_code_value(code) * e8m0_scale_value(scales[static_cast<size_t>(r * groups + k / group)]);
    }
  }
  return out;
}

}  // namespace monotile::model
