// A program built against the installed package: it writes a tile kernel, runs it on the CPU
// interpreter against the exact answer, and compiles it for sm_90a through the JIT and the cache
// twice (the second call must be a cache hit). Exit 0 on success; 77 when no NVRTC is installed
// (after the interpreter part passed); 1 on any failure.
#include <cstdio>
#include <vector>

#include <monotile/dsl/dsl.h>
#include <monotile/dsl/interp/interpreter.h>
#include <monotile/jit/jit.h>
#include <monotile/jit/program_build.h>
#include <monotile/support/version.h>

using namespace monotile::dsl;  // NOLINT: kernels read best with the language's names in scope

namespace {

Program scale_add(int block) {
  Builder b("consumer_scale_add");
  Value x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32)), n = b.arg("n", i32);
  Value offsets = program_id(0) * block + arange(0, block);
  Value mask = offsets < n;
  store(y + offsets, load(x + offsets, mask) * 2.0f + load(y + offsets, mask), mask);
  return b.finish();
}

int fail(const char* what, const absl::Status& status) {
  std::printf("FAIL %s: %s\n", what, std::string(status.message()).c_str());
  return 1;
}

}  // namespace

int main() {
  std::printf("monotile %s\n", monotile::version());
  constexpr int kBlock = 64, kCount = 1000;
  const Program program = scale_add(kBlock);

  std::vector<float> x(kCount), y(kCount);
  for (int i = 0; i < kCount; ++i) x[i] = 0.25f * i, y[i] = 3.0f - i;
  const std::vector<float> y_before = y;
  interp::InterpretOptions options;
  options.allocations = {{x.data(), x.size() * sizeof(float), "x"}, {y.data(), y.size() * sizeof(float), "y"}};
  const std::vector<interp::ArgValue> args = {interp::ArgValue::of(x.data()), interp::ArgValue::of(y.data()),
                                               interp::ArgValue::of(kCount)};
  const absl::Status run = interp::interpret(program, {(kCount + kBlock - 1) / kBlock, 1, 1}, args, options);
  if (!run.ok()) return fail("interpret", run);
  for (int i = 0; i < kCount; ++i) {
    if (y[i] != 2.0f * x[i] + y_before[i]) {
      std::printf("FAIL interpret: y[%d] = %g, expected %g\n", i, y[i], 2.0f * x[i] + y_before[i]);
      return 1;
    }
  }
  std::printf("interpreter: %d elements exact\n", kCount);

  const absl::StatusOr<Target> target = Target::parse("sm_90a");
  if (!target.ok()) return fail("target", target.status());
  const absl::StatusOr<monotile::jit::ProgramBuild> build = monotile::jit::make_build(program, *target);
  if (!build.ok()) return fail("make_build", build.status());
  const absl::StatusOr<monotile::jit::CompiledBuild> cold = monotile::jit::compile_build(build->build);
  if (!cold.ok() && absl::IsNotFound(cold.status()) ) {
    std::printf("no NVRTC here, compile skipped: %s\n", std::string(cold.status().message()).c_str());
    return 77;
  }
  if (!cold.ok()) return fail("compile_build", cold.status());
  const absl::StatusOr<monotile::jit::CompiledBuild> warm = monotile::jit::compile_build(build->build);
  if (!warm.ok()) return fail("compile_build (warm)", warm.status());
  if (!warm->hit || warm->code_object != cold->code_object) {
    std::printf("FAIL the second compile_build was not the cached code object\n");
    return 1;
  }
  std::printf("sm_90a: %zu-byte code object by %s, key %s; warm call a cache hit in %.2f ms\n",
              cold->code_object.size(), cold->compiler.c_str(), cold->key.hex().c_str(), warm->seconds * 1e3);
  return 0;
}
