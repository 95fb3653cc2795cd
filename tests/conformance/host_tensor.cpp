// HostTensor element access through the interpreter's codecs, so host and kernel agree bit for bit.
#include "tests/conformance/host_tensor.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "dsl/interp/float16.h"
#include "support/check.h"

namespace monotile::conformance {

using dsl::ScalarType;

HostTensor::HostTensor(ScalarType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
  for (int64_t dim : shape_) size_ *= dim;
  element_bytes_ = static_cast<size_t>(dsl::scalar_type_bytes(dtype));
  bytes_.resize(static_cast<size_t>(size_) * element_bytes_);
}

int64_t HostTensor::at(std::initializer_list<int64_t> index) const {
  MT_CHECK(index.size() == shape_.size());
  int64_t flat = 0;
  size_t d = 0;
  for (int64_t i : index) flat = flat * shape_[d++] + i;
  return flat;
}

namespace {
template <typename T>
T read(const std::vector<std::byte>& bytes, int64_t i) {
  T value;
  std::memcpy(&value, bytes.data() + static_cast<size_t>(i) * sizeof(T), sizeof(T));
  return value;
}
template <typename T>
void write(std::vector<std::byte>& bytes, int64_t i, T value) {
  std::memcpy(bytes.data() + static_cast<size_t>(i) * sizeof(T), &value, sizeof(T));
}
}  // namespace

double HostTensor::get(int64_t i) const {
  switch (dtype_) {
    case ScalarType::kF16: return dsl::interp::f16_bits_to_double(read<uint16_t>(bytes_, i));
    case ScalarType::kBf16: return dsl::interp::bf16_bits_to_double(read<uint16_t>(bytes_, i));
    case ScalarType::kF32: return read<float>(bytes_, i);
    case ScalarType::kF64: return read<double>(bytes_, i);
    default: return static_cast<double>(get_int(i));
  }
}

int64_t HostTensor::get_int(int64_t i) const {
  switch (dtype_) {
    case ScalarType::kI1:
    case ScalarType::kU8:
    case ScalarType::kMxfp4: return read<uint8_t>(bytes_, i);
    case ScalarType::kI8: return read<int8_t>(bytes_, i);
    case ScalarType::kI16: return read<int16_t>(bytes_, i);
    case ScalarType::kI32: return read<int32_t>(bytes_, i);
    case ScalarType::kU32: return read<uint32_t>(bytes_, i);
    case ScalarType::kI64: return read<int64_t>(bytes_, i);
    default: return static_cast<int64_t>(get(i));
  }
}

void HostTensor::set(int64_t i, double value) {
  if (!written_.empty()) written_[static_cast<size_t>(i)] = 1;
  switch (dtype_) {
    case ScalarType::kF16: write(bytes_, i, dsl::interp::f16_bits_from_double(value)); return;
    case ScalarType::kBf16: write(bytes_, i, dsl::interp::bf16_bits_from_double(value)); return;
    case ScalarType::kF32: write(bytes_, i, static_cast<float>(value)); return;
    case ScalarType::kF64: write(bytes_, i, value); return;
    default: set_int(i, static_cast<int64_t>(value)); return;
  }
}

void HostTensor::set_int(int64_t i, int64_t value) {
  if (!written_.empty()) written_[static_cast<size_t>(i)] = 1;
  switch (dtype_) {
    case ScalarType::kI1: write(bytes_, i, static_cast<uint8_t>(value != 0)); return;
    case ScalarType::kI8:
    case ScalarType::kU8:
    case ScalarType::kMxfp4: write(bytes_, i, static_cast<uint8_t>(value)); return;
    case ScalarType::kI16: write(bytes_, i, static_cast<uint16_t>(value)); return;
    case ScalarType::kI32:
    case ScalarType::kU32: write(bytes_, i, static_cast<uint32_t>(value)); return;
    case ScalarType::kI64: write(bytes_, i, value); return;
    default: set(i, static_cast<double>(value)); return;
  }
}

void HostTensor::fill_bytes(uint8_t byte) { std::memset(bytes_.data(), byte, bytes_.size()); }

bool HostTensor::is_float_poison(int64_t i) const {
  for (size_t b = 0; b < element_bytes_; ++b) {
    if (bytes_[static_cast<size_t>(i) * element_bytes_ + b] != std::byte{0xff}) return false;
  }
  return true;
}

Generator uniform(double lo, double hi) {
  return [lo, hi](HostTensor& tensor, Rng& rng) {
    if (dsl::is_float(tensor.dtype())) {
      std::uniform_real_distribution<double> dist(lo, hi);
      for (int64_t i = 0; i < tensor.size(); ++i) tensor.set(i, dist(rng));
    } else {
      std::uniform_int_distribution<int64_t> dist(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
      for (int64_t i = 0; i < tensor.size(); ++i) tensor.set_int(i, dist(rng));
    }
  };
}

Generator integers(int64_t lo, int64_t hi) {
  return [lo, hi](HostTensor& tensor, Rng& rng) {
    std::uniform_int_distribution<int64_t> dist(lo, hi);
    for (int64_t i = 0; i < tensor.size(); ++i) {
      if (dsl::is_float(tensor.dtype())) tensor.set(i, static_cast<double>(dist(rng)));
      else tensor.set_int(i, dist(rng));
    }
  };
}

Generator with_specials(Generator base, double fraction) {
  return [base = std::move(base), fraction](HostTensor& tensor, Rng& rng) {
    base(tensor, rng);
    constexpr double kInf = std::numeric_limits<double>::infinity();
    const double specials[] = {std::nan(""), kInf, -kInf, 0.0, -0.0, 1.0, -1.0};
    std::uniform_real_distribution<double> coin(0, 1);
    std::uniform_int_distribution<int> pick(0, 6);
    for (int64_t i = 0; i < tensor.size(); ++i) {
      if (coin(rng) < fraction) tensor.set(i, specials[pick(rng)]);
    }
  };
}

Generator constant(double value) {
  return [value](HostTensor& tensor, Rng&) {
    for (int64_t i = 0; i < tensor.size(); ++i) tensor.set(i, value);
  };
}

}  // namespace monotile::conformance
