// Sample programs shared by the dsl unit tests: the sketch's kernels and one program per area of
// the surface, so that verifier and pass tests run over everything the builder makes.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "dsl/ir.h"

namespace monotile::dsl::testing {

struct NamedProgram {
  std::string name;
  std::function<Program()> build;
};

// Every sample program, each built fresh on call.
const std::vector<NamedProgram>& sample_programs();

Program rms_norm(int hidden, float eps);
Program gemv(int m, int n, int k, int block_n, int block_k, int split_k);
Program kda_verify(int heads, int q, int block_v);

}  // namespace monotile::dsl::testing
