// One rank's exchange probe on its device; see exchange_probe_rank.h.
#include "runtime/decode/exchange_probe_rank.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "kernels/k3/k2.h"
#include "runtime/decode/step_begin.h"
#include "runtime/k2_launch.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {
namespace {

KernelArgument pointer(DevicePtr address, dsl::ScalarType pointee) {
  return KernelArgument::pointer(reinterpret_cast<const void*>(address), pointee);
}

}  // namespace

absl::StatusOr<std::unique_ptr<ExchangeProbeRank>> ExchangeProbeRank::create(
    Device& device, Group& group, jit::Jit& jit, const std::vector<int>& tokens, int64_t hidden,
    int programs, int64_t wait_ns) {
  std::unique_ptr<ExchangeProbeRank> p(new ExchangeProbeRank());
  p->device_ = &device;
  p->tp_ = group.size();
  p->rank_ = group.rank();
  p->programs_ = programs;
  p->hidden_ = hidden;
  p->wait_ns_ = wait_ns;
  const kernels::k3::PeerExchangeLayout layout = kernels::k3::exchange_probe_layout(p->tp_, hidden);
  MT_ASSIGN_OR_RETURN(p->peers_,
                      PeerBuffer::create(device, group, static_cast<size_t>(layout.bytes())));
  MT_ASSIGN_OR_RETURN(LaunchState state,
                      LaunchState::create(device, programs, "the exchange probe"));
  p->state_ = std::make_unique<LaunchState>(std::move(state));
  const size_t rows = static_cast<size_t>(kernels::k3::kExchangeTokens * hidden) * 2;
  MT_ASSIGN_OR_RETURN(p->src_, device.allocate(rows));
  MT_ASSIGN_OR_RETURN(p->out_, device.allocate(rows));
  MT_ASSIGN_OR_RETURN(p->words_, device.allocate(8));  // the counter, then the flag
  MT_ASSIGN_OR_RETURN(p->clock_, device.allocate(static_cast<size_t>(programs) * 16));
  MT_RETURN_IF_ERROR(zero_bytes(device, p->words_.address(), 8, nullptr));
  MT_RETURN_IF_ERROR(zero_bytes(device, p->src_.address(), rows, nullptr));
  for (int t : tokens) {
    const kernels::k3::ExchangeProbe probe{
        .tp = p->tp_, .rank = p->rank_, .tokens = t, .hidden = hidden, .wait_ns = wait_ns};
    MT_ASSIGN_OR_RETURN(Kernel kernel,
                        load_program(device, kernels::k3::exchange_probe_program(probe), jit));
    p->kernels_.emplace(t, std::move(kernel));
  }
  MT_ASSIGN_OR_RETURN(Kernel bump, load_program(device, step_begin_program(), jit));
  p->step_begin_.emplace(std::move(bump));
  return p;
}

absl::Status ExchangeProbeRank::write_source(int tokens, const std::vector<uint16_t>& bits) {
  if (bits.size() != static_cast<size_t>(tokens * hidden_)) {
    return absl::InvalidArgumentError(absl::StrCat("the exchange probe's source: ", bits.size(),
                                                   " values, expected ", tokens, " x ", hidden_));
  }
  return device_->copy_to_device(src_.address(), bits.data(), bits.size() * 2);
}

absl::Status ExchangeProbeRank::poison_reduced() {
  const std::vector<uint16_t> nan(static_cast<size_t>(kernels::k3::kExchangeTokens * hidden_),
                                  0x7fc1);
  return device_->copy_to_device(out_.address(), nan.data(), nan.size() * 2);
}

absl::Status ExchangeProbeRank::launch(int tokens, Stream& stream) {
  auto kernel = kernels_.find(tokens);
  if (kernel == kernels_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the exchange probe was not made for ", tokens, " rows"));
  }
  MT_RETURN_IF_ERROR(state_->set_epoch(++epoch_));
  return launch_probe(kernel->second, stream);
}

absl::Status ExchangeProbeRank::launch_chain(int tokens, int count, Stream& stream) {
  auto kernel = kernels_.find(tokens);
  if (kernel == kernels_.end()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the exchange probe was not made for ", tokens, " rows"));
  }
  const KernelArgument epoch = pointer(state_->epoch(), dsl::ScalarType::kI32);
  for (int i = 0; i < count; ++i) {
    MT_RETURN_IF_ERROR(step_begin_->launch(Dim3{1, 1, 1}, std::span(&epoch, 1), stream));
    MT_RETURN_IF_ERROR(launch_probe(kernel->second, stream));
  }
  // The device's epoch word now holds epoch_ + count (each bump in stream order).
  epoch_ += count;
  return absl::OkStatus();
}

absl::Status ExchangeProbeRank::launch_probe(const Kernel& kernel, Stream& stream) {
  std::vector<KernelArgument> args = {
      pointer(src_.address(), dsl::ScalarType::kBf16),
      pointer(out_.address(), dsl::ScalarType::kBf16),
      pointer(words_.address(), dsl::ScalarType::kI32),
      pointer(words_.address() + 4, dsl::ScalarType::kI32),
      pointer(state_->epoch(), dsl::ScalarType::kI32),
      KernelArgument::integer(dsl::ScalarType::kI32, 255),  // the tag slot: no layer's
      pointer(state_->health(), dsl::ScalarType::kI32),
      pointer(state_->alarm(), dsl::ScalarType::kI32),
      pointer(clock_.address(), dsl::ScalarType::kI64)};
  for (int r = 0; r < tp_; ++r) args.push_back(pointer(peers_->address(r), dsl::ScalarType::kI32));
  return kernel.launch(Dim3{static_cast<uint32_t>(programs_), 1, 1}, args, stream);
}

absl::StatusOr<std::vector<uint16_t>> ExchangeProbeRank::reduced(int tokens) const {
  std::vector<uint16_t> bits(static_cast<size_t>(tokens * hidden_));
  MT_RETURN_IF_ERROR(device_->copy_to_host(bits.data(), out_.address(), bits.size() * 2));
  return bits;
}

absl::StatusOr<std::vector<int64_t>> ExchangeProbeRank::clock() const {
  std::vector<int64_t> stamps(static_cast<size_t>(programs_) * 2);
  MT_RETURN_IF_ERROR(device_->copy_to_host(stamps.data(), clock_.address(), stamps.size() * 8));
  return stamps;
}

absl::StatusOr<int32_t> ExchangeProbeRank::device_epoch() const {
  return state_->read_epoch();
}

absl::Status ExchangeProbeRank::adopt_device_epoch() {
  MT_ASSIGN_OR_RETURN(epoch_, state_->read_epoch());
  return absl::OkStatus();
}

absl::Status ExchangeProbeRank::check_health() const {
  return state_->check_health(absl::StrCat("the exchange probe of TP ", tp_, " rank ", rank_),
                              wait_ns_, k2_region_name, [](int32_t region) {
                                return region >=
                                       static_cast<int32_t>(kernels::k3::K2Region::kOProjPeers);
                              });
}

}  // namespace monotile::runtime::decode
