// A software pipeline over a loop's K steps: each step's loads are issued `ahead` steps before the
// step is consumed, so that a thread keeps that many loads in flight while it computes. The MXFP4
// GEMV (mxfp4_gemv.h) and the bf16 GEMV's register path (gemv_task.h) run their K loops through it.
#pragma once

#include <functional>
#include <vector>

#include "dsl/value.h"

namespace monotile::kernels::k3 {

// load(i) issues step i's loads (callers clamp i past the last step) and returns them, always the
// same number of values of the same types. consume(i, s, state, loaded) returns the state after
// step i, sub-step s of its iteration.
using PipelineLoad = std::function<std::vector<dsl::Value>(const dsl::Value& step)>;
using PipelineConsume = std::function<std::vector<dsl::Value>(
    const dsl::Value& step, int sub_step, const std::vector<dsl::Value>& state,
    const std::vector<dsl::Value>& loaded)>;

// Runs `steps` steps (an i32 scalar) from `state` and returns the final state (as many values).
// The loop carries the state, then ahead + 1 pending steps' loads (slots), and is unrolled ahead +
// 1 times: sub-step s consumes slot s, then refills it with the step ahead + 1 later. Each load so
// goes into the registers its slot has just freed, and every slot keeps its registers across the
// loop's back edge (a load issued before its slot was consumed would need a fresh register set,
// and a move of each word into the slot at the end of the iteration). Where ahead + 1 may not
// divide `steps` (`exact` false), a sub-step past the last step passes the state through.
std::vector<dsl::Value> pipelined_steps(int ahead, const dsl::Value& steps, bool exact,
                                        std::vector<dsl::Value> state, const PipelineLoad& load,
                                        const PipelineConsume& consume);

}  // namespace monotile::kernels::k3
