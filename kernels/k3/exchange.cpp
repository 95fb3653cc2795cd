#include "kernels/k3/exchange.h"

#include "dsl/dsl.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

void LocalExchange::contribute(const Value& partial, const Value& cols, const Value&, int shares) {
  auto ts = arange(0, partial.shape()[1]);
  // bf16(bf16(partial)) = bf16(partial): one rank's sum is its rounded partial.
  store(b_.out + row(ts) * width_ + col(cols), partial.to(bf16), col(cols < width_) & row(ts < tokens_));
  arrive(b_.counter, shares, b_.flag, context_);
}

void LocalExchange::wait_reduced(const Value& index) { wait_flag(b_.flag, region_, index, context_); }

}  // namespace monotile::kernels::k3
