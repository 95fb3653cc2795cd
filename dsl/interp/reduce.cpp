// Reductions, arg-reductions and inclusive scans along one axis. Float sums accumulate in f32 for
// f32/f16/bf16 (f64 in double) sequentially in index order and round once; integer sums wrap.
// argmax/argmin: ties to the lower index, NaN greater than every number.
#include "dsl/interp/ops.h"
#include "dsl/scalar_semantics.h"

namespace monotile::dsl::interp {
namespace {

// A tile viewed as [outer, length, inner] around the reduced axis.
struct AxisView {
  int64_t outer = 1, length = 1, inner = 1;
  AxisView(const Type& type, int axis) {
    for (int d = 0; d < static_cast<int>(type.shape.size()); ++d) {
      if (d < axis) outer *= type.shape[static_cast<size_t>(d)];
      else if (d == axis) length = type.shape[static_cast<size_t>(d)];
      else inner *= type.shape[static_cast<size_t>(d)];
    }
  }
  size_t at(int64_t o, int64_t k, int64_t i) const { return static_cast<size_t>((o * length + k) * inner + i); }
};

// Combines `accumulator` and `element` through the custom combine region (a, b) -> (c).
class RegionCombiner {
 public:
  RegionCombiner(Frame& frame, const Op& op, bool floats) : frame_(frame), op_(op) {
    a_.floats.resize(floats ? 1 : 0), a_.ints.resize(floats ? 0 : 1);
    b_ = a_;
  }
  template <typename Value>
  absl::Status combine(Value accumulator, Value element, Value& out) {
    set(a_, accumulator);
    set(b_, element);
    const Tile* args[2] = {&a_, &b_};
    absl::Status status = run_region(frame_, op_.regions.at(0), args, results_);
    if (!status.ok()) return status;
    if constexpr (std::is_same_v<Value, double>) out = results_.at(0).floats.at(0);
    else out = results_.at(0).ints.at(0);
    return absl::OkStatus();
  }

 private:
  static void set(Tile& tile, double value) { tile.floats[0] = value; }
  static void set(Tile& tile, int64_t value) { tile.ints[0] = value; }
  Frame& frame_;
  const Op& op_;
  Tile a_, b_;
  std::vector<Tile> results_;
};

absl::Status exec_reduce(Frame& frame, const Op& op) {
  const Type& type = frame.operand_type(op, 0);
  const ScalarType scalar = arithmetic_type(type.element);
  const AxisView view(type, op.attrs.axis);
  const Tile& in = frame.operand(op, 0);
  Tile& out = frame.result(op);
  const ReduceKind kind = op.attrs.reduce;
  if (kind == ReduceKind::kCustom) {
    RegionCombiner combiner(frame, op, !in.floats.empty());
    for (int64_t o = 0; o < view.outer; ++o) {
      for (int64_t i = 0; i < view.inner; ++i) {
        const size_t slot = static_cast<size_t>(o * view.inner + i);
        if (!in.floats.empty()) {
          double acc = in.floats[view.at(o, 0, i)];
          for (int64_t k = 1; k < view.length; ++k) {
            absl::Status status = combiner.combine(acc, in.floats[view.at(o, k, i)], acc);
            if (!status.ok()) return status;
          }
          out.floats[slot] = acc;
        } else {
          int64_t acc = in.ints[view.at(o, 0, i)];
          for (int64_t k = 1; k < view.length; ++k) {
            absl::Status status = combiner.combine(acc, in.ints[view.at(o, k, i)], acc);
            if (!status.ok()) return status;
          }
          out.ints[slot] = acc;
        }
      }
    }
    return absl::OkStatus();
  }
  if (is_float(scalar)) {
    if (kind == ReduceKind::kXorSum) return op_error(frame, op, "xor_sum takes integers, got " + type.str());
    for (int64_t o = 0; o < view.outer; ++o) {
      for (int64_t i = 0; i < view.inner; ++i) {
        double result = in.floats[view.at(o, 0, i)];
        if (kind == ReduceKind::kSum && scalar != ScalarType::kF64) {
          float acc = 0;  // f32 accumulation for f32/f16/bf16
          for (int64_t k = 0; k < view.length; ++k) acc += static_cast<float>(in.floats[view.at(o, k, i)]);
          result = acc;
        } else if (kind == ReduceKind::kSum) {
          result = 0;
          for (int64_t k = 0; k < view.length; ++k) result += in.floats[view.at(o, k, i)];
        } else {
          for (int64_t k = 1; k < view.length; ++k) {
            const double x = in.floats[view.at(o, k, i)];
            result = kind == ReduceKind::kMax ? float_max(result, x) : float_min(result, x);
          }
        }
        out.floats[static_cast<size_t>(o * view.inner + i)] = round_float(scalar, result);
      }
    }
    return absl::OkStatus();
  }
  for (int64_t o = 0; o < view.outer; ++o) {
    for (int64_t i = 0; i < view.inner; ++i) {
      uint64_t acc = kind == ReduceKind::kSum || kind == ReduceKind::kXorSum
                         ? 0
                         : static_cast<uint64_t>(in.ints[view.at(o, 0, i)]);
      for (int64_t k = 0; k < view.length; ++k) {
        const int64_t x = in.ints[view.at(o, k, i)];
        switch (kind) {
          case ReduceKind::kSum: acc += static_cast<uint64_t>(x); break;
          case ReduceKind::kXorSum: acc ^= static_cast<uint64_t>(x); break;
          case ReduceKind::kMax: acc = static_cast<uint64_t>(std::max(static_cast<int64_t>(acc), x)); break;
          default: acc = static_cast<uint64_t>(std::min(static_cast<int64_t>(acc), x)); break;
        }
      }
      out.ints[static_cast<size_t>(o * view.inner + i)] = wrap_integer(scalar, acc);
    }
  }
  return absl::OkStatus();
}

// Whether `a` beats `b` for argmax (greater) or argmin (less), with NaN greater than every number.
bool beats(bool is_max, double a, double b) {
  return is_max ? nan_last_less(b, a) : nan_last_less(a, b);
}

absl::Status exec_arg_reduce(Frame& frame, const Op& op) {
  const Type& type = frame.operand_type(op, 0);
  const AxisView view(type, op.attrs.axis);
  const Tile& in = frame.operand(op, 0);
  std::vector<int64_t>& out = frame.result(op).ints;
  const bool is_max = op.attrs.reduce == ReduceKind::kMax;
  for (int64_t o = 0; o < view.outer; ++o) {
    for (int64_t i = 0; i < view.inner; ++i) {
      int64_t best = 0;
      for (int64_t k = 1; k < view.length; ++k) {
        const bool better = !in.floats.empty()
                                ? beats(is_max, in.floats[view.at(o, k, i)], in.floats[view.at(o, best, i)])
                                : (is_max ? in.ints[view.at(o, k, i)] > in.ints[view.at(o, best, i)]
                                          : in.ints[view.at(o, k, i)] < in.ints[view.at(o, best, i)]);
        if (better) best = k;  // strict: ties keep the lower index
      }
      out[static_cast<size_t>(o * view.inner + i)] = best;
    }
  }
  return absl::OkStatus();
}

absl::Status exec_scan(Frame& frame, const Op& op) {
  const Type& type = frame.operand_type(op, 0);
  const ScalarType scalar = arithmetic_type(type.element);
  const AxisView view(type, op.attrs.axis);
  const Tile& in = frame.operand(op, 0);
  Tile& out = frame.result(op);
  const bool custom = op.attrs.reduce == ReduceKind::kCustom;
  if (!custom && op.attrs.reduce != ReduceKind::kSum) {
    return op_error(frame, op, "scan takes sum or a combine region");
  }
  const bool floats = !in.floats.empty();
  RegionCombiner combiner(frame, op, floats);
  for (int64_t o = 0; o < view.outer; ++o) {
    for (int64_t i = 0; i < view.inner; ++i) {
      double float_acc = 0;
      float f32_acc = 0;
      uint64_t int_acc = 0;
      for (int64_t step = 0; step < view.length; ++step) {
        const int64_t k = op.attrs.reverse ? view.length - 1 - step : step;
        const size_t at = view.at(o, k, i);
        if (custom) {
          absl::Status status;
          if (floats) {
            if (step == 0) float_acc = in.floats[at];
            else status = combiner.combine(float_acc, in.floats[at], float_acc);
            out.floats[at] = float_acc;
          } else {
            int64_t acc = static_cast<int64_t>(int_acc);
            if (step == 0) acc = in.ints[at];
            else status = combiner.combine(acc, in.ints[at], acc);
            int_acc = static_cast<uint64_t>(acc);
            out.ints[at] = acc;
          }
          if (!status.ok()) return status;
        } else if (floats && scalar == ScalarType::kF64) {
          float_acc += in.floats[at];
          out.floats[at] = float_acc;
        } else if (floats) {
          f32_acc += static_cast<float>(in.floats[at]);  // f32 running sum, each output rounded once
          out.floats[at] = round_float(scalar, f32_acc);
        } else {
          int_acc += static_cast<uint64_t>(in.ints[at]);
          out.ints[at] = wrap_integer(scalar, int_acc);
        }
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status exec_reduction(Frame& frame, const Op& op) {
  switch (op.code) {
    case OpCode::kReduce: return exec_reduce(frame, op);
    case OpCode::kArgReduce: return exec_arg_reduce(frame, op);
    case OpCode::kScan: return exec_scan(frame, op);
    default: return op_error(frame, op, "not a reduction");
  }
}

}  // namespace monotile::dsl::interp
