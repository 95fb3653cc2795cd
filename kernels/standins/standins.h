// The host stand-ins of `monotile decode` as simple DSL kernels (the layers the executor does not
// serve): layer 0's dense MLP half and an MLA layer's attention up to o_proj. Correct first: plain
// programs, one small launch per step of the math, each matching kernels/reference at its bf16
// rounding points. The launches on a device are kda_mlp_standin.h and mla_standin.h.
#pragma once

#include "kernels/standins/attn_res.h"
#include "kernels/standins/linear.h"
#include "kernels/standins/mla_decode.h"
#include "kernels/standins/residual.h"
#include "kernels/standins/rms_norm.h"
#include "kernels/standins/situ.h"
