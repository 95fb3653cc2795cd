// Distributed layouts: which thread holds which element of a tile, in which register.
// Invariant: a layout never wraps: every (thread, register) maps to one in-bounds element and every
// element is held by at least one thread; threads whose "replicated" lane/warp bits differ hold the
// same elements (slices and small tiles), and the one with those bits zero is the element's owner.
#pragma once

#include <cstdint>
#include <string>
#include <optional>
#include <vector>

#include "dsl/target.h"

namespace monotile::dsl::lower {

// How one tile dimension is spread. coordinate = (warp_d * tpw + lane_d) * spt + rep * cover() + s,
// with lane_d = (lane / lane_stride) % tpw, warp_d = (warp / warp_stride) % wpb, s < spt, rep < reps().
struct DimLayout {
  int64_t size = 1;
  int spt = 1;          // contiguous elements per thread
  int tpw = 1;          // lanes along this dim
  int lane_stride = 0;  // 0 when tpw == 1
  int wpb = 1;          // warps along this dim
  int warp_stride = 0;  // 0 when wpb == 1
  int64_t cover() const { return int64_t{spt} * tpw * wpb; }
  int64_t reps() const { return size / cover(); }
  int64_t regs() const { return spt * reps(); }
  friend bool operator==(const DimLayout&, const DimLayout&) = default;
};

class Layout {
 public:
  // The layout of a scalar: one register, every thread holds it.
  static Layout scalar(int warp_size, int num_warps);
  // Each thread owns `vector` contiguous elements along the last dim (fewer if the dim is small),
  // lanes fill dims fastest-first, warps slowest-first; leftover lanes/warps replicate.
  static Layout blocked(const std::vector<int64_t>& shape, int vector, int warp_size, int num_warps);
  // A layout given dim by dim (matrix-unit accumulators); checked for consistency.
  static Layout make(std::vector<DimLayout> dims, int warp_size, int num_warps);

  // The layout of a reduction's result along `axis`: that dim removed, its lanes/warps replicated.
  Layout slice(int axis) const;
  // A size-1 dim inserted at `axis` (expand_dims): registers are unchanged.
  Layout expand(int axis) const;
  // The dims reordered as trans(x, perm) reorders them: every thread keeps its elements, only the
  // order of its registers changes.
  Layout permuted(const std::vector<int64_t>& perm) const;
  // The layout of this tile's elements each made into `factor` neighbours along the last dim: the
  // last dim's size and runs times `factor`, so that register i holds part i % factor of the
  // source's register i / factor (the last dim's registers are fastest). unpack_bf16's words give
  // pairs (widened(2)), mxfp4_word_pairs' four words (widened(4)).
  Layout widened(int factor) const;
  Layout pairs() const { return widened(2); }
  // The inverse: the layout of the elements whose widened(factor) this is; none where the last
  // dim's runs are not a multiple of `factor` (a source element's parts would span two threads).
  std::optional<Layout> narrowed(int factor) const;
  std::optional<Layout> words() const { return narrowed(2); }
  // This layout with dims of `shape` that are 1 here stretched over free lanes and warps
  // (broadcast), or `*this` when the rank differs.
  Layout stretched(const std::vector<int64_t>& shape) const;

  int rank() const { return static_cast<int>(dims_.size()); }
  const std::vector<DimLayout>& dims() const { return dims_; }
  const DimLayout& dim(int d) const { return dims_.at(d); }
  std::vector<int64_t> shape() const;
  int warp_size() const { return warp_size_; }
  int num_warps() const { return num_warps_; }
  int64_t num_regs() const;
  // Registers enumerate dims slowest-first; register index = sum_d k_d * reg_stride(d), k_d < regs().
  int64_t reg_stride(int d) const;
  // Lane / warp bits that no dim uses: threads differing only there hold the same elements.
  int replicated_lane_mask() const;
  int replicated_warp_mask() const;
  // Whether `other` holds the elements of the dims where this layout is not size 1 in the same
  // threads and per-dim register positions (broadcast from this layout to `other` is register-local).
  bool broadcasts_to(const Layout& other) const;

  std::string str() const;  // "[spt 1x4 tpw 4x8 wpb 4x1 rep 1x1]"
  friend bool operator==(const Layout&, const Layout&) = default;

 private:
  std::vector<DimLayout> dims_;
  int warp_size_ = 1;
  int num_warps_ = 1;
};

// The largest power of two dividing `value` (value > 0).
int64_t pow2_part(int64_t value);

}  // namespace monotile::dsl::lower
