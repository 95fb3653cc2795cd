// K2 test cases shared by the interpreter and GPU tests: random inputs and weights of one rank's
// layer at any model shape (MXFP4 experts included), one K2 run on a conformance Executor with every
// output poisoned, and the checks against the float64 reference (gtest assertions: the file is
// compiled into the test binaries, not into a library).
#pragma once

#include <string>

#include "tests/conformance/executor.h"

namespace monotile::kernels::k3 {

// How a case shapes the router's inputs: random, exact ties (odd experts copy the even ones),
// NaN scores (every even expert), or every row forced onto experts 0..top_k-1 (only their MXFP4
// bytes are then held, which K3's 896 experts need on the interpreter).
enum class Router { kRandom, kTies, kNan, kSameExperts };

struct K2Case {
  std::string model = "k3-tiny";
  int tp = 1;
  int layer = 1;
  int tokens = 4;
  int programs = 8;
  Router router = Router::kRandom;
  std::string target = {};  // non-empty: the build is shaped for this target (k2_for_target)
};

std::string case_name(const K2Case& c);

// Generates the case (seeded by the test's case rng), runs K2 on `executor` and checks a, P', y,
// the route and the MoE output against the reference.
void run_k2_case(const K2Case& c, conformance::Executor& executor);

}  // namespace monotile::kernels::k3
