// Printer: walks the program in order, numbering each value where it is defined. Every attribute
// an op reads is printed (and only those), so that the text, and the hash over it, tell apart any
// two programs that behave differently.
#include "dsl/printer.h"

#include <charconv>
#include <cmath>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "dsl/shape_rules.h"
#include "support/strings.h"

namespace monotile::dsl {
namespace {

std::string quote(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out + "\"";
}

// The shortest text that reads back as the same value of the constant's dtype (f32, f16 and bf16
// constants are exact floats, so the float's shortest form is exact too).
std::string float_text(ScalarType type, double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  char buffer[64];
  auto result = type == ScalarType::kF64
                    ? std::to_chars(buffer, buffer + sizeof(buffer), value)
                    : std::to_chars(buffer, buffer + sizeof(buffer), static_cast<float>(value));
  return std::string(buffer, result.ptr);
}

class Printer {
 public:
  Printer(const Program& program, bool with_locations)
      : program_(program), with_locations_(with_locations) {}

  std::string print() {
    out_ = absl::StrCat("kernel ", program_.name, " num_warps=", program_.options.num_warps);
    // Options left at their defaults are not printed, so the text of older programs is unchanged.
    if (program_.options.num_stages != 0) absl::StrAppend(&out_, " num_stages=", program_.options.num_stages);
    if (program_.options.mma == MmaKind::kWarp) out_ += " mma=warp";
    if (program_.options.mma == MmaKind::kWarpgroup) out_ += " mma=warpgroup";
    if (program_.options.mma == MmaKind::kWarpgroupSerial) out_ += " mma=warpgroup_serial";
    if (!program_.options.multi_row_reductions) out_ += " multi_row_reductions=false";
    if (program_.options.min_programs_per_sm > 0) {
      absl::StrAppend(&out_, " min_programs_per_sm=", program_.options.min_programs_per_sm);
    }
    out_ += " (";
    for (size_t i = 0; i < program_.params.size(); ++i) {
      const Param& param = program_.params[i];
      if (i > 0) out_ += ", ";
      absl::StrAppend(&out_, define(param.value), ": ", Type{param.type, {}}.str(), " ", quote(param.name));
      if (param.multiple_of != 1) absl::StrAppend(&out_, " multiple_of=", param.multiple_of);
    }
    out_ += ") {\n";
    block_ops(program_.body, 1);
    out_ += "}\n";
    return out_;
  }

 private:
  std::string define(ValueId id) {
    std::string name = absl::StrCat("%", next_++);
    names_[id] = name;
    return name;
  }
  std::string use(ValueId id) const {
    auto it = names_.find(id);
    return it == names_.end() ? absl::StrCat("%?", id) : it->second;
  }
  std::string type_text(ValueId id) const {
    if (id < 0 || static_cast<size_t>(id) >= program_.value_types.size()) return "?";
    return program_.value_types[id].str();
  }

  void block_ops(const Block& block, int depth) {
    for (const Op& op : block.ops) print_op(op, depth);
  }

  void print_op(const Op& op, int depth) {
    std::string indent(2 * depth, ' ');
    std::string line = indent;
    // Operands are named before results are defined: an op never uses its own results.
    std::string operands;
    for (size_t i = 0; i < op.operands.size(); ++i) {
      absl::StrAppend(&operands, i == 0 ? " " : ", ", use(op.operands[i]));
    }
    if (!op.results.empty()) {
      for (size_t i = 0; i < op.results.size(); ++i) {
        absl::StrAppend(&line, i == 0 ? "" : ", ", define(op.results[i]));
      }
      line += " = ";
    }
    absl::StrAppend(&line, to_absl(op_name(op.code)), attrs_text(op), operands);
    if (!op.results.empty()) {
      line += " :";
      for (size_t i = 0; i < op.results.size(); ++i) {
        absl::StrAppend(&line, i == 0 ? " " : ", ", type_text(op.results[i]));
      }
    }
    out_ += line;
    for (const Block& region : op.regions) {
      out_ += " {\n";
      if (!region.args.empty()) {
        absl::StrAppend(&out_, indent, "^(");
        for (size_t i = 0; i < region.args.size(); ++i) {
          if (i > 0) out_ += ", ";
          absl::StrAppend(&out_, define(region.args[i]), ": ", type_text(region.args[i]));
        }
        out_ += "):\n";
      }
      block_ops(region, depth + 1);
      absl::StrAppend(&out_, indent, "}");
    }
    if (with_locations_) absl::StrAppend(&out_, " loc(", op.loc.str(), ")");
    out_ += "\n";
  }

  std::string attrs_text(const Op& op) const {
    const Attrs& a = op.attrs;
    std::string axis = absl::StrCat(" axis=", a.axis);
    auto memory = [&](bool with_order) {
      std::string text;
      if (a.has_mask) text += " mask";
      if (a.has_other) text += " other";
      if (a.cache != CacheHint::kDefault) absl::StrAppend(&text, " cache=", cache_text(a.cache));
      if (a.evict != EvictHint::kNormal) absl::StrAppend(&text, " evict=", evict_text(a.evict));
      if (a.l2_fetch != 0) absl::StrAppend(&text, " l2_fetch=", a.l2_fetch);
      if (a.stages != 0) absl::StrAppend(&text, " stages=", a.stages);
      if (with_order && a.order != MemOrder::kPlain) {
        absl::StrAppend(&text, " order=", to_absl(order_name(a.order)), " scope=", to_absl(scope_name(a.scope)));
      }
      return text;
    };
    switch (op.code) {
      case OpCode::kConstant: {
        ScalarType scalar = op.results.empty() ? ScalarType::kI32
                                               : program_.value_types.at(op.results[0]).element.scalar;
        return absl::StrCat(" ", is_float(scalar) ? float_text(scalar, a.float_value)
                                                  : std::to_string(a.int_value));
      }
      case OpCode::kArange:
        return a.ints.size() == 2
                   ? absl::StrCat(" start=", a.ints[0], " end=", a.ints[1])
                   : absl::StrCat(" bounds=", shape_str(a.ints));
      case OpCode::kProgramId:
      case OpCode::kNumPrograms:
      case OpCode::kExpandDims:
      case OpCode::kCat: return axis;
      case OpCode::kTrans: return absl::StrCat(" perm=", shape_str(a.ints));
      case OpCode::kCmp: return absl::StrCat(" ", to_absl(cmp_name(a.cmp)));
      case OpCode::kLoad:
      case OpCode::kStore: return memory(true);
      case OpCode::kPrefetch: return memory(false);
      case OpCode::kAtomicRmw:
        return absl::StrCat(" ", to_absl(atomic_name(a.atomic)), memory(false), " order=",
                            to_absl(order_name(a.order)), " scope=", to_absl(scope_name(a.scope)));
      case OpCode::kAtomicCas:
      case OpCode::kFence:
        return absl::StrCat(memory(false), " order=", to_absl(order_name(a.order)), " scope=",
                            to_absl(scope_name(a.scope)));
      case OpCode::kWaitUntil:
        return absl::StrCat(" ", to_absl(cmp_name(a.cmp)), " scope=", to_absl(scope_name(a.scope)));
      case OpCode::kReduce:
      case OpCode::kArgReduce: return absl::StrCat(" ", to_absl(reduce_name(a.reduce)), axis);
      case OpCode::kMxfp4WordPairs:
        return absl::StrCat(a.int_value == 0 ? "" : absl::StrCat(" scale_bias=", a.int_value),
                            a.ints.empty() ? "" : " placement=shifts");
      case OpCode::kScan:
        return absl::StrCat(" ", to_absl(reduce_name(a.reduce)), axis, a.reverse ? " reverse" : "");
      case OpCode::kSort: return absl::StrCat(axis, a.descending ? " descending" : " ascending");
      case OpCode::kTopK:
        return absl::StrCat(" k=", a.k, axis, a.descending ? " descending" : " ascending");
      case OpCode::kAssert:
      case OpCode::kPrint: return absl::StrCat(" ", quote(a.text));
      default: return "";
    }
  }

  static std::string cache_text(CacheHint hint) {
    switch (hint) {
      case CacheHint::kDefault: return "default";
      case CacheHint::kCacheAll: return "all";
      case CacheHint::kCacheGlobal: return "global";
      case CacheHint::kStreaming: return "streaming";
      case CacheHint::kVolatile: return "volatile";
    }
    return "?";
  }
  static std::string evict_text(EvictHint hint) {
    switch (hint) {
      case EvictHint::kNormal: return "normal";
      case EvictHint::kFirst: return "first";
      case EvictHint::kLast: return "last";
    }
    return "?";
  }

  const Program& program_;
  bool with_locations_;
  std::string out_;
  std::unordered_map<ValueId, std::string> names_;
  int next_ = 0;
};

}  // namespace

std::string to_text(const Program& program, bool with_locations) {
  return Printer(program, with_locations).print();
}

}  // namespace monotile::dsl
