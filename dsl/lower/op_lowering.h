// Pass: lowering of op families to C++ statements. Walks the program once in order and writes, for
// each op, the statements that compute its result registers in the layout the layout pass chose
// (lazy tiles are built at each use in the user's layout). Every tile is a per-thread register array
// `T vN[R]` indexed only by compile-time constants after unrolling; scalars are `T vN[1]` held by every
// thread. Shared memory starts at offset 0 for every use, each use fenced by barriers on both sides.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "dsl/lower/global_hazards.h"
#include "dsl/lower/lowering_state.h"
#include "dsl/lower/matrix_unit.h"
#include "dsl/lower/pipeline.h"
#include "dsl/lower/spelling.h"

namespace monotile::dsl::lower {

struct LoweredBody {
  std::string preamble;  // per-thread index math (lane, warp, layout bases), at the kernel's top
  std::string body;      // the ops' statements
  int64_t shared_bytes = 0;
  std::vector<SourceOrigin> origins;  // generated_line counted from 0 at the body's first line
};

absl::StatusOr<LoweredBody> lower_ops(const LoweringState& state);

// The C++ type of a value's registers and of its elements in memory.
std::string register_type(ElementType type);
std::string memory_type(ScalarType type);

// The word type that moves `total_bytes` (1, 2, 4, 8 or 16) at once, and the bits of element j (of
// `bytes` each) from the 32-bit word array `words` it was copied into (emit_memory.cpp).
std::string_view word_struct(int total_bytes);
std::string extract(std::string_view words, int j, int bytes);

class OpLowering {
 public:
  explicit OpLowering(const LoweringState& state);
  absl::StatusOr<LoweredBody> run();

 private:
  // --- values and layouts (op_lowering.cpp) ---
  const Type& type(ValueId v) const { return state_.program.type_of(v); }
  bool is_scalar(ValueId v) const { return type(v).is_scalar(); }
  bool is_lazy(ValueId v) const { return !is_scalar(v) && !state_.layouts[v].has_value(); }
  static std::string name(ValueId v) { return absl::StrCat("v", v); }
  std::string reg_type(ValueId v) const { return register_type(type(v).element); }
  // `v`'s layout, or the default for its shape when it is lazy.
  Layout layout_or_default(ValueId v) const;
  // The register array holding `v` in `layout`: its own, a rematerialized lazy copy, or a conversion.
  std::string get(ValueId v, const Layout& layout);
  std::string materialize(ValueId v, const Layout& layout);
  std::string convert(ValueId v, const Layout& from, const Layout& to);
  // Layout bookkeeping: index math declared once in the preamble.
  int layout_id(const Layout& layout);
  std::string coord(const Layout& layout, int dim, std::string_view reg);
  // Row-major linear index of register `reg`'s element with the given per-dim strides.
  std::string linear(const Layout& layout, std::string_view reg, const std::vector<int64_t>& strides);
  std::string owner(const Layout& layout);
  static std::vector<int64_t> row_major(const std::vector<int64_t>& shape);

  // --- text ---
  void line(std::string_view text);
  void open(std::string_view head);  // "head {" and indent
  void close(std::string_view tail = "}");
  void unrolled(std::string_view var, int64_t count);  // "#pragma unroll" + for header, opened
  std::string fresh(std::string_view prefix);
  void declare(ValueId v, int64_t regs);
  void barrier();
  std::string smem(std::string_view type, int64_t byte_offset = 0);
  void need_smem(int64_t bytes);
  // The value lane (lane ^ lane_mask) holds in its register `value` of C++ type `type` (narrow types
  // travel as int).
  std::string shuffle_xor(const std::string& value, const std::string& type, std::string_view lane_mask) const;
  // Every thread takes the value thread 0 holds in `var` (a scalar of `type`), through shared memory.
  void broadcast_from_thread0(std::string_view var, std::string_view type);
  void push_scope();
  void pop_scope();

  // --- walking ---
  absl::Status block(const Block& block);
  absl::Status op(const Op& op);
  absl::Status unsupported(const Op& op, std::string_view what) const;

  // --- families (one file each) ---
  absl::Status elementwise(const Op& op, const Layout& layout, std::string_view out);  // emit_elementwise.cpp
  std::string scalar_expression(const Op& op, const std::vector<std::string>& args) const;
  std::string cast_expression(ElementType from, ElementType to, const std::string& a) const;
  std::string bitcast_expression(ScalarType from, ScalarType to, const std::string& a) const;
  std::string constant_literal(const Op& op) const;
  absl::Status load(const Op& op);  // emit_memory.cpp
  absl::Status store(const Op& op);
  absl::Status prefetch(const Op& op);
  int vector_width(const Op& op, const Layout& layout, int bytes);
  // Registers in a row of the last dim that read one address (the pointer and mask constant over them).
  int same_address_group(const Op& op, const Layout& layout);
  std::string from_bits(ScalarType type, std::string_view bits) const;
  std::string to_bits(ScalarType type, std::string_view value) const;
  absl::Status atomic(const Op& op);  // emit_sync.cpp
  std::string atomic_element(const Op& op, std::string_view ptr, std::string_view value,
                             std::string_view desired, std::string_view dest);
  absl::Status wait_until(const Op& op);
  absl::Status global_timer(const Op& op);
  absl::Status grid_dependency(const Op& op);
  absl::Status reduce(const Op& op);  // emit_reduce.cpp
  absl::Status scan(const Op& op);
  std::string combine_function(const Op& op, ScalarType element);
  absl::Status sort(const Op& op);  // emit_sort.cpp
  // The bitonic network with each thread's `per` contiguous elements in registers (emit_sort.cpp);
  // the tiles' keys and indices are in shared memory before and after.
  struct BitonicNetwork {
    std::string key_type, keys, indices;  // register type; the shared key and index arrays
    std::string order;                    // "true" when descending
    // Each key and its index as one 64-bit word in `indices` (mt_sort_word); the keys stay where
    // they came in.
    bool packed = false;
    int64_t padded = 0;                   // line length, a power of two
    int64_t stride = 0;                   // elements between neighbours along a line
    int64_t per = 0;                      // elements a thread holds
    int64_t active = 0;                   // threads that hold elements (whole warps)
  };
  void bitonic_in_registers(const BitonicNetwork& network);
  absl::Status dot(const Op& op);   // emit_dot.cpp
  // Where a register-operand dot's operands sit in shared memory (byte offsets; A's row stride in
  // elements; `end` the first byte past them).
  struct DotOperands {
    int64_t a_offset = 0, a_stride = 0, b_offset = 0, end = 0;
  };
  // The dot of next_dot_ that accumulates onto `op`'s result, where it can share op's staging.
  const Op* chained_dot(const Op& op) const;
  void dot_k_loop(const MatrixUnit& unit, int64_t m, int64_t k, int64_t n, const Layout& out_layout,
                  const std::string& out, const DotOperands& placement);
  // The accumulator's tiles (`i` open), each multiplied by its B tile: mt_a and mt_b[j] hold the
  // fragments.
  void multiply_tiles(const MatrixUnit& unit, int64_t tiles_n, int64_t row_stride, const std::string& out);
  // A dot whose A sits in its fragment layout (matrix_unit.h) reads A, and B where B does too, from
  // registers: no shared memory for A and no barrier when B is in registers as well.
  struct RegisterOperands {
    int run = 1;  // K elements a lane holds in a row, consecutive
    bool b_in_registers = false;
  };
  std::optional<RegisterOperands> register_operands(const Op& op, const MatrixUnit& unit,
                                                    const Layout& out_layout) const;
  absl::Status dot_from_registers(const Op& op, const MatrixUnit& unit, const RegisterOperands& operands);
  // Pairs (dot, the later dot of the same block whose accumulator is the first's result, whose A and
  // B exist before the first, and which is that result's only user).
  void find_chained_dots(const Block& block);
  absl::Status dot_fma(const Op& op, const Layout& out_layout);
  // Pipelined dots (emit_dot_staged_cuda.cpp): the shared-memory stages of one `for` loop.
  struct LoopPipeline {
    std::string base;   // u32 shared address of stage 0
    std::string read;   // the stage iteration t reads
    std::string write;  // the stage iteration t's copies fill (for t + stages - 1)
  };
  absl::Status pipeline_prologue(const Op& op, const PipelinedLoop& loop, LoopPipeline& state);
  absl::Status pipeline_top(const Op& op, const PipelinedLoop& loop, const LoopPipeline& state,
                            const std::string& index);
  void pipeline_advance(const PipelinedLoop& loop, const LoopPipeline& state);
  void pipeline_epilogue(const Op& op, const PipelinedLoop& loop);
  absl::Status stage_copies(const PipelinedLoop& loop, const std::string& index, const std::string& stage);
  absl::Status dot_staged(const Op& op, const StagedDot& staged, const std::string& stage);
  // A staged load's registers, read from its loop's stage (AccessOptions::stages).
  absl::Status load_staged(const Op& op, const StagedLoad& staged, const std::string& stage);
  absl::Status dot_warpgroup(const Op& op, const StagedDot& staged, const std::string& stage);
  absl::Status shape_op(const Op& op);  // emit_shape.cpp
  absl::Status trans_in_registers(const Op& op);
  absl::Status unpack_bf16(const Op& op);
  absl::Status mxfp4_word_pairs(const Op& op);
  absl::Status control(const Op& op);   // emit_control.cpp
  absl::Status assert_op(const Op& op);
  absl::Status print(const Op& op);
  void copy_into(std::string_view dest, std::string_view src, int64_t regs);

  const LoweringState& state_;
  const Spelling& spelling_;
  std::string body_;
  std::vector<SourceOrigin> origins_;
  size_t body_counted_ = 0;  // body_ chars whose newlines are in body_lines_
  // With LowerOptions::line_directives: the current op's "#line N \"file\"", written before each of
  // its lines (a directive numbers the lines after it on, so one per op would charge an op's later
  // lines to the lines below its own), and whether the last line was a #pragma (which must stay
  // right before its loop).
  std::string directive_;
  bool after_pragma_ = false;
  int body_lines_ = 0;
  int indent_ = 1;
  std::string preamble_;
  std::vector<Layout> layouts_;  // interned, index = id
  std::vector<std::map<std::pair<ValueId, int>, std::string>> scopes_;
  std::map<ValueId, const Op*> producers_;
  int64_t shared_bytes_ = 0;
  PipelinePlan pipelines_;
  std::optional<GlobalHazards> hazards_;  // made once producers_ is filled
  std::map<const Op*, std::string> stage_read_;  // staged dot or load -> its loop's read-stage variable
  std::map<const Op*, const Op*> next_dot_;      // find_chained_dots' pairs
  std::set<const Op*> fused_dots_;               // dots already emitted with the dot before them
  int64_t pipe_bytes_ = 0;  // the stages, placed after every other use of shared memory
  int counter_ = 0;
  int block_threads_ = 0;
};

}  // namespace monotile::dsl::lower
