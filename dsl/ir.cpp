// Names, sizes and printing of the IR's basic types (the op-level printer is dsl/printer.*).
#include "dsl/ir.h"

#include <array>
#include <filesystem>

#include "support/check.h"

namespace monotile::dsl {
namespace {

struct ScalarInfo {
  ScalarType type;
  std::string_view name;
  int bytes;
  int bits;
};
constexpr std::array<ScalarInfo, 12> kScalars = {{
    {ScalarType::kI1, "i1", 1, 1},
    {ScalarType::kI8, "i8", 1, 8},
    {ScalarType::kU8, "u8", 1, 8},
    {ScalarType::kI16, "i16", 2, 16},
    {ScalarType::kI32, "i32", 4, 32},
    {ScalarType::kU32, "u32", 4, 32},
    {ScalarType::kI64, "i64", 8, 64},
    {ScalarType::kF16, "f16", 2, 16},
    {ScalarType::kBf16, "bf16", 2, 16},
    {ScalarType::kF32, "f32", 4, 32},
    {ScalarType::kF64, "f64", 8, 64},
    {ScalarType::kMxfp4, "mxfp4", 1, 8},
}};

const ScalarInfo& info(ScalarType type) {
  const ScalarInfo& found = kScalars[static_cast<size_t>(type)];
  MT_CHECK(found.type == type);
  return found;
}

}  // namespace

std::string_view scalar_type_name(ScalarType type) { return info(type).name; }
int scalar_type_bytes(ScalarType type) { return info(type).bytes; }
int scalar_type_bits(ScalarType type) { return info(type).bits; }

std::optional<ScalarType> parse_scalar_type(std::string_view name) {
  for (const ScalarInfo& scalar : kScalars) {
    if (scalar.name == name) return scalar.type;
  }
  return std::nullopt;
}

bool is_float(ScalarType type) {
  return type == ScalarType::kF16 || type == ScalarType::kBf16 || type == ScalarType::kF32 ||
         type == ScalarType::kF64;
}

bool is_integer(ScalarType type) { return !is_float(type) && type != ScalarType::kMxfp4; }

bool is_signed(ScalarType type) {
  return type == ScalarType::kI8 || type == ScalarType::kI16 || type == ScalarType::kI32 ||
         type == ScalarType::kI64;
}

int64_t Type::num_elements() const {
  int64_t count = 1;
  for (int64_t dim : shape) count *= dim;
  return count;
}

std::string Type::str() const {
  std::string text = element.pointer
                         ? "ptr<" + std::string(scalar_type_name(element.scalar)) + ">"
                         : std::string(scalar_type_name(element.scalar));
  if (shape.empty()) return text;
  text += "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) text += ", ";
    text += std::to_string(shape[i]);
  }
  return text + "]";
}

SourceLoc SourceLoc::from(const SourceLocation& location) {
  return SourceLoc{location.file_name(), static_cast<int>(location.line()),
                   static_cast<int>(location.column()), location.function_name()};
}

std::string SourceLoc::str() const {
  if (file.empty()) return "<unknown>";
  return std::filesystem::path(file).filename().string() + ":" + std::to_string(line);
}

std::string_view op_name(OpCode code) {
  switch (code) {
    case OpCode::kConstant: return "constant";
    case OpCode::kArange: return "arange";
    case OpCode::kProgramId: return "program_id";
    case OpCode::kNumPrograms: return "num_programs";
    case OpCode::kBroadcast: return "broadcast";
    case OpCode::kExpandDims: return "expand_dims";
    case OpCode::kReshape: return "reshape";
    case OpCode::kTrans: return "trans";
    case OpCode::kJoin: return "join";
    case OpCode::kSplit: return "split";
    case OpCode::kCat: return "cat";
    case OpCode::kUnpackBf16: return "unpack_bf16";
    case OpCode::kMxfp4WordPairs: return "mxfp4_word_pairs";
    case OpCode::kAdd: return "add";
    case OpCode::kSub: return "sub";
    case OpCode::kMul: return "mul";
    case OpCode::kDiv: return "div";
    case OpCode::kRem: return "rem";
    case OpCode::kMin: return "min";
    case OpCode::kMax: return "max";
    case OpCode::kAnd: return "and";
    case OpCode::kOr: return "or";
    case OpCode::kXor: return "xor";
    case OpCode::kShl: return "shl";
    case OpCode::kShr: return "shr";
    case OpCode::kUmulhi: return "umulhi";
    case OpCode::kCmp: return "cmp";
    case OpCode::kNeg: return "neg";
    case OpCode::kNot: return "not";
    case OpCode::kAbs: return "abs";
    case OpCode::kExp: return "exp";
    case OpCode::kExp2: return "exp2";
    case OpCode::kLog: return "log";
    case OpCode::kLog2: return "log2";
    case OpCode::kSqrt: return "sqrt";
    case OpCode::kRsqrt: return "rsqrt";
    case OpCode::kSin: return "sin";
    case OpCode::kCos: return "cos";
    case OpCode::kTanh: return "tanh";
    case OpCode::kSigmoid: return "sigmoid";
    case OpCode::kSoftplus: return "softplus";
    case OpCode::kErf: return "erf";
    case OpCode::kFloor: return "floor";
    case OpCode::kCeil: return "ceil";
    case OpCode::kFma: return "fma";
    case OpCode::kSelect: return "select";
    case OpCode::kCast: return "cast";
    case OpCode::kBitcast: return "bitcast";
    case OpCode::kMxfp4Pairs: return "mxfp4_pairs";
    case OpCode::kAddPtr: return "addptr";
    case OpCode::kDequantMxfp4: return "dequant_mxfp4";
    case OpCode::kLoad: return "load";
    case OpCode::kStore: return "store";
    case OpCode::kPrefetch: return "prefetch";
    case OpCode::kAtomicRmw: return "atomic_rmw";
    case OpCode::kAtomicCas: return "atomic_cas";
    case OpCode::kFence: return "fence";
    case OpCode::kBarrier: return "barrier";
    case OpCode::kGlobalTimer: return "global_timer";
    case OpCode::kWaitUntil: return "wait_until";
    case OpCode::kLaunchDependents: return "launch_dependents";
    case OpCode::kWaitGridDependency: return "wait_grid_dependency";
    case OpCode::kReduce: return "reduce";
    case OpCode::kArgReduce: return "arg_reduce";
    case OpCode::kScan: return "scan";
    case OpCode::kSort: return "sort";
    case OpCode::kTopK: return "topk";
    case OpCode::kDot: return "dot";
    case OpCode::kFor: return "for";
    case OpCode::kIf: return "if";
    case OpCode::kWhile: return "while";
    case OpCode::kYield: return "yield";
    case OpCode::kAssert: return "assert";
    case OpCode::kPrint: return "print";
  }
  return "unknown";
}

namespace {
bool contains_wait(const Block& block) {
  for (const Op& op : block.ops) {
    if (op.code == OpCode::kWaitGridDependency) return true;
    for (const Block& region : op.regions) {
      if (contains_wait(region)) return true;
    }
  }
  return false;
}
}  // namespace

bool Program::waits_for_grid_dependency() const { return contains_wait(body); }

std::string_view cmp_name(CmpPredicate cmp) {
  constexpr std::string_view kNames[] = {"eq", "ne", "lt", "le", "gt", "ge"};
  return kNames[static_cast<size_t>(cmp)];
}

std::string_view reduce_name(ReduceKind kind) {
  constexpr std::string_view kNames[] = {"sum", "max", "min", "xor_sum", "custom"};
  return kNames[static_cast<size_t>(kind)];
}

std::string_view atomic_name(AtomicKind kind) {
  constexpr std::string_view kNames[] = {"add", "max", "min", "and", "or", "xor", "xchg"};
  return kNames[static_cast<size_t>(kind)];
}

std::string_view scope_name(MemScope scope) {
  constexpr std::string_view kNames[] = {"block", "gpu", "system"};
  return kNames[static_cast<size_t>(scope)];
}

std::string_view order_name(MemOrder order) {
  constexpr std::string_view kNames[] = {"plain", "relaxed", "acquire", "release", "acq_rel"};
  return kNames[static_cast<size_t>(order)];
}

}  // namespace monotile::dsl
