// Runs generated gfx90a kernels on the host (host_emulation_hip.h: a std::thread per GPU thread) and
// compares every output with the interpreter's: the lowering's layouts, conversions, reductions,
// scans, sorts, dots, atomics and waits executed, not just compiled. Skips without a host compiler.
#include <dlfcn.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "dsl/dsl.h"
#include "dsl/interp/interpreter.h"
#include "dsl/lower/host_emulation_build.h"
#include "dsl/lower/lower.h"
#include "dsl/test_programs.h"
#include "gtest/gtest.h"
#include "tests/testing/compare.h"
#include "tests/testing/seed.h"

namespace monotile::dsl::lower {
namespace {

struct Buffer {
  ScalarType type;
  size_t count;
  int lo = 0;  // integers are drawn from [lo, hi); every 32-bit pattern when hi <= lo
  int hi = 1000;
};

struct Case {
  std::string name;
  std::function<Program()> build;
  std::vector<Buffer> buffers;  // one per pointer parameter, in order
  std::vector<double> scalars;  // one per scalar parameter, in order
  int grid = 1;
  std::string source_has = {};  // the generated source must contain this (the path under test)
};

double element(ScalarType type, const uint8_t* p) {
  switch (type) {
    case ScalarType::kF32: { float f; std::memcpy(&f, p, 4); return f; }
    case ScalarType::kBf16: {
      uint32_t u = static_cast<uint32_t>(p[0] | (p[1] << 8)) << 16;
      float f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case ScalarType::kI32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case ScalarType::kU32: { uint32_t v; std::memcpy(&v, p, 4); return v; }
    default: return p[0];
  }
}

// The generated source made host-compilable: GCC spells clang's ext_vector_type as vector_size.
std::string for_host(std::string source) {
  const std::pair<std::string, std::string> vectors[] = {
      {"short mt_s16x4 __attribute__((ext_vector_type(4)))", "short mt_s16x4 __attribute__((vector_size(8)))"},
      {"_Float16 mt_f16x4 __attribute__((ext_vector_type(4)))", "_Float16 mt_f16x4 __attribute__((vector_size(8)))"},
      {"float mt_f32x4 __attribute__((ext_vector_type(4)))", "float mt_f32x4 __attribute__((vector_size(16)))"},
      {"float mt_f32x16 __attribute__((ext_vector_type(16)))", "float mt_f32x16 __attribute__((vector_size(64)))"},
      {"unsigned mt_u32v2 __attribute__((ext_vector_type(2)))", "unsigned mt_u32v2 __attribute__((vector_size(8)))"},
      {"unsigned mt_u32v4 __attribute__((ext_vector_type(4)))", "unsigned mt_u32v4 __attribute__((vector_size(16)))"},
  };
  for (const auto& [from, to] : vectors) {
    size_t at = source.find(from);
    if (at != std::string::npos) source.replace(at, from.size(), to);
  }
  return source;
}

void run_case(const Case& test) {
  if (std::system(MONOTILE_HOST_CXX " --version > /dev/null 2>&1") != 0) GTEST_SKIP() << "no host C++ compiler";
  Target target = Target::parse("gfx90a").value();
  Program program = test.build();
  absl::StatusOr<LoweredKernel> kernel = lower(program, target);
  ASSERT_TRUE(kernel.ok()) << kernel.status();
  if (!test.source_has.empty()) {
    ASSERT_NE(kernel->source.find(test.source_has), std::string::npos) << test.source_has;
  }

  std::string source = "#include \"" MONOTILE_HOST_EMULATION "\"\n" + for_host(kernel->source);
  source += "extern \"C\" void emu_run_thread(void** a) { " + kernel->kernel_name + "(";
  for (size_t i = 0; i < kernel->params.size(); ++i) {
    source += (i ? ", *(" : "*(") + kernel->params[i].c_type + "*)a[" + std::to_string(i) + "]";
  }
  source += "); }\n";
  std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / ("monotile_emulation_" + test.name);
  std::filesystem::create_directories(dir);
  absl::StatusOr<void*> built = testing::build_host_emulation(source, "-std=c++20 -O1 -w -shared -fPIC", dir / "kernel");
  ASSERT_TRUE(built.ok()) << built.status();
  void* library = *built;
  auto launch = reinterpret_cast<void (*)(void**, int, int, int, int, int)>(dlsym(library, "emu_launch"));
  ASSERT_NE(launch, nullptr);

  // Fresh random contents (outputs too, so an unwritten element differs), one copy per executor.
  std::mt19937 rng = monotile::testing::case_rng();
  std::vector<std::vector<uint8_t>> interpreted, emulated;
  for (const Buffer& buffer : test.buffers) {
    int bytes = scalar_type_bytes(buffer.type);
    std::vector<uint8_t> data(buffer.count * bytes);
    std::uniform_real_distribution<float> uniform(-2, 2);
    for (size_t i = 0; i < buffer.count; ++i) {
      uint8_t* p = data.data() + i * bytes;
      float f = uniform(rng);
      uint32_t bits;
      std::memcpy(&bits, &f, 4);
      if (buffer.type == ScalarType::kF32) {
        std::memcpy(p, &f, 4);
      } else if (buffer.type == ScalarType::kBf16) {
        uint16_t half = static_cast<uint16_t>(bits >> 16);
        std::memcpy(p, &half, 2);
      } else if (buffer.type == ScalarType::kI32 || buffer.type == ScalarType::kU32) {
        uint32_t value = buffer.hi > buffer.lo ? buffer.lo + rng() % (buffer.hi - buffer.lo) : static_cast<uint32_t>(rng());
        std::memcpy(p, &value, 4);
      } else {
        p[0] = static_cast<uint8_t>(rng());
      }
    }
    interpreted.push_back(data);
    emulated.push_back(data);
  }
  std::vector<std::vector<uint8_t>> initial = interpreted;
  std::vector<interp::ArgValue> args;
  std::vector<interp::Allocation> allocations;
  std::vector<void*> pointers(program.params.size());
  std::vector<int64_t> integers(program.params.size());
  std::vector<float> floats(program.params.size());
  std::vector<void*> emulated_args;
  size_t buffer = 0, scalar = 0;
  for (size_t i = 0; i < program.params.size(); ++i) {
    const Param& param = program.params[i];
    if (param.type.pointer) {
      args.push_back(interp::ArgValue::pointer(interpreted[buffer].data(), param.type.scalar));
      allocations.push_back({interpreted[buffer].data(), interpreted[buffer].size(), param.name});
      pointers[i] = emulated[buffer++].data();
      emulated_args.push_back(&pointers[i]);
    } else if (is_float(param.type.scalar)) {
      floats[i] = static_cast<float>(test.scalars[scalar]);
      args.push_back(interp::ArgValue::floating(param.type.scalar, test.scalars[scalar++]));
      emulated_args.push_back(&floats[i]);
    } else {
      integers[i] = static_cast<int64_t>(test.scalars[scalar]);
      args.push_back(interp::ArgValue::integer(param.type.scalar, integers[i]));
      ++scalar;
      emulated_args.push_back(&integers[i]);
    }
  }
  interp::InterpretOptions options;
  options.allocations = allocations;
  std::ostringstream prints;
  options.print_stream = &prints;
  absl::Status status = interp::interpret(program, {test.grid, 1, 1}, args, options);
  ASSERT_TRUE(status.ok()) << status;
  launch(emulated_args.data(), test.grid, 1, 1, kernel->block_threads, target.warp_size());
  dlclose(library);

  size_t written = 0;
  for (size_t b = 0; b < test.buffers.size(); ++b) {
    ScalarType type = test.buffers[b].type;
    int bytes = scalar_type_bytes(type);
    double tolerance = type == ScalarType::kBf16 ? 1e-2 : 1e-5;
    int mismatches = 0;
    for (size_t i = 0; i < test.buffers[b].count; ++i) {
      written += std::memcmp(interpreted[b].data() + i * bytes, initial[b].data() + i * bytes, bytes) != 0;
      double want = element(type, interpreted[b].data() + i * bytes);
      double got = element(type, emulated[b].data() + i * bytes);
      bool same = monotile::testing::agrees(got, want, {tolerance, tolerance});
      if (!same && mismatches++ < 5) {
        ADD_FAILURE() << test.name << ": " << program.params[b].name << "[" << i << "]: interpreter " << want
                      << ", generated kernel " << got;
      }
    }
  }
  EXPECT_GT(written, 0u) << "the program wrote nothing: the comparison would be vacuous";
}

Program sample(const std::string& name) {
  for (const auto& program : dsl::testing::sample_programs()) {
    if (program.name == name) return program.build();
  }
  ADD_FAILURE() << "no sample " << name;
  return Program{};
}

Program softmax_2d() {
  Builder b("softmax_2d", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), y = b.arg("y", ptr(f32));
  auto offs = col(arange(0, 8)) * 256 + row(arange(0, 256));
  auto v = load(x + offs);
  auto e = exp(v - max(v, 1, true));
  store(y + offs, e / sum(e, 1, true));
  return b.finish();
}

Program matmul(int m) {
  constexpr int n = 64, k = 32;
  Builder b("matmul", {.num_warps = 4});
  auto a = b.arg("a", ptr(bf16)), bp = b.arg("b", ptr(bf16)), c = b.arg("c", ptr(f32));
  auto rows = col(arange(0, m)), cols = row(arange(0, n)), ks = arange(0, k);
  auto acc = range(0, 2 * k, k, zeros({m, n}, f32), [&](Value k0, Value acc) {
    return dot(load(a + rows * (2 * k) + row(k0 + ks)), load(bp + col(k0 + ks) * n + cols), acc);
  });
  store(c + rows * n + cols, acc);
  return b.finish();
}

// Every reduce kind over the 128 columns of a [64, 128] tile, several rows a lane (2 of u8 to 8 of
// f32): lanes split the rows between them at the first shuffle levels and gather them back.
Program reduce_rows(ScalarType dtype) {
  constexpr int kRows = 64, kCols = 128;
  Builder b(std::string("reduce_rows_") + std::string(scalar_type_name(dtype)), {.num_warps = 4});
  const bool fp = is_float(dtype);
  const ElementType element{dtype};
  auto x = b.arg("x", ptr(element));
  // Sums of integers narrower than 32 bits accumulate and return i32.
  auto sums = b.arg(
      "sums", ptr(fp || scalar_type_bytes(dtype) >= 4 ? element : ElementType{ScalarType::kI32}));
  auto maxima = b.arg("maxima", ptr(element)), minima = b.arg("minima", ptr(element));
  auto customs = b.arg("customs", ptr(element)), args = b.arg("args", ptr(i32));
  auto rows = arange(0, kRows);
  auto v = load(x + col(rows) * kCols + row(arange(0, kCols)));
  store(sums + rows, sum(v, 1));
  store(maxima + rows, max(v, 1));
  store(minima + rows, min(v, 1));
  if (fp) {
    store(customs + rows, reduce(v, 1, [](Value p, Value q) { return maximum(abs(p), abs(q)); }));
  } else {
    store(customs + rows, xor_sum(v, 1));
  }
  store(args + rows, argmax(v, 1));
  store(args + kRows + rows, argmin(v, 1));
  return b.finish();
}

// A value per 16 elements read beside them (an MXFP4 scale per 16 packed bytes), rows masked at run
// time: each thread reads a group's address once for the group's registers.
Program grouped_scales() {
  Builder b("grouped_scales", {.num_warps = 4});
  auto x = b.arg("x", ptr(u8)), s = b.arg("s", ptr(u8)), y = b.arg("y", ptr(i32)), n = b.arg("n", i32);
  auto rows = arange(0, 16);
  auto offs = col(rows) * 128 + row(arange(0, 128));
  auto ok = col(rows < n);
  store(y + offs, load(x + offs, ok).to(i32) * 256 + load(s + (offs >> 4), ok).to(i32), ok);
  return b.finish();
}

// Sorts down every path of the bitonic lowering (gfx90a: 64 lanes, 4 warps): a topk whose steps stay
// in registers and shuffles (4 lines of 304, 8 elements a thread), one along axis 0 whose partners
// are 8 elements apart and reach other warps, i32 keys with a step through shared memory, a sort of
// half the threads, and one too small for a warp (the network wholly in shared memory). Ties come from
// quantized keys, NaN from the largest ones, and equal keys of either sign from signed zeros.
Program sorts() {
  Builder b("sorts", {.num_warps = 4});
  auto x = b.arg("x", ptr(f32)), keys = b.arg("keys", ptr(i32));
  auto out = b.arg("out", ptr(f32)), ids = b.arg("ids", ptr(i32)), out_keys = b.arg("out_keys", ptr(i32));
  auto lines = col(arange(0, 4));
  auto v = floor(load(x + lines * 304 + row(arange(0, 304))) * 4.0f);
  auto [top, top_ids] = topk(where(v > 6.0f, NAN, v), 32);
  store(out + lines * 32 + row(arange(0, 32)), top);
  store(ids + lines * 32 + row(arange(0, 32)), top_ids);
  auto grid = col(arange(0, 64)) * 8 + row(arange(0, 8));
  auto by_column = sort(floor(load(x + 1216 + grid) * 2.0f), 0, false);
  store(out + 128 + grid, by_column.values);
  store(ids + 128 + grid, by_column.indices);
  auto wide = col(arange(0, 2)) * 1008 + row(arange(0, 1008));
  auto by_key = sort(load(keys + wide), 1, true);
  store(out_keys + wide, by_key.values);
  store(ids + 640 + wide, by_key.indices);
  auto half = sort(load(x + 1728 + arange(0, 112)), 0, true);
  store(out + 640 + arange(0, 112), half.values);
  store(ids + 2656 + arange(0, 112), half.indices);
  auto tiny = sort(floor(load(x + 1840 + arange(0, 16))), 0, false);
  store(out + 752 + arange(0, 16), tiny.values);
  store(ids + 2768 + arange(0, 16), tiny.indices);
  // -0 and +0 are equal keys: they keep their index order, and each its sign.
  auto zeros_line = load(x + arange(0, 16));
  auto signed_zeros = sort(where(zeros_line > zeros_line * zeros_line, -0.0f, 0.0f), 0, true);
  store(out + 768 + arange(0, 16), signed_zeros.values);
  store(ids + 2784 + arange(0, 16), signed_zeros.indices);
  return b.finish();
}

// A dot accumulating onto another whose operands all exist before the first and cannot be held in
// fragment layouts (they come through a reshape): the two share one staging in shared memory.
Program chained_dots() {
  Builder b("chained_dots", {.num_warps = 4});
  auto a = b.arg("a", ptr(bf16)), w = b.arg("w", ptr(bf16)), out = b.arg("out", ptr(f32));
  auto flat = arange(0, 2048);
  auto a1 = reshape(load(a + flat), {32, 64}), a2 = reshape(load(a + 2048 + flat), {32, 64});
  auto b1 = reshape(load(w + flat), {64, 32}), b2 = reshape(load(w + 2048 + flat), {64, 32});
  auto rows = col(arange(0, 32)), ns = row(arange(0, 32));
  store(out + rows * 32 + ns, dot(a2, b2, dot(a1, b1, zeros({32, 32}, f32))));
  return b.finish();
}

// An MXFP4 GEMV step's shape (kernels/k3/mxfp4_gemv.cpp): 64 weight rows of packed bytes carried
// into each iteration by the one before, decoded, transposed into B; 16 tokens' bf16 pairs read
// as words into A; two dots chained per step. Every operand sits in its fragment layout: no shared
// memory, and K reaches the unit permuted (runs of 16 a lane) in A and B alike.
Program fragment_dots() {
  Builder b("fragment_dots", {.num_warps = 4});
  auto packed = b.arg("packed", ptr(u8)), x = b.arg("x", ptr(i32)), out = b.arg("out", ptr(f32));
  auto rows = arange(0, 64), ms = arange(0, 16);
  auto step = [&](const Value& byte0) { return load(packed + col(rows) * 256 + row(byte0 + arange(0, 64))); };
  auto [acc, last] = range(0, 256, 64, zeros({16, 64}, f32), step(full({}, 0, i32)),
                           [&](Value byte0, Value acc, Value bytes) {
                             auto next = step(minimum(byte0 + 64, 192));
                             auto v = bytes.to(i32);
                             auto low = ((v & 15) - 8).to(f32).to(bf16);
                             auto high = ((v >> 4) - 8).to(f32).to(bf16);
                             // Both halves finite and below 2 in magnitude.
                             auto pairs = load(x + col(ms) * 256 + row(byte0 + arange(0, 64))) & 0x3fff3fff;
                             auto x_low = (pairs << 16).bitcast(f32).to(bf16);
                             auto x_high = (pairs & -65536).bitcast(f32).to(bf16);
                             return std::array{dot(x_high, trans(high), dot(x_low, trans(low), acc)), next};
                           });
  store(out + col(ms) * 64 + row(rows), acc);
  return b.finish();
}

// The MXFP4 GEMV's word decode (kernels/k3/mxfp4_gemv.cpp, Mxfp4Gemv::words): 64 rows of 512 packed
// values read four bytes a word through an i32 view of the u8 argument, a scale code a word,
// decoded by mxfp4_word_pairs into the weights' fragments in registers (K in the order 0 4 1 5 2 6
// 3 7 of each eight, which x's words are taken to hold), two K steps, 16 tokens.
Program fragment_word_pairs() {
  Builder b("fragment_word_pairs", {.num_warps = 4});
  auto packed = b.arg("packed", ptr(u8)), scales = b.arg("scales", ptr(u8)), x = b.arg("x", ptr(i32));
  auto out = b.arg("out", ptr(f32));
  auto rows = arange(0, 64), ms = arange(0, 16);
  auto words = bitcast(packed, ptr(i32));
  auto acc = range(0, 64, 32, zeros({16, 64}, f32), [&](Value word0, Value acc) {
    auto js = word0 + arange(0, 32);
    auto weights = unpack_bf16(mxfp4_word_pairs(load(words + col(rows) * 64 + row(js)),
                                                load(scales + col(rows) * 16 + row(js >> 2))));
    // Both halves finite and below 2 in magnitude.
    auto pairs = load(x + col(ms) * 256 + row(word0 * 4 + arange(0, 128))) & 0x3fff3fff;
    return dot(unpack_bf16(pairs), trans(weights), acc);
  });
  store(out + col(ms) * 64 + row(rows), acc);
  return b.finish();
}

// A in its fragment layout (MFMA 32x32, one warp along each dim), B through a reshape and so
// staged: B's fragments are read from shared memory at the K that A's registers carry.
Program fragment_a_staged_b() {
  Builder b("fragment_a_staged_b", {.num_warps = 4});
  auto a = b.arg("a", ptr(bf16)), w = b.arg("w", ptr(bf16)), out = b.arg("out", ptr(f32));
  auto rows = col(arange(0, 32)), ns = row(arange(0, 32));
  auto lhs = load(a + rows * 64 + row(arange(0, 64)));
  auto rhs = reshape(load(w + arange(0, 2048)), {64, 32});
  store(out + rows * 32 + ns, dot(lhs, rhs, zeros({32, 32}, f32)));
  return b.finish();
}

std::vector<Case> cases() {
  using enum ScalarType;
  return {
      {"rms_norm", [] { return dsl::testing::rms_norm(1024, 1e-6f); }, {{kBf16, 2048}, {kBf16, 1024}, {kBf16, 2048}}, {}, 2},
      {"softmax_masked", [] { return sample("softmax"); }, {{kF32, 3000}, {kF32, 3000}}, {1000}, 3},
      {"softmax_2d", softmax_2d, {{kF32, 2048}, {kF32, 2048}}, {}, 1},
      {"router_topk", [] { return sample("router_topk"); }, {{kF32, 2 * 896}, {kI32, 32}, {kF32, 32}}, {}, 2},
      {"chained_dots", chained_dots, {{kBf16, 4096}, {kBf16, 4096}, {kF32, 1024}}, {}, 1,
       "and the dot chained on it"},
      {"fragment_dots", fragment_dots, {{kU8, 64 * 256}, {kI32, 16 * 256, 0, 0}, {kF32, 16 * 64}}, {}, 1,
       "A's fragments from its registers and B's (K in runs of 16 a lane)"},
      {"fragment_word_pairs", fragment_word_pairs,
       {{kU8, 64 * 256}, {kU8, 64 * 16, 118, 130}, {kI32, 16 * 256, 0, 0}, {kF32, 16 * 64}}, {}, 1,
       "mxfp4_word_pairs in registers"},
      {"fragment_a_staged_b", fragment_a_staged_b, {{kBf16, 2048}, {kBf16, 2048}, {kF32, 1024}}, {}, 1,
       "A's fragments from its registers (K in runs of 16 a lane)"},
      {"sorts", sorts, {{kF32, 1856}, {kI32, 2016, 0, 50}, {kF32, 784}, {kI32, 2800}, {kI32, 2016}}, {}, 1,
       "8 elements a thread in registers"},
      {"shapes_and_bits", [] { return sample("shapes_and_bits"); },
       {{kU32, 64}, {kF32, 256}, {kMxfp4, 32}, {kU8, 2}, {kBf16, 64}}, {}, 1},
      {"dot_fma", [] { return matmul(4); }, {{kBf16, 4 * 64}, {kBf16, 64 * 64}, {kF32, 4 * 64}}, {}, 1},
      {"dot_mfma16", [] { return matmul(16); }, {{kBf16, 16 * 64}, {kBf16, 64 * 64}, {kF32, 16 * 64}}, {}, 1},
      {"dot_mfma32", [] { return matmul(64); }, {{kBf16, 64 * 64}, {kBf16, 64 * 64}, {kF32, 64 * 64}}, {}, 1},
      {"kda_verify", [] { return dsl::testing::kda_verify(2, 4, 32); },
       {{kBf16, 1024}, {kBf16, 1024}, {kBf16, 1024}, {kBf16, 1024}, {kBf16, 8}, {kF32, 2}, {kF32, 256},
        {kF32, 3 * 32768}, {kI32, 4, 0, 3}, {kI32, 1, 1, 5}, {kBf16, 1024}},
       {32768}, 8},
      {"reduce_rows_f32", [] { return reduce_rows(kF32); },
       {{kF32, 64 * 128}, {kF32, 64}, {kF32, 64}, {kF32, 64}, {kF32, 64}, {kI32, 128}}, {}, 1, "keep half"},
      {"reduce_rows_bf16", [] { return reduce_rows(kBf16); },
       {{kBf16, 64 * 128}, {kBf16, 64}, {kBf16, 64}, {kBf16, 64}, {kBf16, 64}, {kI32, 128}}, {}, 1, "keep half"},
      {"reduce_rows_i32", [] { return reduce_rows(kI32); },
       {{kI32, 64 * 128, -1000, 1000}, {kI32, 64}, {kI32, 64}, {kI32, 64}, {kI32, 64}, {kI32, 128}}, {}, 1,
       "keep half"},
      {"reduce_rows_u8", [] { return reduce_rows(kU8); },
       {{kU8, 64 * 128}, {kI32, 64}, {kU8, 64}, {kU8, 64}, {kU8, 64}, {kI32, 128}}, {}, 1, "keep half"},
      {"grouped_scales", grouped_scales, {{kU8, 16 * 128}, {kU8, 16 * 8}, {kI32, 16 * 128}}, {11}, 1,
       "const int i = g * 16;"},
      {"persistent", [] { return sample("persistent"); },
       {{kI32, 1, 0, 1}, {kI32, 6, 0, 1}, {kF32, 6 * 64}, {kU32, 1, 0, 1}}, {1, 6}, 3},
  };
}

class Emulation : public ::testing::TestWithParam<Case> {};

TEST_P(Emulation, GeneratedKernelMatchesTheInterpreter) { run_case(GetParam()); }

INSTANTIATE_TEST_SUITE_P(Gfx90a, Emulation, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace monotile::dsl::lower
