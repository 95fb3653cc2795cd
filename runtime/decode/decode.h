// The specialized decode's host side, as a user includes it: the deployment check
// (specialized_decode_config), the weight and KV-state checks (weight_reasons, cache_reasons), the
// cross-rank verdict (agree over a Group) and the per-step plan (StepPlanner::prepare_kv, plan).
#pragma once

#include "runtime/decode/agree.h"
#include "runtime/decode/cache_reasons.h"
#include "runtime/decode/decode_config.h"
#include "runtime/decode/group.h"
#include "runtime/decode/step_plan.h"
#include "runtime/decode/tensor_view.h"
#include "runtime/decode/tp_reasons.h"
#include "runtime/decode/weight_reasons.h"
