// MXFP4 as the checkpoint stores it (k3_layer.md 1.3): row-major [out, in/2] bytes, element 2b in
// byte b's low nibble and 2b+1 in its high nibble; nibble bit 3 the sign, bits 0..2 index
// {0, 0.5, 1, 1.5, 2, 3, 4, 6}; one E8M0 scale code per 32 inputs, value 2^(code - 127).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace monotile::model {

// The e2m1 value of a 4-bit code.
double mxfp4_code_value(uint8_t code);
// 2^(code - 127); code 255 is NaN, as in the MX format.
double e8m0_scale_value(uint8_t code);
// The nearest e2m1 code to `value` (ties to the even code; saturating at +-6).
uint8_t mxfp4_code_from_value(double value);

// Dequantizes `rows` rows of `cols` inputs: packed [rows, cols/2], scales [rows, cols/group].
std::vector<double> mxfp4_dequantize(std::span<const uint8_t> packed, std::span<const uint8_t> scales,
                                     int64_t rows, int64_t cols, int64_t group = 32);

}  // namespace monotile::model
