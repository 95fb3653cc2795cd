// ParameterOrder: a build's parameters resolved once against a binding's table, then values placed
// by position; its refusals name the parameter or the kernel.
#include "runtime/parameter_order.h"

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "dsl/dsl.h"
#include "gtest/gtest.h"
#include "runtime/device_cpu.h"
#include "runtime/interpreter_module.h"

namespace monotile::runtime {
namespace {

using dsl::ScalarType;

std::array<NamedArgument, 3> table(int64_t n, int64_t stride, const void* out) {
  return {{{"n", KernelArgument::integer(ScalarType::kI64, n)},
           {"out", KernelArgument::pointer(out, ScalarType::kF32)},
           {"stride", KernelArgument::integer(ScalarType::kI64, stride)}}};
}

TEST(ParameterOrder, PlacesTheTablesValuesInParameterOrder) {
  absl::StatusOr<ParameterOrder> order =
      ParameterOrder::resolve({"stride", "out", "n"}, table(0, 0, nullptr), "a test");
  ASSERT_TRUE(order.ok()) << order.status();
  float out = 0;
  const LaunchArguments arguments = order->arrange(table(7, 64, &out));
  ASSERT_EQ(arguments.size(), 3u);
  EXPECT_EQ(arguments[0].int_value(), 64);
  EXPECT_EQ(arguments[1].int_value(), static_cast<int64_t>(reinterpret_cast<uintptr_t>(&out)));
  EXPECT_EQ(arguments[2].int_value(), 7);
  // A build may take fewer values than the binding names.
  absl::StatusOr<ParameterOrder> fewer =
      ParameterOrder::resolve({"n"}, table(0, 0, nullptr), "a test");
  ASSERT_TRUE(fewer.ok());
  EXPECT_EQ(fewer->arrange(table(9, 1, nullptr)).size(), 1u);
}

TEST(ParameterOrder, RefusesAParameterTheBindingDoesNotPass) {
  absl::StatusOr<ParameterOrder> order =
      ParameterOrder::resolve({"n", "clock"}, table(0, 0, nullptr), "K2 of build \"x\"");
  EXPECT_EQ(std::string(order.status().message()),
            "K2 of build \"x\" has a parameter \"clock\" that its binding does not pass; hint: add "
            "it to the "
            "binding's table of arguments");
}

TEST(ParameterOrder, RefusesATableNamingAValueTwice) {
  const std::array<NamedArgument, 2> twice = {
      {{"n", KernelArgument::integer(ScalarType::kI64, 1)},
       {"n", KernelArgument::integer(ScalarType::kI64, 2)}}};
  absl::StatusOr<ParameterOrder> order = ParameterOrder::resolve({"n"}, twice, "K1 of build \"y\"");
  EXPECT_EQ(std::string(order.status().message()),
            "the binding of K1 of build \"y\" names \"n\" twice");
}

TEST(ParameterOrder, ChecksAKernelsParametersByName) {
  using namespace monotile::dsl;  // NOLINT
  Builder b("fill");
  Value out = b.arg("out", ptr(f32)), n = b.arg("n", i64);
  Value offsets = arange(0, 16);
  store(out + offsets, full({16}, 1.0, f32), offsets < n);
  const Program program = b.finish();
  auto catalog = std::make_shared<ProgramCatalog>();
  std::unique_ptr<Device> device = make_cpu_device(interpreter_loader(catalog));
  jit::CompiledBuild build;
  build.name = build.kernel_name = program.name;
  build.code_object = catalog->add(program);
  absl::StatusOr<Kernel> kernel =
      Kernel::load(*device, build,
                   {lower::KernelParam{"out", {ScalarType::kF32, true}, "float*", 8, 8},
                    lower::KernelParam{"n", {ScalarType::kI64, false}, "long long", 8, 8}});
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  const std::array<NamedArgument, 2> named = {
      {{"out", KernelArgument::pointer(nullptr, ScalarType::kF32)},
       {"n", KernelArgument::integer(ScalarType::kI64, 0)}}};
  absl::StatusOr<ParameterOrder> same = ParameterOrder::resolve({"out", "n"}, named, "fill");
  ASSERT_TRUE(same.ok());
  EXPECT_TRUE(same->check(*kernel, [] { return std::string("fill"); }).ok());
  absl::StatusOr<ParameterOrder> other = ParameterOrder::resolve({"n", "out"}, named, "fill");
  ASSERT_TRUE(other.ok());
  EXPECT_EQ(
      std::string(other->check(*kernel, [] { return std::string("the fill build"); }).message()),
      "kernel \"fill\" is not the fill build: parameters (out, n), expected (n, out)");
}

}  // namespace
}  // namespace monotile::runtime
