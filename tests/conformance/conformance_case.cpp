// The case runner: generate, poison, copy in, launch, copy out, compare against the reference.
#include "tests/conformance/conformance_case.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "support/check.h"
#include "tests/testing/compare.h"

namespace monotile::conformance {

Tolerance Tolerance::for_dtype(dsl::ScalarType dtype) {
  switch (dtype) {
    case dsl::ScalarType::kF64: return {1e-12, 1e-12};
    case dsl::ScalarType::kF32: return {1e-6, 1e-5};
    case dsl::ScalarType::kF16: return {1e-3, 2e-3};
    case dsl::ScalarType::kBf16: return {1e-2, 1e-2};
    default: return exact();
  }
}

HostTensor& Tensors::operator[](const std::string& name) {
  auto it = tensors_.find(name);
  MT_CHECK(it != tensors_.end(), "no tensor of that name in the case");
  return it->second;
}
const HostTensor& Tensors::operator[](const std::string& name) const {
  auto it = tensors_.find(name);
  MT_CHECK(it != tensors_.end(), "no tensor of that name in the case");
  return it->second;
}

namespace {

constexpr uint8_t kFloatPoison = 0xff;
constexpr uint8_t kIntPoison = 0xab;

void poison(HostTensor& tensor) {
  tensor.fill_bytes(dsl::is_float(tensor.dtype()) ? kFloatPoison : kIntPoison);
}

bool close(double actual, double expected, const Tolerance& tolerance) {
  return monotile::testing::agrees(actual, expected, {tolerance.abs, tolerance.rel});
}

std::string index_str(const HostTensor& tensor, int64_t flat) {
  std::vector<int64_t> index(tensor.shape().size());
  for (size_t d = index.size(); d-- > 0;) {
    index[d] = flat % tensor.shape()[d];
    flat /= tensor.shape()[d];
  }
  std::string text = "[";
  for (size_t d = 0; d < index.size(); ++d) absl::StrAppend(&text, d ? ", " : "", index[d]);
  return text + "]";
}

// Compares one output; returns a report of the first mismatches (empty when all match).
std::string compare(const std::string& name, const HostTensor& actual, const HostTensor& expected,
                    const Tolerance& tolerance) {
  std::string report;
  int64_t mismatches = 0;
  const bool floats = dsl::is_float(actual.dtype());
  for (int64_t i = 0; i < actual.size(); ++i) {
    bool ok = false;
    std::string values;
    if (!expected.written(i)) {
      return absl::StrFormat("the reference did not write %s%s", name, index_str(actual, i));
    }
    if (floats) {
      ok = close(actual.get(i), expected.get(i), tolerance);
      values = actual.is_float_poison(i)
                   ? absl::StrFormat("never written (still the poison NaN), expected %.9g", expected.get(i))
                   : absl::StrFormat("got %.9g, expected %.9g", actual.get(i), expected.get(i));
    } else {
      ok = actual.get_int(i) == expected.get_int(i);
      values = absl::StrFormat("got %d, expected %d", actual.get_int(i), expected.get_int(i));
    }
    if (ok) continue;
    if (++mismatches <= 8) absl::StrAppend(&report, "\n  ", name, index_str(actual, i), ": ", values);
  }
  if (mismatches == 0) return "";
  return absl::StrFormat("%d of %d elements of \"%s\" differ (tolerance abs %g, rel %g):%s", mismatches,
                         actual.size(), name, tolerance.abs, tolerance.rel, report);
}

}  // namespace

absl::Status run_case(Executor& executor, const Case& c, uint64_t seed) {
  const std::string where = absl::StrFormat("case \"%s\" on %s (seed %d)", c.name, executor.name(), seed);
  Rng rng(seed);
  Tensors expected;  // inputs as generated, outputs as the reference says
  std::vector<DeviceBuffer> buffers;
  std::vector<KernelArg> args;
  executor.release_all();
  for (const TensorSpec& spec : c.tensors) {
    HostTensor tensor(spec.dtype, spec.shape);
    if (spec.role == Role::kOutput) {
      poison(tensor);
    } else {
      MT_CHECK(spec.generate != nullptr, "an input tensor needs a generator");
      spec.generate(tensor, rng);
    }
    auto buffer = executor.allocate(tensor.bytes().size(), spec.name);
    if (!buffer.ok()) return absl::Status(buffer.status().code(), absl::StrCat(where, ": ", buffer.status().message()));
    if (absl::Status status = executor.copy_in(*buffer, tensor.bytes()); !status.ok()) return status;
    buffers.push_back(*buffer);
    args.push_back(KernelArg::buffer(*buffer, spec.dtype));
    HostTensor want = tensor;
    if (spec.role == Role::kOutput) want.track_writes();
    expected.add(spec.name, std::move(want));
  }
  args.insert(args.end(), c.scalars.begin(), c.scalars.end());
  const dsl::Program program = c.build();
  if (absl::Status status = executor.launch(program, c.grid, args); !status.ok()) {
    return absl::Status(status.code(), absl::StrCat(where, ": launch failed: ", status.message()));
  }
  c.reference(expected);
  std::string failures;
  for (size_t t = 0; t < c.tensors.size(); ++t) {
    const TensorSpec& spec = c.tensors[t];
    if (spec.role == Role::kInput) continue;
    HostTensor actual(spec.dtype, spec.shape);
    if (absl::Status status = executor.copy_out(actual.bytes(), buffers[t]); !status.ok()) return status;
    const std::string report =
        compare(spec.name, actual, expected[spec.name], spec.tolerance.value_or(Tolerance::for_dtype(spec.dtype)));
    if (!report.empty()) absl::StrAppend(&failures, "\n", report);
  }
  executor.release_all();
  if (failures.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat(where, ":", failures));
}

}  // namespace monotile::conformance
