// Builder: the thread's stack of active builders, value ownership and visibility, op emission.
// Invariant: blocks_ and open_frames_ always describe the same chain of open blocks, restored on
// every exit from a region (including by dsl::Error), so a failed call leaves a usable builder.
#include "dsl/builder.h"

#include <algorithm>
#include <atomic>
#include <utility>

#include "dsl/error.h"
#include "dsl/scalar_semantics.h"
#include "dsl/scalar_values.h"
#include "dsl/shape_rules.h"
#include "dsl/verifier.h"
#include "support/check.h"

namespace monotile::dsl {
namespace {

std::atomic<uint64_t> next_serial{1};
thread_local std::vector<Builder*> active_builders;
// Recently finished builders, so that a stale handle gets a precise message.
thread_local std::vector<std::pair<uint64_t, std::string>> finished_builders;
constexpr size_t kRememberFinished = 64;

SourceLoc at(const SourceLocation& loc) { return SourceLoc::from(loc); }

std::string in_quotes(std::string_view text) { return "\"" + std::string(text) + "\""; }

}  // namespace

// Opens a nested block for the duration of a region's construction.
class Builder::FrameGuard {
 public:
  FrameGuard(Builder& builder, Block* block, std::string_view op, const SourceLocation& loc)
      : builder_(builder) {
    Frame frame{builder.next_frame_++, std::string(op), at(loc)};
    builder.frames_.push_back(frame);
    builder.open_frames_.push_back(std::move(frame));
    builder.blocks_.push_back(block);
  }
  ~FrameGuard() {
    builder_.open_frames_.pop_back();
    builder_.blocks_.pop_back();
  }
  FrameGuard(const FrameGuard&) = delete;
  FrameGuard& operator=(const FrameGuard&) = delete;

 private:
  Builder& builder_;
};

Builder::Builder(std::string name, KernelOptions options, SourceLocation loc)
    : serial_(next_serial.fetch_add(1)) {
  if (name.empty()) {
    throw Error(at(loc), "builder", "the program name is empty", "a non-empty name", "\"\"",
                "name the kernel, e.g. Builder b(\"rms_norm\")");
  }
  if (options.num_warps < 1 || !is_power_of_two(options.num_warps)) {
    throw Error(at(loc), "builder",
                "num_warps " + std::to_string(options.num_warps) + " is not a positive power of two",
                "1, 2, 4, 8 or 16", std::to_string(options.num_warps),
                "use {.num_warps = 4} for most kernels");
  }
  if (options.num_stages != 0 && (options.num_stages < 2 || options.num_stages > 8)) {
    throw Error(at(loc), "builder", "num_stages " + std::to_string(options.num_stages) + " is out of range",
                "0 (the lowering chooses) or 2 to 8", std::to_string(options.num_stages),
                "leave num_stages at 0 unless a measurement says otherwise");
  }
  name_ = name;
  program_.name = std::move(name);
  program_.options = options;
  Frame body{next_frame_++, "kernel", at(loc)};
  frames_.push_back(body);
  open_frames_.push_back(body);
  blocks_.push_back(&program_.body);
  active_builders.push_back(this);
}

Builder::Builder(std::string name, KernelOptions options, const Target& target,
                 SourceLocation loc)
    : Builder(std::move(name), options, loc) {
  target_ = target;
}

Builder::~Builder() {
  auto it = std::find(active_builders.begin(), active_builders.end(), this);
  if (it != active_builders.end()) active_builders.erase(it);
}

void Builder::check_usable(std::string_view op, const SourceLocation& loc) const {
  if (finished_) {
    throw Error(at(loc), std::string(op),
                "builder " + in_quotes(name_) + " was used after finish()",
                "an unfinished builder", "a finished one",
                "build every op before calling finish(), or start a new Builder");
  }
}

Builder& Builder::current(std::string_view op, const SourceLocation& loc) {
  if (active_builders.empty()) {
    throw Error(at(loc), std::string(op), "no dsl::Builder is active on this thread",
                "an active builder", "none",
                "create one (Builder b(\"name\")) before building ops, and do not use values "
                "after finish()");
  }
  return *active_builders.back();
}

Builder& Builder::owner_of(const Value& value, std::string_view op, const SourceLocation& loc) {
  if (value.empty()) {
    throw Error(at(loc), std::string(op), "operand is an empty Value", "a value built by an op",
                "an empty Value", "assign the Value before using it");
  }
  for (Builder* builder : active_builders) {
    if (builder->serial_ == value.builder_serial_) return *builder;
  }
  for (const auto& [serial, name] : finished_builders) {
    if (serial == value.builder_serial_) {
      throw Error(at(loc), std::string(op),
                  "the value belongs to program " + in_quotes(name) + ", which finish() completed",
                  "a value of an unfinished builder", "a value of a finished one",
                  "build every op before calling finish()");
    }
  }
  throw Error(at(loc), std::string(op), "the value belongs to a builder that no longer exists",
              "a value of a live builder", "a stale value",
              "keep the Builder alive until finish()");
}

Type Builder::type_of(const Value& value, std::string_view op, const SourceLocation& loc) const {
  check_operand(value, op, loc);
  return program_.type_of(value.id_);
}

void Builder::check_operand(const Value& value, std::string_view op,
                            const SourceLocation& loc) const {
  Builder& owner = owner_of(value, op, loc);
  if (&owner != this) {
    throw Error(at(loc), std::string(op),
                "the value belongs to program " + in_quotes(owner.name()) + ", not to " +
                    in_quotes(program_.name) + " which is being built",
                in_quotes(program_.name), in_quotes(owner.name()),
                "values cannot move between programs; build the value again in this one");
  }
  check_usable(op, loc);
  int frame = value_frame_.at(value.id_);
  for (const Frame& open : open_frames_) {
    if (open.id == frame) return;
  }
  const Frame& closed = frames_.at(frame);
  throw Error(at(loc), std::string(op),
              "a value defined inside the body of " + closed.op + " at " + closed.loc.str() +
                  " is used outside that body",
              "a value defined here or in an enclosing block", "a value of a closed body",
              "return it from the body (a carried value of range/while_, a result of if_)");
}

void Builder::check_layout(const Type& type, std::string_view op, const SourceLocation& loc) {
  for (int64_t dim : type.shape) {
    if (!is_layout_size(dim)) {
      throw Error(at(loc), std::string(op),
                  "shape " + shape_str(type.shape) + " has dimension " + std::to_string(dim) +
                      ", which is neither a power of two nor a multiple of " +
                      std::to_string(kLayoutQuantum),
                  "a power of two or a multiple of " + std::to_string(kLayoutQuantum),
                  std::to_string(dim),
                  "round the size up and mask the extra lanes (e.g. arange(0, 128) with mask "
                  "cols < n)");
    }
  }
}

Value Builder::new_value(Type type) {
  ValueId id = program_.add_value(std::move(type));
  value_frame_.resize(program_.value_types.size(), 0);
  value_frame_[id] = open_frames_.back().id;
  return Value(id, serial_);
}

Value Builder::arg(std::string_view name, ElementType type, SourceLocation loc) {
  return arg(name, type, ArgOptions{}, loc);
}

Value Builder::arg(std::string_view name, ElementType type, ArgOptions options, SourceLocation loc) {
  check_usable("arg", loc);
  if (blocks_.size() != 1) {
    throw Error(at(loc), "arg", "argument " + in_quotes(name) + " is declared inside a region",
                "a declaration at the top of the kernel", "inside " + open_frames_.back().op,
                "declare every argument before building ops");
  }
  if (name.empty()) {
    throw Error(at(loc), "arg", "an argument has an empty name", "a name", "\"\"",
                "name every argument, e.g. b.arg(\"x\", ptr(bf16))");
  }
  for (const Param& param : program_.params) {
    if (param.name == name) {
      throw Error(at(loc), "arg", "argument " + in_quotes(name) + " is declared twice",
                  "distinct names", in_quotes(name) + " twice", "rename one of them");
    }
  }
  if (type.scalar == ScalarType::kMxfp4 && !type.pointer) {
    throw Error(at(loc), "arg", "argument " + in_quotes(name) + " is an mxfp4 scalar",
                "a pointer to mxfp4 data", "mxfp4", "pass ptr(mxfp4) and load it");
  }
  if (options.multiple_of != 1 && (type.pointer || !is_integer(type.scalar) || type.scalar == ScalarType::kI1)) {
    throw Error(at(loc), "arg", "argument " + in_quotes(name) + " is declared a multiple of " +
                std::to_string(options.multiple_of) + " but is not an integer",
                "an integer scalar (i32, i64, u32, ...)", Type{type, {}}.str(),
                "drop multiple_of, or declare the argument as an integer");
  }
  if (options.multiple_of < 1 || (options.multiple_of & (options.multiple_of - 1)) != 0) {
    throw Error(at(loc), "arg", "argument " + in_quotes(name) + ": multiple_of must be a power of two",
                "1, 2, 4, 8, ...", std::to_string(options.multiple_of),
                "promise the largest power of two that divides every value passed");
  }
  Value value = new_value(Type{type, {}});
  program_.body.args.push_back(value.id_);
  program_.params.push_back(Param{std::string(name), type, value.id_, options.multiple_of});
  return value;
}

std::vector<Value> Builder::emit(OpCode code, const std::vector<Value>& operands, Attrs attrs,
                                 const std::vector<Type>& result_types,
                                 const SourceLocation& loc, std::vector<Block> regions) {
  std::string_view op = op_name(code);
  check_usable(op, loc);
  for (const Value& operand : operands) check_operand(operand, op, loc);
  for (const Type& type : result_types) check_layout(type, op, loc);
  Op built;
  built.code = code;
  for (const Value& operand : operands) built.operands.push_back(operand.id_);
  built.attrs = std::move(attrs);
  built.regions = std::move(regions);
  built.loc = at(loc);
  std::vector<Value> results;
  for (const Type& type : result_types) {
    results.push_back(new_value(type));
    built.results.push_back(results.back().id_);
  }
  blocks_.back()->ops.push_back(std::move(built));
  return results;
}

Value Builder::emit1(OpCode code, const std::vector<Value>& operands, Attrs attrs, Type result_type,
                     const SourceLocation& loc) {
  return emit(code, operands, std::move(attrs), {std::move(result_type)}, loc).front();
}

Block Builder::region(std::string_view op, const std::vector<Type>& arg_types,
                      const RegionBody& body, const RegionCheck& check,
                      const SourceLocation& loc) {
  check_usable(op, loc);
  Block block;
  FrameGuard guard(*this, &block, op, loc);
  std::vector<Value> args;
  for (const Type& type : arg_types) {
    args.push_back(new_value(type));
    block.args.push_back(args.back().id_);
  }
  std::vector<Value> yielded = body(args);
  for (const Value& value : yielded) check_operand(value, op, loc);
  check(yielded);
  emit(OpCode::kYield, yielded, {}, {}, loc);
  return block;
}

Value Builder::constant(Type type, int64_t int_value, double float_value,
                        const SourceLocation& loc) {
  Attrs attrs;
  if (is_float(type.element.scalar)) {
    attrs.float_value = round_to_dtype(type.element.scalar, float_value);
  } else {
    attrs.int_value = wrap_to_dtype(type.element.scalar, int_value);
  }
  return emit1(OpCode::kConstant, {}, std::move(attrs), std::move(type), loc);
}

Program Builder::finish(SourceLocation loc) {
  check_usable("finish", loc);
  MT_CHECK(blocks_.size() == 1, "finish() inside an open region");
  finished_ = true;
  auto it = std::find(active_builders.begin(), active_builders.end(), this);
  if (it != active_builders.end()) active_builders.erase(it);
  if (finished_builders.size() >= kRememberFinished) finished_builders.erase(finished_builders.begin());
  finished_builders.emplace_back(serial_, program_.name);
  // The builder checks everything the verifier does; a failure here is a monotile bug.
  absl::Status status = verify(program_);
  if (!status.ok()) {
    check_failed("verify(program).ok()", std::string(status.message()), SourceLocation::current());
  }
  return std::move(program_);
}

}  // namespace monotile::dsl
