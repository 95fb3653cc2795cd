// One task of a decode GEMV inside a layer kernel: a block of W's rows times every token's row of
// x on the matrix unit. By default W is the A operand (its rows fill the unit's M; the few tokens
// are padded to its N), K in steps through shared memory / LDS. With GemvTask::ahead, W is the B
// operand straight from registers, its loads issued steps ahead (pipeline.h). K1's in_proj and
// K2's o_proj and router take their tasks from here.
#pragma once

#include <cstdint>

#include "dsl/value.h"

namespace monotile::kernels::k3 {

struct GemvTask {
  dsl::Value w;      // ptr<bf16> [N, k] row-major
  dsl::Value x;      // ptr<bf16> [tokens, k] row-major
  int64_t k = 0;     // a multiple of step
  int tokens = 0;    // x's rows, at most 16
  int rows = 64;     // W's rows a task takes: a multiple of 16
  int step = 256;    // K per step
  // 0: W's step tiles go through shared memory / LDS, where the dot stages them (a barrier a step).
  // n >= 1: each warp loads its own rows' fragments of W into registers n steps before their dot
  // (the B operand; x, padded to 16 rows, is the A operand): no shared memory, no barrier. A slot
  // holds rows * step / (32 * warps) W elements a thread.
  int ahead = 0;
  // > 0: x holds `sources` blocks of `block` rows each (a power of two >= tokens; row b * block + t
  // is source b's token t, rows past `tokens` in a block unread), and the accumulator's columns
  // are those rows, padded (gemv_padded_rows): K1's linear in_proj multiplies every AttnRes source
  // at once. Not with `ahead`.
  int sources = 0;
  int block = 0;
  // W's loads: the bytes L2 fetches from memory around each (AccessOptions::l2_fetch: 0, 64, 128
  // or 256; staged copies keep it).
  int l2_fetch = 0;
};

// The tokens padded to the matrix unit's side: with `ahead` (GemvTask::ahead) 16, the A operand's
// M; else the least power of two >= tokens, at least 8 (the unit's N).
int64_t gemv_padded_tokens(int tokens, int ahead = 0);

// The accumulator's columns: gemv_padded_tokens, or with GemvTask::sources the least power of two
// of blocks >= sources times the block, at least 8 (the unit's N).
int64_t gemv_padded_rows(const GemvTask& g);

// The accumulator [rows, padded tokens] f32 of the task whose first row is task * rows; rows past
// `n` read zero weights. Columns past `tokens` are zero.
dsl::Value gemv_task(const GemvTask& g, const dsl::Value& task, int64_t n);

// The same for any rows (i32 [g.rows]); rows where `row_ok` is false read zero weights.
dsl::Value gemv_rows(const GemvTask& g, const dsl::Value& rows, const dsl::Value& row_ok);

// Prefetches into L2 the first `count` elements of each of the first min(rows, max_rows) rows (of
// `row_elements` elements of `element_bytes`) from `first`, one 128-byte line per thread and loop
// iteration, so that it holds no registers past each iteration (a stage that keeps its next stage's
// inputs in registers can still afford it). A prefetch waits for nothing: a stage waiting for its
// input can bring its weights nearer meanwhile.
void prefetch_row_heads(const dsl::Value& first, const dsl::Value& rows, int64_t max_rows, int64_t row_elements,
                        int64_t count, int element_bytes);

// Prefetches into L2 this program's equal share (by program_id over num_programs) of the 128-byte
// lines of `elements` bf16 elements from `first`: every program together asks for the whole array
// once, with no registers held past an iteration, while the stage it precedes waits for its inputs.
void prefetch_share(const dsl::Value& first, int64_t elements);

// Those rows' partial sums over K in [k_first, k_end) only (split K: both multiples of g.step), so
// that a GEMV can spread over more programs than it has row blocks.
dsl::Value gemv_rows_span(const GemvTask& g, const dsl::Value& rows, const dsl::Value& row_ok,
                          const dsl::Value& k_first, const dsl::Value& k_end);

}  // namespace monotile::kernels::k3
