#include "kernels/k3/moe_stage.h"

#include <algorithm>
#include <vector>

#include "dsl/dsl.h"
#include "kernels/k3/build_support.h"
#include "kernels/k3/gemv_task.h"
#include "kernels/k3/mxfp4_gemv.h"
#include "support/check.h"

namespace monotile::kernels::k3 {

using namespace monotile::dsl;  // NOLINT: kernels read as the DSL guide writes them

namespace {

constexpr int kRows = 64;      // GEMV rows a task takes
constexpr int kHalfRows = 32;  // gate rows (and as many up rows) of an activation task
// Weight rows of an MXFP4 GEMV task (H: 64 gate and 64 up rows; I: latent rows): the unit's 16-row
// tiles over 8 warps, so that each warp decodes its own weights (the weights are the dot's A operand).
constexpr int kExpertRows = 128;
constexpr int kExpertHalfRows = kExpertRows / 2;
enum Word { kLat, kAct, kShared, kUnion, kInter, kNormed, kPartial };

int tasks_of(int64_t rows, int per_task) { return static_cast<int>((rows + per_task - 1) / per_task); }

void wait(const Value& flag, int index, const HandoffContext& hc) {
  wait_flag(flag, kMoeRegion, full({}, index, i32), hc);
}

constexpr int kSumAhead = 4;  // chunk partials the final pass of the routed sum loads at once

}  // namespace

int expert_gate_up_step(int64_t latent, int gemv_step, bool pairs, int min_k_steps) {
  return looped_step(latent, std::min(gemv_step, mxfp4_step_elements(pairs) / (2 * kExpertHalfRows)), min_k_steps);
}

int front_parts_for(int64_t hidden, int step) {
  constexpr int kMostParts = 3, kLeastSteps = 8;
  return static_cast<int>(std::clamp<int64_t>(hidden / step / kLeastSteps, 1, kMostParts));
}

int front_blocks(int latent, int latent_rows, int shared_rows) {
  return tasks_of(latent, latent_rows) + tasks_of(shared_rows, kHalfRows);
}

int routed_chunk(int slots, int chunks) {
  MT_CHECK(chunks >= 1, "K2Build::routed_chunks is at least 1");
  return std::max(1, tasks_of(slots, chunks));
}

int routed_chunk_span(int max_slots, int chunks, int expert_rows) {
  return arrival_span(routed_chunk(max_slots, chunks) * tasks_of(expert_rows, kExpertHalfRows));
}

Value situ(const Value& gate, const Value& up, float beta, float linear_beta) {
  return beta * tanh(gate / beta) * sigmoid(gate) * (linear_beta * tanh(up / linear_beta));
}

void moe_rows(const MoeRows& r, Exchange& latent, Exchange& final_sum, const HandoffContext& hc) {
  const int64_t padded = gemv_padded_tokens(r.tokens);
  const int slots = r.tokens * r.top_k;
  auto ts = arange(0, padded);
  auto t_ok = ts < r.tokens;
  auto ms = arange(0, r.token_rows);  // the MXFP4 GEMVs' token rows
  auto m_ok = ms < r.tokens;
  auto flag = [&](Word w) { return r.flags + static_cast<int>(w); };
  auto counter = [&](Word w) { return r.counters + static_cast<int>(w); };
  // The union's size and ids form scratch and weight addresses. After a wait gives up (handoff.h)
  // they are whatever the scratch held, and the launch must still end without a fault (its health
  // words already void the step), so each is clamped into its range where it is read.
  auto union_count = [&] { return minimum(maximum(load(r.union_count), 0), slots); };
  auto clamp_expert = [&](const Value& e) { return minimum(maximum(e, 0), r.experts - 1); };
  auto expert_at = [&](const Value& u) { return clamp_expert(load(r.union_ids + u)); };
  // The experts' GEMVs decode four weight bytes at once, with K in mxfp4_x_position's order: the
  // latent (H's x) and the activations (I's x) are stored in that order.
  const bool words = r.mxfp4_pairs && r.mxfp4_words;
  auto x_at = [&](const Value& e) { return words ? mxfp4_x_position(e) : e; };

  // D and E. The latent, in row blocks of latent_rows (K2Build::latent_rows, 64: a task's K loop is
  // a chain of dependent steps that takes about as long at 64 rows as at 32), and the shared experts'
  // activation, in blocks of 32 gate rows and their 32 up rows, each block in front_parts tasks of a
  // part of K. Their tasks (D's, then E's; a block's parts side by side) go round the programs past
  // the route rows (0..T-1, which hold the router's top-k, the last of the router to finish), or
  // round every program where there are no others. With one part a task finishes its block; with
  // more, it stores its f32 partial, and the last part of its block to arrive sums the block's
  // partials in part order (the same bits whichever arrives last) and finishes it.
  const int lat_tasks = tasks_of(r.latent, kRows);
  const int down_blocks = tasks_of(r.latent, r.latent_rows);
  const int act_blocks = tasks_of(r.shared_rows, kHalfRows);
  const int parts = r.front_parts;
  const int64_t front_width = r.latent + 2 * int64_t{r.shared_rows};  // a token's partials
  auto programs = num_programs(0);
  auto others = programs > r.tokens;
  auto workers = where(others, programs - r.tokens, programs);
  auto worker = where(others, program_id(0) - r.tokens, program_id(0));
  const int front_tasks = (down_blocks + act_blocks) * parts;
  const GemvTask down{.w = r.w_ld, .x = r.y, .k = r.hidden, .tokens = r.tokens, .rows = r.latent_rows, .step = r.gemv_step};
  const GemvTask gate_up{.w = r.w_gu, .x = r.y, .k = r.hidden, .tokens = r.tokens, .rows = kHalfRows,
                         .step = looped_step(r.hidden, r.gemv_step, r.min_k_steps)};
  // Part p's K range of a GEMV in steps of `step`: steps [p S / parts, (p + 1) S / parts).
  auto k_at = [&](const Value& p, int step) { return p * static_cast<int>(r.hidden / step) / parts * step; };
  // Stores a block's partial (f32 [rows, padded]) at column `first` of part p's [T, LAT + 2 SI] and
  // returns whether this task was the block's last part; the sum of the block's parts is then
  // `sum_parts(first, rows)`.
  auto hand_in = [&](const Value& partial, const Value& p, const Value& first, int rows, const Value& block) {
    auto cs = first + arange(0, rows);
    store(r.front_partials + (p * r.tokens + row(ts)) * front_width + col(cs), partial.bitcast(i32), row(t_ok));
    return count_arrival(r.block_counters + block, parts, arrival_span(parts));
  };
  auto sum_parts = [&](const Value& first, int rows) {
    auto cs = first + arange(0, rows);
    std::vector<Value> each;  // every load in flight at once
    for (int q = 0; q < parts; ++q) {
      each.push_back(load(r.front_partials + (q * r.tokens + row(ts)) * front_width + col(cs), row(t_ok), 0));
    }
    Value total = each[0].bitcast(f32);
    for (int q = 1; q < parts; ++q) total = total + each[q].bitcast(f32);
    return total;
  };
  auto finish_down = [&](const Value& block, const Value& sums) {
    auto rows = block * r.latent_rows + arange(0, r.latent_rows);
    store(r.lat + row(ts) * r.latent + col(x_at(rows)), sums.to(bf16), col(rows < r.latent) & row(t_ok));
    arrive(counter(kLat), down_blocks, flag(kLat), hc);
  };
  auto finish_act = [&](const Value& block, const Value& gate_sums, const Value& up_sums) {
    auto rows = block * kHalfRows + arange(0, kHalfRows);
    auto gate = gate_sums.to(bf16).to(f32), up = up_sums.to(bf16).to(f32);
    store(r.act + row(ts) * r.shared_rows + col(rows), situ(gate, up, r.situ_beta, r.situ_linear_beta).to(bf16),
          col(rows < r.shared_rows) & row(t_ok));
    arrive(counter(kAct), act_blocks, flag(kAct), hc);
  };
  range(where(worker >= 0, worker, front_tasks), front_tasks, workers, [&](Value task) {
    wait(r.y_flag, kLat, hc);
    auto block = task / parts, p = task % parts;
    if_(block < down_blocks, [&] {
      auto rows = block * r.latent_rows + arange(0, r.latent_rows);
      auto ok = rows < r.latent;
      if (parts == 1) {
        finish_down(block, gemv_rows(down, rows, ok));
        return;
      }
      auto partial = gemv_rows_span(down, rows, ok, k_at(p, down.step), k_at(p + 1, down.step));
      auto first = block * r.latent_rows;
      if_(hand_in(partial, p, first, r.latent_rows, block),
          [&] { finish_down(block, sum_parts(first, r.latent_rows)); });
    }, [&] {
      auto shared_block = block - down_blocks;
      auto rows = shared_block * kHalfRows + arange(0, kHalfRows);
      auto ok = rows < r.shared_rows;
      if (parts == 1) {
        finish_act(shared_block, gemv_rows(gate_up, rows, ok), gemv_rows(gate_up, r.shared_rows + rows, ok));
        return;
      }
      auto k_first = k_at(p, gate_up.step), k_end = k_at(p + 1, gate_up.step);
      auto gate = gemv_rows_span(gate_up, rows, ok, k_first, k_end);
      auto up = gemv_rows_span(gate_up, r.shared_rows + rows, ok, k_first, k_end);
      // The gate rows' partials, then the up rows', side by side past the latent's.
      auto first = r.latent + shared_block * (2 * kHalfRows);
      if_(hand_in(cat(gate, up, 0), p, first, 2 * kHalfRows, block), [&] {
        finish_act(shared_block, sum_parts(first, kHalfRows), sum_parts(first + kHalfRows, kHalfRows));
      });
    });
  });
  r.clock.tick(K2ClockPoint::kLatent);
  r.clock.tick(K2ClockPoint::kSharedAct);

  // G. The union of the chosen experts, by program 0: it holds route row 0 and no task of D or E, so
  // the union follows the last route row at once (on a program with an E task it waited for that
  // task, some 20 us at K3 TP 8, and every expert task with it).
  const int64_t span = pow2_at_least(slots);
  if_(program_id(0) == 0, [&] {
    wait(r.route_flag, kUnion, hc);
    auto js = arange(0, span);
    auto chosen = load(r.route_experts + js, js < slots, r.experts);  // padding sorts last
    // A stale route (a wait gave up) may hold any id: outside [0, E) it counts as padding.
    auto ids = where((chosen >= 0) & (chosen < r.experts), chosen, r.experts);
    auto sorted = sort(ids).values;
    store(r.sorted + js, sorted, js < slots);
    barrier();  // the program's own stores, read back shifted by one
    auto before = load(r.sorted + maximum(js - 1, 0), js < slots, -1);
    auto first = (sorted < r.experts) & ((js == 0) | (sorted != before));
    auto position = cumsum(first.to(i32)) - 1;
    store(r.union_ids + position, sorted, first);
    store(r.union_count, sum(first.to(i32)));
    publish(flag(kUnion), hc);
  });
  r.clock.tick(K2ClockPoint::kUnion);

  // H. The routed experts' activations, a task per (union slot, 64 of the Ir rows); slots past the
  // union's size only arrive.
  const int groups = tasks_of(r.expert_rows, kExpertHalfRows);
  const int inter_tasks = slots * groups;
  const int64_t w13_bytes = int64_t{2} * r.expert_rows * r.latent / 2, w13_scales = int64_t{2} * r.expert_rows * r.latent / 32;
  // With up_ahead, every program asks L2 for an equal share of the rank's W_up lines before H's waits:
  // K's up-projection then reads them from L2 at the layer's end, where its few tasks (a 64-row task
  // a program, 14 at K3 TP 8) streamed them from memory after everything else. A prefetch holds no
  // register and waits for nothing; its lines are kept last (evict_last) while the experts stream.
  if (r.up_ahead) prefetch_share(r.w_up, int64_t{r.up_rows} * r.latent);
  // The waits and the union's size once a program, not once a task: each is a round trip to L2 that
  // a task would otherwise make before its first weight load could even be addressed.
  if_(program_id(0) < inter_tasks, [&] {
    wait(flag(kUnion), kInter, hc);
    if (r.expert_first_fetch > 0) {
      // The route is known: the program's first H task (program_id's) asks L2 for its gate and up
      // rows' first K steps while the latent, which its GEMV also needs, is still being computed.
      auto u = program_id(0) / groups;
      if_(u < union_count(), [&] {
        auto e = expert_at(u).to(i64);
        auto first_row = program_id(0) % groups * kExpertHalfRows;
        const int64_t row_bytes = r.latent / 2;
        const int64_t step_bytes = expert_gate_up_step(r.latent, r.gemv_step, r.mxfp4_pairs, r.min_k_steps) / 2;
        const int64_t bytes = std::min<int64_t>(r.expert_first_fetch * step_bytes, row_bytes);
        for (int half = 0; half < 2; ++half) {
          auto first = half * r.expert_rows + first_row;
          prefetch_row_heads(r.w13 + e * w13_bytes + first.to(i64) * row_bytes, r.expert_rows - first_row,
                             kExpertHalfRows, row_bytes, bytes, 1);
        }
      });
    }
    wait(flag(kLat), kInter, hc);
    r.clock.tick(K2ClockPoint::kExpertsReady);
  });
  auto experts_live = union_count();
  // I's chunks (below): with chunk_handoff each H task counts itself on its chunk's counter, and the
  // last of the chunk's tasks (its slots' groups, dead slots included) sets the chunk's flag.
  const int chunk = routed_chunk(slots, r.routed_chunks);
  const int chunks = tasks_of(slots, chunk);
  MT_CHECK(!r.chunk_handoff || (r.chunk_span >= chunk * groups && (r.chunk_span & (r.chunk_span - 1)) == 0),
           "MoeRows::chunk_span is a power of two covering a chunk's H tasks");
  // A task's GEMV on expert e (its gate row j and up row j side by side: rows 2j and 2j + 1 of the
  // GEMV; one GEMV of 128 rows gives each warp its own 16-row tile, where two of 64 would give each
  // tile to two warps, which would both decode it, and each pair splits apart where the accumulator
  // holds it), its rows and their mask.
  auto pair_rows = [&](const Value& js, const Value& first_row) {
    return (js & 1) * r.expert_rows + first_row + (js >> 1);
  };
  // Where the tasks tile Ir exactly (K3 at every TP) every row is real: a mask the lowering sees
  // true costs no predicate and no zeroed registers a load.
  auto pair_ok = [&](const Value& js, const Value& first_row) {
    return r.expert_rows % kExpertHalfRows == 0 ? js < 2 * kExpertHalfRows : first_row + (js >> 1) < r.expert_rows;
  };
  const Mxfp4Gemv h_shape{.packed = r.w13, .scales = r.w13_scale, .x_pairs = r.lat_pairs,
                          .k = r.latent, .tokens = r.tokens, .token_rows = r.token_rows, .rows = 2 * kExpertHalfRows,
                          .step = expert_gate_up_step(r.latent, r.gemv_step, r.mxfp4_pairs, r.min_k_steps),
                          .ahead = r.expert_ahead,
                          .x_padded = true,
                          .x_ahead = r.x_ahead && r.expert_stages == 0,
                          .pairs = r.mxfp4_pairs,
                          .words = words,
                          .scale_bias = r.mxfp4_scale_bias,
                          .placement = r.mxfp4_placement,
                          // Stages of several steps, or one loop over the tasks, copy further ahead
                          // than any L2 prefetch a few steps on: those would ask for lines already
                          // asked for.
                          .prefetch_steps = r.expert_stage_steps > 1 || r.expert_task_loop > 0 ? 0 : r.prefetch_steps,
                          // A staged loop's copies take the stages' own fetch (l2_fetch is the
                          // register pipeline's).
                          .l2_fetch = r.expert_stages != 0 ? r.stage_fetch : r.l2_fetch,
                          .stages = r.expert_stages,
                          .stage_steps = r.expert_stage_steps,
                          .codes_ahead = r.codes_ahead && r.expert_stages != 0};
  auto h_task = [&](const Value& e) {
    Mxfp4Gemv g = h_shape;
    g.packed = r.w13 + e * w13_bytes;
    g.scales = r.w13_scale + e * w13_scales;
    return g;
  };
  // A live task's activations from its GEMV's accumulator: h = bf16(SiTU(g, u)) into inter.
  auto h_store = [&](const Value& u, const Value& first_row, const Value& acc) {
    auto [gate, up] = split(reshape(acc, {r.token_rows, kExpertHalfRows, 2}));
    auto rows = first_row + arange(0, kExpertHalfRows);
    store(r.inter + (u * r.tokens + col(ms)) * r.expert_rows + row(x_at(rows)),
          situ(gate, up, r.situ_beta, r.situ_linear_beta).to(bf16), row(rows < r.expert_rows) & col(m_ok));
  };
  // A task's arrival, live or not (u: its union slot).
  auto h_arrive = [&](const Value& task, const Value& u) {
    if (r.chunk_handoff) {
      auto c = u / chunk;
      auto arrivals = minimum(slots - c * chunk, chunk) * groups;
      if_(count_arrival(r.chunk_counters + c, arrivals, r.chunk_span),
          [&] { store_release(r.chunk_flags + c, hc.tag, Scope::gpu); });
    } else {
      arrive(counter(kInter), inter_tasks, flag(kInter), hc);
    }
    r.clock.tick_if(task == program_id(0), K2ClockPoint::kExpertFirst);
  };
  // With expert_task_loop, the program's first live tasks (program_id + j num_programs, at most
  // expert_task_loop of them) as one staged loop (mxfp4_gemv_tasks): their experts' ids read before
  // it (a staged copy's address may not come from memory read inside the loop), each iteration
  // selecting its task's. The tasks after them, live or not, take the loop below.
  Value first_task = program_id(0);
  if (r.expert_task_loop > 0) {
    MT_CHECK(r.expert_stages != 0, "MoeRows::expert_task_loop needs expert_stages");
    auto live_tasks = experts_live * groups;
    auto looped = minimum((live_tasks - program_id(0) + num_programs(0) - 1) / num_programs(0), r.expert_task_loop);
    auto task_of = [&](const Value& j) { return program_id(0) + j * num_programs(0); };
    std::vector<Value> ids;
    for (int j = 0; j < r.expert_task_loop; ++j) {
      ids.push_back(expert_at(maximum(minimum(task_of(full({}, j, i32)) / groups, experts_live - 1), 0)));
    }
    auto expert_of = [&](const Value& j) {
      Value e = ids.back();
      for (int i = r.expert_task_loop - 2; i >= 0; --i) e = where(j == i, ids[i], e);
      return e.to(i64);
    };
    mxfp4_gemv_tasks(
        h_shape, looped,
        [&](const Value& j) {
          auto first_row = task_of(j) % groups * kExpertHalfRows;
          auto js = arange(0, 2 * kExpertHalfRows);
          Mxfp4Gemv g = h_task(expert_of(j));
          return Mxfp4Task{.rows = pair_rows(js, first_row), .row_ok = pair_ok(js, first_row), .packed = g.packed,
                           .scales = g.scales, .x_pairs = g.x_pairs};
        },
        [&](const Value& j, const Value& acc) {
          auto task = task_of(j);
          auto u = task / groups;
          h_store(u, task % groups * kExpertHalfRows, acc);
          h_arrive(task, u);
        });
    first_task = task_of(maximum(looped, 0));
  }
  range(first_task, inter_tasks, num_programs(0), [&](Value task) {
    auto u = task / groups;
    if_(u < experts_live, [&] {
      auto e = expert_at(u).to(i64);
      auto first_row = task % groups * kExpertHalfRows;
      auto js = arange(0, 2 * kExpertHalfRows);
      auto rows = pair_rows(js, first_row);
      const Mxfp4Gemv g = h_task(e);
      auto ok = pair_ok(js, first_row);
      h_store(u, first_row, mxfp4_gemv_rows(g, rows, ok));
    });
    h_arrive(task, u);
  });
  r.clock.tick(K2ClockPoint::kExperts);

  // F. The shared experts' partial: only K reads it. Ahead of the experts it held every program's
  // first expert task behind E's slowest task; so it runs after the routed sum or, with
  // shared_early, between H and I, where the programs with the fewest H tasks (the last ones) take
  // it first while the others finish H.
  const int shared_tasks = tasks_of(r.hidden, kRows);
  auto shared_partials = [&](const Value& first) {
    range(first, shared_tasks, num_programs(0), [&](Value task) {
      wait(flag(kAct), kShared, hc);
      const GemvTask g{.w = r.w_sd, .x = r.act, .k = r.shared_rows, .tokens = r.tokens, .rows = kRows,
                       .step = mxfp4_step(r.shared_rows, r.gemv_step)};
      auto rows = task * kRows + arange(0, kRows);
      store(r.shared + row(ts) * r.hidden + col(rows), gemv_task(g, task, r.hidden).to(bf16),
            col(rows < r.hidden) & row(t_ok));
      arrive(counter(kShared), shared_tasks, flag(kShared), hc);
    });
  };
  if (r.shared_early) shared_partials(num_programs(0) - 1 - program_id(0));

  // I. The routed sum, wide: a task per (union chunk of `chunk` slots, 128 latent rows), so that every
  // program holds a few tasks at once and the union's experts run concurrently across the SMs (a task
  // per 64 rows over the whole union left 56 programs each a chain of up to 223 dependent GEMVs).
  // Chunk-major task order puts the live chunks first, spread evenly over the programs. Each task
  // writes its f32 partial into its chunk's own slot of `partials` (no atomics, no timing in the sum).
  const int routed_tasks = tasks_of(r.latent, kExpertRows);
  const int partial_tasks = chunks * routed_tasks;
  const int64_t w2_bytes = int64_t{r.latent} * r.expert_rows / 2, w2_scales = int64_t{r.latent} * r.expert_rows / 32;
  // As in H, the wait, the union's size and the route (the same for every task) once a program;
  // with chunk_handoff, each live task waits for its chunk's flag instead.
  if (!r.chunk_handoff) {
    if_(program_id(0) < partial_tasks, [&] {
      wait(flag(kInter), kLat, hc);
      r.clock.tick(K2ClockPoint::kRoutedReady);
    });
  }
  auto count = union_count();
  auto ks = arange(0, pow2_at_least(r.top_k));
  auto chosen = load(r.route_experts + col(ms) * r.top_k + row(ks), col(m_ok) & row(ks < r.top_k), -1);
  auto chosen_weight = load(r.route_weights + col(ms) * r.top_k + row(ks), col(m_ok) & row(ks < r.top_k), 0.0f);
  range(program_id(0), partial_tasks, num_programs(0), [&](Value task) {
    auto c = task / routed_tasks;
    auto block = task % routed_tasks;
    auto first = c * chunk;
    if_(first < count, [&] {
      if (r.chunk_handoff) {
        wait(r.chunk_flags + c, kInter, hc);
        r.clock.tick_if(task == program_id(0), K2ClockPoint::kRoutedReady);
      }
      // The chunk's experts as one pipelined sum (mxfp4_gemv_sum): an expert's first w2 loads are in
      // flight while the one before it decodes its last steps, where a GEMV an expert waited for
      // each expert's first loads (K = 384 is 3 steps of 128 at K3 TP 8).
      auto rows = block * kExpertRows + arange(0, kExpertRows);
      // As H's rows where blocks tile the latent, up to 8 tokens: at 16 the mask-free loop's schedule
      // spills on sm_90a (k3-tiny and K3 at TP 1).
      auto rows_ok = r.latent % kExpertRows == 0 && r.tokens <= 8 ? arange(0, kExpertRows) < kExpertRows : rows < r.latent;
      // Staged (routed_stages), a step's addresses must be known stages - 1 steps ahead: the chunk's
      // expert ids are read before the loop, and each step selects its own from them.
      std::vector<Value> ids;
      if (r.routed_stages > 0) {
        MT_CHECK(chunk <= kMaxStagedChunk, "k2_program refuses longer staged chunks");
        for (int j = 0; j < chunk; ++j) ids.push_back(expert_at(minimum(first + j, count - 1)));
      }
      auto chunk_expert = [&](const Value& j) {
        if (ids.empty()) return expert_at(first + j);
        Value e = ids.back();
        for (int i = chunk - 2; i >= 0; --i) e = where(j == i, ids[i], e);
        return e;
      };
      const Mxfp4Gemv shape{.packed = r.w2, .scales = r.w2_scale, .x_pairs = r.inter_pairs, .k = r.expert_rows,
                            .tokens = r.tokens, .token_rows = r.token_rows, .rows = kExpertRows,
                            .step = mxfp4_step(r.expert_rows, std::min(r.gemv_step, mxfp4_step_elements(r.mxfp4_pairs) / kExpertRows)),
                            .ahead = r.expert_ahead,
                            .x_padded = true,
                            .x_ahead = r.x_ahead && r.routed_stages == 0,
                            .pairs = r.mxfp4_pairs,
                            .words = words,
                            .scale_bias = r.mxfp4_scale_bias,
                            .placement = r.mxfp4_placement,
                            .prefetch_steps = r.prefetch_steps,
                            .l2_fetch = r.routed_stages != 0 ? r.stage_fetch : r.l2_fetch,
                            .stages = r.routed_stages,
                            .codes_ahead = r.codes_ahead && r.routed_stages != 0};
      auto routed = mxfp4_gemv_sum(
          shape, rows, rows_ok, minimum(count - first, chunk),
          [&](const Value& j) {
            auto e = chunk_expert(j).to(i64);
            return Mxfp4Segment{.packed = r.w2 + e * w2_bytes, .scales = r.w2_scale + e * w2_scales,
                                .x_pairs = r.inter_pairs + (first + j) * r.tokens * (r.expert_rows / 2)};
          },
          // [16]: the expert's weight per token, 0 for rows that did not choose it
          [&](const Value& j) { return sum(where(chosen == chunk_expert(j), chosen_weight, 0.0f), 1); });
      // f32 as its bits: the slot lives in an i32 view (pointers cannot be cast; k2.h's K2Scratch).
      store(r.partials + (c * r.tokens + col(ms)) * r.latent + row(rows), routed.bitcast(i32),
            row(rows < r.latent) & col(m_ok));
    });
    arrive(counter(kPartial), partial_tasks, flag(kPartial), hc);
    r.clock.tick_if(task == program_id(0), K2ClockPoint::kRoutedFirst);
  });
  r.clock.tick(K2ClockPoint::kRouted);

  // I'. Per 64 latent rows, the live chunks' partials summed in chunk order (union order, as one loop
  // over the union would add them up to f32 association), into the latent exchange.
  range(program_id(0), lat_tasks, num_programs(0), [&](Value task) {
    wait(flag(kPartial), kLat, hc);
    auto rows = task * kRows + arange(0, kRows);
    auto live = (union_count() + (chunk - 1)) / chunk;
    // kSumAhead chunks an iteration: their loads are independent, so they wait for L2 together
    // rather than once a chunk (up to 32); a chunk past the live ones reads 0.
    auto routed = range(0, live, kSumAhead, zeros({kRows, padded}, f32), [&](Value c0, Value acc) {
      for (int i = 0; i < kSumAhead; ++i) {
        auto c = c0 + i;
        auto bits = load(r.partials + (c * r.tokens + row(ts)) * r.latent + col(rows),
                         col(rows < r.latent) & row(t_ok) & (c < live), 0);
        acc = acc + bits.bitcast(f32);
      }
      return acc;
    });
    latent.contribute(routed, rows, task, lat_tasks);
  });
  r.clock.tick(K2ClockPoint::kLatentSum);

  // J. The routed RMSNorm, a row a task.
  const int64_t lat_span = pow2_at_least(r.latent);
  range(program_id(0), r.tokens, num_programs(0), [&](Value t) {
    latent.wait_reduced(t);
    auto cs = arange(0, lat_span);
    auto ok = cs < r.latent;
    auto x = load(latent.out() + t * r.latent + cs, ok).to(f32);
    Value normed = x;
    if (r.latent_norm) {
      auto rstd = rsqrt(sum(x * x) / float(r.latent) + r.norm_eps);
      normed = (x * rstd).to(bf16).to(f32) * load(r.norm_w + cs, ok).to(f32);
    }
    store(r.normed + t * r.latent + cs, normed.to(bf16), ok);
    arrive(counter(kNormed), r.tokens, flag(kNormed), hc);
  });
  r.clock.tick(K2ClockPoint::kNormed);

  if (!r.shared_early) shared_partials(program_id(0));
  r.clock.tick(K2ClockPoint::kShared);

  // K. Shared + up-projection per 64 hidden columns, into the final exchange.
  range(program_id(0), shared_tasks, num_programs(0), [&](Value task) {
    wait(flag(kNormed), kNormed, hc);
    wait(flag(kShared), kNormed, hc);
    auto cols = task * kRows + arange(0, kRows);
    auto up_row = cols - r.up_first;
    const GemvTask g{.w = r.w_up, .x = r.normed, .k = r.latent, .tokens = r.tokens, .rows = kRows,
                     .step = mxfp4_step(r.latent, r.gemv_step)};
    auto up = gemv_rows(g, up_row, (up_row >= 0) & (up_row < r.up_rows));
    auto shared = load(r.shared + row(ts) * r.hidden + col(cols), col(cols < r.hidden) & row(t_ok)).to(f32);
    final_sum.contribute(shared + up, cols, task, shared_tasks);
  });
  r.clock.tick(K2ClockPoint::kFinal);
}

}  // namespace monotile::kernels::k3
