// Creation ops (constant, arange, program ids) and shape ops (broadcast, expand_dims, reshape, trans,
// join, split, cat). Shape ops only move elements, with their provenance: they are gathers through
// a flat index list.
#include <cmath>

#include "dsl/interp/ops.h"

namespace monotile::dsl::interp {
namespace {

// dst[i] = src[index[i]] over whichever storage the tiles use, provenance included.
void gather(const Tile& src, const std::vector<int64_t>& index, Tile& dst) {
  if (!dst.floats.empty() || !src.floats.empty()) {
    for (size_t i = 0; i < index.size(); ++i) dst.floats[i] = src.floats[static_cast<size_t>(index[i])];
  } else {
    for (size_t i = 0; i < index.size(); ++i) dst.ints[i] = src.ints[static_cast<size_t>(index[i])];
  }
  if (src.provenance.is_uniform()) {
    dst.provenance.set_uniform(src.provenance.uniform);
  } else {
    dst.provenance.lanes.resize(index.size());
    for (size_t i = 0; i < index.size(); ++i) {
      dst.provenance.lanes[i] = src.provenance.lanes[static_cast<size_t>(index[i])];
    }
    dst.provenance.compact();
  }
}

// The provenance of a tile made of lanes of `a` and `b`: a's where `from_a(i)`, else b's.
template <typename FromA, typename IndexInA, typename IndexInB>
void merge_provenance(const Provenance& a, const Provenance& b, size_t count, FromA from_a,
                      IndexInA in_a, IndexInB in_b, Provenance& out) {
  if (a.is_uniform() && b.is_uniform() && a.uniform == b.uniform) {
    out.set_uniform(a.uniform);
    return;
  }
  out.lanes.resize(count);
  for (size_t i = 0; i < count; ++i) out.lanes[i] = from_a(i) ? a.at(in_a(i)) : b.at(in_b(i));
  out.compact();
}

// Flat source indices for an output of `shape` reading the source with per-output-dim `strides`.
std::vector<int64_t> strided_index(const std::vector<int64_t>& shape, const std::vector<int64_t>& strides) {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  std::vector<int64_t> index(static_cast<size_t>(count));
  std::vector<int64_t> position(shape.size(), 0);
  int64_t offset = 0;
  for (int64_t flat = 0; flat < count; ++flat) {
    index[static_cast<size_t>(flat)] = offset;
    for (size_t d = shape.size(); d-- > 0;) {  // odometer, last dim fastest
      offset += strides[d];
      if (++position[d] < shape[d]) break;
      offset -= strides[d] * shape[d];
      position[d] = 0;
    }
  }
  return index;
}

void copy_same_order(const Tile& src, Tile& dst) {
  if (!src.floats.empty()) dst.floats.assign(src.floats.begin(), src.floats.end());
  else dst.ints.assign(src.ints.begin(), src.ints.end());
  dst.provenance = src.provenance;
}

absl::Status exec_constant(Frame& frame, const Op& op) {
  const Type& type = frame.result_type(op);
  Tile& out = frame.result(op);
  if (stored_as_float(type.element)) {
    const double value = round_float(type.element.scalar, op.attrs.float_value);
    std::fill(out.floats.begin(), out.floats.end(), value);
  } else {
    const int64_t value = type.element.pointer
                              ? op.attrs.int_value
                              : wrap_integer(type.element.scalar, static_cast<uint64_t>(op.attrs.int_value));
    std::fill(out.ints.begin(), out.ints.end(), value);
  }
  return absl::OkStatus();
}

absl::Status exec_broadcast(Frame& frame, const Op& op) {
  const Type& in = frame.operand_type(op, 0);
  const Type& out_type = frame.result_type(op);
  // numpy rules, dims aligned at the right; a size-1 (or missing) dim reads with stride 0.
  const std::vector<int64_t> in_strides = row_major_strides(in.shape);
  const size_t rank = out_type.shape.size();
  std::vector<int64_t> strides(rank, 0);
  for (size_t i = 0; i < in.shape.size(); ++i) {
    const size_t d = rank - in.shape.size() + i;
    if (in.shape[i] == out_type.shape[d]) strides[d] = in_strides[i];
    else if (in.shape[i] != 1) return op_error(frame, op, "cannot broadcast " + in.str() + " to " + out_type.str());
  }
  const Tile& src = frame.operand(op, 0);
  gather(src, strided_index(out_type.shape, strides), frame.result(op));
  return absl::OkStatus();
}

absl::Status exec_trans(Frame& frame, const Op& op) {
  const Type& in = frame.operand_type(op, 0);
  const Type& out_type = frame.result_type(op);
  const std::vector<int64_t> in_strides = row_major_strides(in.shape);
  std::vector<int64_t> strides(out_type.shape.size());
  for (size_t i = 0; i < strides.size(); ++i) strides[i] = in_strides[static_cast<size_t>(op.attrs.ints.at(i))];
  gather(frame.operand(op, 0), strided_index(out_type.shape, strides), frame.result(op));
  return absl::OkStatus();
}

absl::Status exec_join(Frame& frame, const Op& op) {
  const Tile& a = frame.operand(op, 0);
  const Tile& b = frame.operand(op, 1);
  Tile& out = frame.result(op);
  const size_t n = a.size();
  if (!out.floats.empty()) {
    for (size_t i = 0; i < n; ++i) out.floats[2 * i] = a.floats[i], out.floats[2 * i + 1] = b.floats[i];
  } else {
    for (size_t i = 0; i < n; ++i) out.ints[2 * i] = a.ints[i], out.ints[2 * i + 1] = b.ints[i];
  }
  merge_provenance(a.provenance, b.provenance, 2 * n, [](size_t i) { return i % 2 == 0; },
                   [](size_t i) { return i / 2; }, [](size_t i) { return i / 2; }, out.provenance);
  return absl::OkStatus();
}

absl::Status exec_split(Frame& frame, const Op& op) {
  const Tile& in = frame.operand(op, 0);
  for (size_t half = 0; half < 2; ++half) {
    Tile& out = frame.result(op, half);
    const size_t n = out.size();
    if (!out.floats.empty()) {
      for (size_t i = 0; i < n; ++i) out.floats[i] = in.floats[2 * i + half];
    } else {
      for (size_t i = 0; i < n; ++i) out.ints[i] = in.ints[2 * i + half];
    }
    if (in.provenance.is_uniform()) {
      out.provenance.set_uniform(in.provenance.uniform);
    } else {
      out.provenance.lanes.resize(n);
      for (size_t i = 0; i < n; ++i) out.provenance.lanes[i] = in.provenance.lanes[2 * i + half];
      out.provenance.compact();
    }
  }
  return absl::OkStatus();
}

absl::Status exec_cat(Frame& frame, const Op& op) {
  const Type& a_type = frame.operand_type(op, 0);
  const Type& b_type = frame.operand_type(op, 1);
  const auto axis = static_cast<size_t>(op.attrs.axis);
  int64_t outer = 1, a_inner = 1, b_inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= a_type.shape[d];
  for (size_t d = axis; d < a_type.shape.size(); ++d) a_inner *= a_type.shape[d];
  for (size_t d = axis; d < b_type.shape.size(); ++d) b_inner *= b_type.shape[d];
  std::vector<int64_t> index;
  index.reserve(static_cast<size_t>(outer * (a_inner + b_inner)));
  // Index space: a's elements first, then b's at an offset of a's size.
  const int64_t b_base = outer * a_inner;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < a_inner; ++i) index.push_back(o * a_inner + i);
    for (int64_t i = 0; i < b_inner; ++i) index.push_back(b_base + o * b_inner + i);
  }
  Tile both;
  const Tile& a = frame.operand(op, 0);
  const Tile& b = frame.operand(op, 1);
  if (!a.floats.empty()) {
    both.floats = a.floats;
    both.floats.insert(both.floats.end(), b.floats.begin(), b.floats.end());
  } else {
    both.ints = a.ints;
    both.ints.insert(both.ints.end(), b.ints.begin(), b.ints.end());
  }
  const size_t a_count = a.size();
  merge_provenance(
      a.provenance, b.provenance, a_count + b.size(), [&](size_t i) { return i < a_count; },
      [](size_t i) { return i; }, [&](size_t i) { return i - a_count; }, both.provenance);
  gather(both, index, frame.result(op));
  return absl::OkStatus();
}

}  // namespace

absl::Status exec_shape(Frame& frame, const Op& op) {
  switch (op.code) {
    case OpCode::kConstant: return exec_constant(frame, op);
    case OpCode::kArange: {
      Tile& out = frame.result(op);
      const int64_t start = op.attrs.ints.at(0);
      for (size_t i = 0; i < out.ints.size(); ++i) out.ints[i] = start + static_cast<int64_t>(i);
      return absl::OkStatus();
    }
    case OpCode::kProgramId:
      frame.result(op).ints[0] = frame.program_id.at(static_cast<size_t>(op.attrs.axis));
      return absl::OkStatus();
    case OpCode::kNumPrograms:
      frame.result(op).ints[0] = frame.num_programs.at(static_cast<size_t>(op.attrs.axis));
      return absl::OkStatus();
    case OpCode::kBroadcast: return exec_broadcast(frame, op);
    case OpCode::kExpandDims:
    case OpCode::kReshape: {
      const Tile& in = frame.operand(op, 0);
      copy_same_order(in, frame.result(op));
      return absl::OkStatus();
    }
    case OpCode::kTrans: return exec_trans(frame, op);
    case OpCode::kJoin: return exec_join(frame, op);
    case OpCode::kSplit: return exec_split(frame, op);
    case OpCode::kCat: return exec_cat(frame, op);
    default: return op_error(frame, op, "not a shape op");
  }
}

}  // namespace monotile::dsl::interp
