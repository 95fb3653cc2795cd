// One K2 case's tensors on a device, as K2's binding takes them, for the tests that launch K2 (its
// binding on the interpreter, k2_launch_test; one rank of a TP group, decode/k2_tp_test_support.h):
// uploaded once, the prefix restored and every output poisoned before each launch, the outputs read
// back. Compiled into the test binaries (gtest assertions), not into a library.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/k3/k2_test_support.h"
#include "runtime/device.h"
#include "runtime/k2_launch.h"

namespace monotile::runtime {

class K2StepTensors {
 public:
  // Every input uploaded, every output poisoned: a NaN, expert -7, a NaN weight.
  K2StepTensors(Device& device, const kernels::k3::K2Inputs& in) : device_(device), in_(in) {
    t_.core = upload(in.core);
    t_.w_o = upload(in.w_o);
    t_.prefix = upload(in.prefix);
    t_.blocks = upload(in.blocks);
    t_.blocks_token_stride = in.block_count * in.build.hidden;
    t_.blocks_block_stride = in.build.hidden;
    t_.mlp_res_norm = upload(in.mlp_res_norm);
    t_.mlp_res_proj = upload(in.mlp_res_proj);
    t_.post_norm = upload(in.post_norm);
    t_.w_gate = upload(in.w_gate);
    t_.gate_bias = upload(in.gate_bias);
    t_.w_ld = upload(in.w_ld);
    t_.w_gu = upload(in.w_gu);
    t_.w_sd = upload(in.w_sd);
    t_.w13 = upload(in.w13);
    t_.w13_scale = upload(in.w13_scale);
    t_.w2 = upload(in.w2);
    t_.w2_scale = upload(in.w2_scale);
    t_.latent_norm = upload(in.latent_norm);
    t_.w_up = upload(in.w_up);
    t_.out = upload(std::vector<uint16_t>(rows(), kPoison));
    t_.route_experts = upload(std::vector<int32_t>(routes(), -7));
    t_.route_weights = upload(std::vector<float>(routes(), std::nanf("")));
  }

  // Restores the prefix (K2 updates it in place) and poisons every output, a and y in the
  // scratch's data included. A launch expected to give up a wait (`failing`) runs to its end on
  // what the skipped waits left, so its routes start at expert 0 instead (the interpreter refuses
  // an access out of bounds).
  void reset(const K2Launch& launch, bool failing = false) {
    copy_in(t_.prefix, in_.prefix);
    copy_in(t_.out, std::vector<uint16_t>(rows(), kPoison));
    copy_in(t_.route_experts, std::vector<int32_t>(routes(), failing ? 0 : -7));
    copy_in(t_.route_weights, std::vector<float>(routes(), failing ? 0.0f : std::nanf("")));
    copy_in(launch.a_rows(), std::vector<uint16_t>(rows(), kPoison));
    copy_in(launch.y_rows(), std::vector<uint16_t>(rows(), kPoison));
  }

  kernels::k3::K2Outputs outputs(const K2Launch& launch) {
    kernels::k3::K2Outputs got;
    got.a = copy_out<uint16_t>(launch.a_rows(), rows());
    got.y = copy_out<uint16_t>(launch.y_rows(), rows());
    got.prefix = copy_out<uint16_t>(t_.prefix, rows());
    got.out = copy_out<uint16_t>(t_.out, rows());
    got.route_experts = copy_out<int32_t>(t_.route_experts, routes());
    got.route_weights = copy_out<float>(t_.route_weights, routes());
    return got;
  }

  const K2Tensors& tensors() const { return t_; }

 private:
  static constexpr uint16_t kPoison = 0x7fc1;
  size_t rows() const { return static_cast<size_t>(in_.build.tokens) * in_.build.hidden; }
  size_t routes() const { return static_cast<size_t>(in_.build.tokens) * in_.build.top_k; }

  template <typename T>
  DevicePtr upload(const std::vector<T>& values) {
    absl::StatusOr<DeviceBuffer> buffer =
        device_.allocate(std::max<size_t>(values.size() * sizeof(T), 16));
    EXPECT_TRUE(buffer.ok()) << buffer.status();
    copy_in(buffer->address(), values);
    buffers_.push_back(std::move(*buffer));
    return buffers_.back().address();
  }
  template <typename T>
  void copy_in(DevicePtr at, const std::vector<T>& values) {
    EXPECT_TRUE(device_.copy_to_device(at, values.data(), values.size() * sizeof(T)).ok());
  }
  template <typename T>
  std::vector<T> copy_out(DevicePtr at, size_t count) {
    std::vector<T> values(count);
    EXPECT_TRUE(device_.copy_to_host(values.data(), at, count * sizeof(T)).ok());
    return values;
  }

  Device& device_;
  const kernels::k3::K2Inputs& in_;
  K2Tensors t_;
  std::vector<DeviceBuffer> buffers_;
};

}  // namespace monotile::runtime
