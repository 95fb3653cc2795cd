// Builder: builds one Program. While it is alive (and until finish()) it is the thread's current
// builder, so free functions such as program_id(0) or load(p) build into it. Builders may nest (the
// innermost is current); two in sequence on one thread are independent; use after finish() throws.
// Every call records the user's SourceLocation on the op it makes.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include "support/source_location.h"
#include <string>
#include <string_view>
#include <vector>

#include "dsl/ir.h"
#include "dsl/target.h"
#include "dsl/value.h"

namespace monotile::dsl {

// What the kernel's author promises about a parameter's values at every launch.
struct ArgOptions {
  int64_t multiple_of = 1;  // integer parameters only; a power of two
};

class Builder {
 public:
  explicit Builder(std::string name, KernelOptions options = {},
                   SourceLocation loc = SourceLocation::current());
  // With a target, target-specific checks (a dot's K against the matrix unit's minimum) happen at
  // build time too; without one they happen when the program is verified for a target.
  Builder(std::string name, KernelOptions options, const Target& target,
          SourceLocation loc = SourceLocation::current());
  ~Builder();
  Builder(const Builder&) = delete;
  Builder& operator=(const Builder&) = delete;

  // A kernel parameter (pointer or scalar), passed at launch in declaration order.
  Value arg(std::string_view name, ElementType type,
            SourceLocation loc = SourceLocation::current());
  // An integer parameter whose every value is a multiple of `multiple_of` (a power of two), like
  // Triton's divisibility specialization made explicit: address arithmetic with it keeps its
  // alignment (vector accesses); the interpreter refuses a launch that breaks the promise.
  Value arg(std::string_view name, ElementType type, ArgOptions options,
            SourceLocation loc = SourceLocation::current());

  // The finished program (verified). The builder cannot be used afterwards.
  Program finish(SourceLocation loc = SourceLocation::current());

  const std::string& name() const { return name_; }
  const std::optional<Target>& target() const { return target_; }

  // ---- For op implementations (dsl/ops_*.cpp); kernels do not call these. ----

  // The thread's current builder; throws dsl::Error naming `op` when there is none.
  static Builder& current(std::string_view op, const SourceLocation& loc);
  // The builder that made `value` (alive and unfinished); throws dsl::Error otherwise.
  static Builder& owner_of(const Value& value, std::string_view op, const SourceLocation& loc);
  // The type of a value of this builder; throws when it is empty or belongs to another builder.
  Type type_of(const Value& value, std::string_view op, const SourceLocation& loc) const;
  // Appends an op to the innermost open block. Checks that every operand belongs to this builder
  // and is visible here (defined in an enclosing, still open block) and that every result shape
  // is one a layout can hold (dsl/shape_rules.h).
  std::vector<Value> emit(OpCode code, const std::vector<Value>& operands, Attrs attrs,
                          const std::vector<Type>& result_types, const SourceLocation& loc,
                          std::vector<Block> regions = {});
  Value emit1(OpCode code, const std::vector<Value>& operands, Attrs attrs, Type result_type,
              const SourceLocation& loc);

  // Builds a nested region: block arguments of `arg_types`, then `body`, whose returned values are
  // passed to `check` (which throws on a mismatch) and then yielded. `op` names the region's owner
  // in messages about values leaking out of it.
  using RegionBody = std::function<std::vector<Value>(const std::vector<Value>& args)>;
  using RegionCheck = std::function<void(const std::vector<Value>& yielded)>;
  Block region(std::string_view op, const std::vector<Type>& arg_types, const RegionBody& body,
               const RegionCheck& check, const SourceLocation& loc);

  // A scalar or tile of constants (kConstant): integer/bool types use `int_value`, floats
  // `float_value`.
  Value constant(Type type, int64_t int_value, double float_value, const SourceLocation& loc);

  // Throws dsl::Error (naming `op`) when a dimension of `type` is not one a layout can hold.
  static void check_layout(const Type& type, std::string_view op, const SourceLocation& loc);

 private:
  struct Frame {
    int id = 0;
    std::string op;
    SourceLoc loc;
  };
  class FrameGuard;

  void check_usable(std::string_view op, const SourceLocation& loc) const;
  void check_operand(const Value& value, std::string_view op, const SourceLocation& loc) const;
  Value new_value(Type type);

  std::string name_;  // program_.name moves out at finish()
  Program program_;
  std::optional<Target> target_;
  uint64_t serial_ = 0;
  bool finished_ = false;
  std::vector<Block*> blocks_;     // open blocks, innermost last
  std::vector<Frame> open_frames_;  // matches blocks_
  std::vector<Frame> frames_;       // every frame ever opened, by id
  std::vector<int> value_frame_;    // ValueId -> frame id where it was defined
  int next_frame_ = 0;
};

}  // namespace monotile::dsl
