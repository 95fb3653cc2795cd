// A conformance case: (program builder, input generators, reference, tolerances). The runner draws
// fresh inputs, poisons every output (NaN bytes for floats, 0xab for integers), runs the program on
// an Executor and compares each output with the reference, so an unwritten element always fails.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "dsl/ir.h"
#include "tests/conformance/executor.h"
#include "tests/conformance/host_tensor.h"

namespace monotile::conformance {

// |actual - expected| <= abs + rel * |expected|; NaN matches only an expected NaN, infinities only
// themselves. Integer dtypes always compare exactly.
struct Tolerance {
  double abs = 0;
  double rel = 0;
  static Tolerance exact() { return {0, 0}; }
  // Rounding-level tolerances for data of `dtype`: f32 1e-5, f16 2e-3, bf16 1e-2 (relative).
  static Tolerance for_dtype(dsl::ScalarType dtype);
};

enum class Role { kInput, kOutput, kInOut };

struct TensorSpec {
  std::string name;
  dsl::ScalarType dtype;
  std::vector<int64_t> shape;
  Role role = Role::kInput;
  Generator generate = nullptr;           // inputs and in-outs
  std::optional<Tolerance> tolerance;     // outputs and in-outs; default: for_dtype(dtype)
};

// The tensors of one run by name: inputs hold the generated data; the reference must write every
// element of every output (the runner checks) and may update in-outs.
class Tensors {
 public:
  HostTensor& operator[](const std::string& name);
  const HostTensor& operator[](const std::string& name) const;
  void add(const std::string& name, HostTensor tensor) { tensors_.emplace(name, std::move(tensor)); }

 private:
  std::map<std::string, HostTensor> tensors_;
};

struct Case {
  std::string name;                      // "add/bf16/[16, 64]": the op, dtype and shape swept
  std::function<dsl::Program()> build;   // builds the program (a builder lives only inside)
  LaunchGrid grid;
  std::vector<TensorSpec> tensors;       // pointer arguments, in order
  std::vector<KernelArg> scalars;        // scalar arguments after the pointers
  std::function<void(Tensors&)> reference;
  // Its programs wait on each other, so they must run at once: true for a GPU and the interpreter
  // (a program with wait_until gets a thread per instance), not for an executor that runs the
  // programs one after another (the host emulation of generated code), which leaves it out.
  bool concurrent_programs = false;
};

// Runs `c` once on `executor` with inputs drawn from `seed`; the error lists mismatches (index,
// actual, expected) and names the seed.
absl::Status run_case(Executor& executor, const Case& c, uint64_t seed);

}  // namespace monotile::conformance
