// Layout construction (blocked, slice, expand, stretch) and the register/thread bookkeeping.
#include "dsl/lower/layout.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "support/check.h"

namespace monotile::dsl::lower {
namespace {

bool is_pow2(int64_t value) { return value > 0 && (value & (value - 1)) == 0; }

// The lowest run of contiguous zero bits of `used` below `limit` (a power of two), as (stride, count).
std::pair<int, int> free_run(int used, int limit, int64_t budget) {
  int stride = 1;
  while (stride < limit && (used & stride)) stride <<= 1;
  if (stride >= limit) return {0, 1};
  int count = 1;
  while (stride * count < limit && !(used & (stride * count)) && count * 2 <= budget) count <<= 1;
  return {stride, count};
}

}  // namespace

int64_t pow2_part(int64_t value) {
  MT_CHECK(value > 0);
  return value & -value;
}

Layout Layout::scalar(int warp_size, int num_warps) { return make({}, warp_size, num_warps); }

Layout Layout::make(std::vector<DimLayout> dims, int warp_size, int num_warps) {
  MT_CHECK(is_pow2(warp_size) && is_pow2(num_warps));
  Layout layout;
  layout.dims_ = std::move(dims);
  layout.warp_size_ = warp_size;
  layout.num_warps_ = num_warps;
  int lanes = 0;
  int warps = 0;
  for (DimLayout& dim : layout.dims_) {
    if (dim.tpw == 1) dim.lane_stride = 0;
    if (dim.wpb == 1) dim.warp_stride = 0;
    MT_CHECK(is_pow2(dim.spt) && is_pow2(dim.tpw) && is_pow2(dim.wpb));
    MT_CHECK(dim.size % dim.cover() == 0, "a layout must not wrap");
    int lane_bits = (dim.tpw - 1) * dim.lane_stride;
    int warp_bits = (dim.wpb - 1) * dim.warp_stride;
    MT_CHECK((lanes & lane_bits) == 0 && (warps & warp_bits) == 0, "dims share lane or warp bits");
    lanes |= lane_bits;
    warps |= warp_bits;
  }
  MT_CHECK(lanes < warp_size && warps < num_warps);
  return layout;
}

Layout Layout::blocked(const std::vector<int64_t>& shape, int vector, int warp_size, int num_warps) {
  std::vector<DimLayout> dims(shape.size());
  std::vector<int64_t> budget(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    dims[d].size = shape[d];
    budget[d] = pow2_part(shape[d]);
  }
  if (!dims.empty()) {
    int spt = static_cast<int>(std::min<int64_t>(std::max(vector, 1), budget.back()));
    dims.back().spt = spt;
    budget.back() /= spt;
  }
  int lane_stride = 1;
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    int tpw = static_cast<int>(std::min<int64_t>(warp_size / lane_stride, budget[d]));
    dims[d].tpw = tpw;
    dims[d].lane_stride = lane_stride;
    lane_stride *= tpw;
    budget[d] /= tpw;
  }
  int warp_stride = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    int wpb = static_cast<int>(std::min<int64_t>(num_warps / warp_stride, budget[d]));
    dims[d].wpb = wpb;
    dims[d].warp_stride = warp_stride;
    warp_stride *= wpb;
  }
  return make(std::move(dims), warp_size, num_warps);
}

Layout Layout::slice(int axis) const {
  std::vector<DimLayout> dims = dims_;
  dims.erase(dims.begin() + axis);
  return make(std::move(dims), warp_size_, num_warps_);
}

Layout Layout::expand(int axis) const {
  std::vector<DimLayout> dims = dims_;
  dims.insert(dims.begin() + axis, DimLayout{});
  return make(std::move(dims), warp_size_, num_warps_);
}

Layout Layout::permuted(const std::vector<int64_t>& perm) const {
  MT_CHECK(static_cast<int>(perm.size()) == rank(), "a permutation names every dim");
  std::vector<DimLayout> dims;
  for (int64_t d : perm) dims.push_back(dims_.at(d));
  return make(std::move(dims), warp_size_, num_warps_);
}

Layout Layout::widened(int factor) const {
  MT_CHECK(rank() > 0, "a scalar has no last dim to widen");
  std::vector<DimLayout> dims = dims_;
  dims.back().size *= factor;
  dims.back().spt *= factor;
  return make(std::move(dims), warp_size_, num_warps_);
}

std::optional<Layout> Layout::narrowed(int factor) const {
  if (rank() == 0 || dims_.back().spt % factor != 0) return std::nullopt;
  std::vector<DimLayout> dims = dims_;
  dims.back().size /= factor;
  dims.back().spt /= factor;
  return make(std::move(dims), warp_size_, num_warps_);
}

Layout Layout::stretched(const std::vector<int64_t>& shape) const {
  if (static_cast<int>(shape.size()) != rank()) return *this;
  std::vector<DimLayout> dims = dims_;
  int lanes_used = (warp_size_ - 1) & ~replicated_lane_mask();
  int warps_used = (num_warps_ - 1) & ~replicated_warp_mask();
  for (int d = rank() - 1; d >= 0; --d) {
    if (dims[d].size != 1 || shape[d] == 1) continue;
    DimLayout dim;
    dim.size = shape[d];
    int64_t budget = pow2_part(shape[d]);
    auto [lane_stride, tpw] = free_run(lanes_used, warp_size_, budget);
    dim.tpw = tpw;
    dim.lane_stride = lane_stride;
    lanes_used |= (tpw - 1) * lane_stride;
    budget /= tpw;
    auto [warp_stride, wpb] = free_run(warps_used, num_warps_, budget);
    dim.wpb = wpb;
    dim.warp_stride = warp_stride;
    warps_used |= (wpb - 1) * warp_stride;
    dims[d] = dim;
  }
  return make(std::move(dims), warp_size_, num_warps_);
}

std::vector<int64_t> Layout::shape() const {
  std::vector<int64_t> shape;
  for (const DimLayout& dim : dims_) shape.push_back(dim.size);
  return shape;
}

int64_t Layout::num_regs() const {
  int64_t regs = 1;
  for (const DimLayout& dim : dims_) regs *= dim.regs();
  return regs;
}

int64_t Layout::reg_stride(int d) const {
  int64_t stride = 1;
  for (int e = rank() - 1; e > d; --e) stride *= dims_[e].regs();
  return stride;
}

int Layout::replicated_lane_mask() const {
  int used = 0;
  for (const DimLayout& dim : dims_) used |= (dim.tpw - 1) * dim.lane_stride;
  return (warp_size_ - 1) & ~used;
}

int Layout::replicated_warp_mask() const {
  int used = 0;
  for (const DimLayout& dim : dims_) used |= (dim.wpb - 1) * dim.warp_stride;
  return (num_warps_ - 1) & ~used;
}

bool Layout::broadcasts_to(const Layout& other) const {
  if (other.rank() != rank() || other.warp_size_ != warp_size_ || other.num_warps_ != num_warps_) {
    return false;
  }
  for (int d = 0; d < rank(); ++d) {
    if (dims_[d].size == 1) continue;
    if (!(dims_[d] == other.dims_[d])) return false;
  }
  return true;
}

std::string Layout::str() const {
  if (dims_.empty()) return "[scalar]";
  std::vector<std::string> spt, tpw, wpb, rep;
  for (const DimLayout& dim : dims_) {
    spt.push_back(std::to_string(dim.spt));
    tpw.push_back(dim.tpw == 1 ? "1" : absl::StrCat(dim.tpw, "@", dim.lane_stride));
    wpb.push_back(dim.wpb == 1 ? "1" : absl::StrCat(dim.wpb, "@", dim.warp_stride));
    rep.push_back(std::to_string(dim.reps()));
  }
  return absl::StrCat("[spt ", absl::StrJoin(spt, "x"), " tpw ", absl::StrJoin(tpw, "x"), " wpb ",
                      absl::StrJoin(wpb, "x"), " rep ", absl::StrJoin(rep, "x"), "]");
}

}  // namespace monotile::dsl::lower
