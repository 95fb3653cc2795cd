// Launching: checks the grid and the arguments against the program's parameters, finds the
// allocation each pointer argument points into, then runs every instance in sequence (one reused
// frame) or on its own thread; the first real error wins and cancels the other instances' loops
// and waits.
#include "dsl/interp/interpreter.h"

#include <cstring>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "dsl/interp/frame.h"
#include "dsl/interp/memory_access.h"
#include "dsl/interp/ops.h"
#include "support/strings.h"

namespace monotile::dsl::interp {
namespace {

bool contains_wait(const Block& block) {
  for (const Op& op : block.ops) {
    if (op.code == OpCode::kWaitUntil) return true;
    for (const Block& region : op.regions) {
      if (contains_wait(region)) return true;
    }
  }
  return false;
}

std::string element_str(const ElementType& type) { return Type{type, {}}.str(); }

std::string signature(const Program& program) {
  std::vector<std::string> params;
  for (const Param& param : program.params) params.push_back(param.name + ": " + element_str(param.type));
  return absl::StrJoin(params, ", ");
}

absl::Status check_launch(const Program& program, const LaunchGrid& grid, std::span<const ArgValue> args) {
  if (grid.x < 1 || grid.y < 1 || grid.z < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "kernel \"%s\": grid (%d, %d, %d) has an empty dimension; expected every count >= 1", program.name, grid.x,
        grid.y, grid.z));
  }
  if (args.size() != program.params.size()) {
    return absl::InvalidArgumentError(absl::StrFormat("kernel \"%s\" takes %d arguments (%s), got %d", program.name,
                                                      program.params.size(), signature(program), args.size()));
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& param = program.params[i];
    const ElementType& given = args[i].type();
    if (!(given == param.type)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("argument %d \"%s\" of kernel \"%s\": expected %s, got %s; hint: pass %s", i, param.name,
                          program.name, element_str(param.type), element_str(given),
                          param.type.pointer ? absl::StrFormat("ArgValue::pointer(address, ScalarType::k...) for ptr<%s>",
                                                               to_absl(scalar_type_name(param.type.scalar)))
                                             : absl::StrFormat("a value of type %s",
                                                               to_absl(scalar_type_name(param.type.scalar)))));
    }
    if (!given.pointer && is_integer(given.scalar) &&
        wrap_integer(given.scalar, static_cast<uint64_t>(args[i].int_value())) != args[i].int_value()) {
      return absl::InvalidArgumentError(absl::StrFormat("argument %d \"%s\" of kernel \"%s\": value %d does not fit %s",
                                                        i, param.name, program.name, args[i].int_value(),
                                                        to_absl(scalar_type_name(given.scalar))));
    }
    if (!given.pointer && param.multiple_of > 1 && args[i].int_value() % param.multiple_of != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "argument %d \"%s\" of kernel \"%s\": value %d is not a multiple of %d, which the kernel declares; "
          "hint: pass a multiple of %d (pad the buffer) or build the kernel without the promise",
          i, param.name, program.name, args[i].int_value(), param.multiple_of, param.multiple_of));
    }
  }
  return absl::OkStatus();
}

// The allocation each pointer argument points into, once per launch: the provenance of every
// address derived from argument i is i, and its accesses are checked against this buffer.
std::vector<const Buffer*> find_argument_buffers(std::span<const ArgValue> args,
                                                 const MemoryMap& memory) {
  std::vector<const Buffer*> buffers(args.size(), nullptr);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!args[i].type().pointer) continue;
    buffers[i] = memory.buffer_of(static_cast<uint64_t>(args[i].int_value()));
  }
  return buffers;
}

void bind_arguments(Frame& frame, std::span<const ArgValue> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const Param& param = frame.program->params[i];
    Tile& tile = frame.value(param.value);
    tile.reset(frame.type(param.value));
    if (stored_as_float(param.type)) tile.floats.assign(tile.floats.size(), round_float(param.type.scalar, args[i].float_value()));
    else tile.ints.assign(tile.ints.size(), args[i].int_value());
    if (param.type.pointer && frame.argument_buffers[i] != nullptr) {
      tile.provenance.set_uniform(static_cast<int32_t>(i));
    }
  }
}

// Collects the first error of a launch; cancellations caused by it are not errors of their own.
class ErrorSink {
 public:
  explicit ErrorSink(SharedState& shared) : shared_(shared) {}
  void report(absl::Status status) {
    if (status.ok()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    if (first_.ok() || (absl::IsCancelled(first_) && !absl::IsCancelled(status))) first_ = std::move(status);
    shared_.cancelled.store(true, std::memory_order_relaxed);
  }
  absl::Status result() {
    std::lock_guard<std::mutex> lock(mutex_);
    return first_;
  }

 private:
  SharedState& shared_;
  std::mutex mutex_;
  absl::Status first_;
};

absl::Status run_instance(Frame& frame, const LaunchGrid& grid, int64_t linear, std::span<const ArgValue> args) {
  frame.program_id = {static_cast<int>(linear % grid.x), static_cast<int>(linear / grid.x % grid.y),
                      static_cast<int>(linear / (int64_t{grid.x} * grid.y))};
  frame.num_programs = {grid.x, grid.y, grid.z};
  bind_arguments(frame, args);
  return run_block(frame, frame.program->body, nullptr);
}

absl::Status run_threads(std::span<const Launch> launches, SharedState& shared) {
  ErrorSink errors(shared);
  std::vector<std::vector<const Buffer*>> buffers;
  for (const Launch& launch : launches) {
    buffers.push_back(find_argument_buffers(launch.args, *shared.memory));
  }
  std::vector<std::thread> threads;
  for (size_t l = 0; l < launches.size(); ++l) {
    const Launch& launch = launches[l];
    for (int64_t linear = 0; linear < launch.grid.size(); ++linear) {
      threads.emplace_back([&shared, &errors, &launch, &argument_buffers = buffers[l], linear] {
        Frame frame;
        frame.program = launch.program;
        frame.shared = &shared;
        frame.argument_buffers = argument_buffers;
        frame.values.resize(launch.program->value_types.size());
        errors.report(run_instance(frame, launch.grid, linear, launch.args));
      });
    }
  }
  for (std::thread& thread : threads) thread.join();
  return errors.result();
}

}  // namespace

std::vector<size_t> parameter_sizes(const Program& program) {
  std::vector<size_t> sizes;
  for (const Param& param : program.params) {
    sizes.push_back(param.type.pointer ? sizeof(uint64_t) : static_cast<size_t>(scalar_type_bytes(param.type.scalar)));
  }
  return sizes;
}

std::vector<ArgValue> arguments_from_raw(const Program& program, const void* const* raw) {
  std::vector<ArgValue> args;
  for (size_t i = 0; i < program.params.size(); ++i) {
    const ElementType type = program.params[i].type;
    if (type.pointer) {
      uint64_t address = 0;
      std::memcpy(&address, raw[i], sizeof(address));
      args.push_back(ArgValue::pointer(reinterpret_cast<const void*>(static_cast<uintptr_t>(address)), type.scalar));
      continue;
    }
    dispatch_scalar(type.scalar, [&](auto tag) {
      using C = Codec<decltype(tag)::value>;
      typename C::Raw bits;
      std::memcpy(&bits, raw[i], sizeof(bits));
      if constexpr (std::is_same_v<typename C::Value, double>) args.push_back(ArgValue::floating(type.scalar, C::decode(bits)));
      else args.push_back(ArgValue::integer(type.scalar, C::decode(bits)));
    });
  }
  return args;
}

absl::Status interpret(const Program& program, const LaunchGrid& grid, std::span<const ArgValue> args,
                       const InterpretOptions& options) {
  const bool threads = options.schedule == Schedule::kThreads ||
                       (options.schedule == Schedule::kAuto && contains_wait(program.body));
  if (threads) {
    Launch launch{&program, grid, std::vector<ArgValue>(args.begin(), args.end())};
    return interpret_concurrently({&launch, 1}, options);
  }
  if (absl::Status status = check_launch(program, grid, args); !status.ok()) return status;
  const MemoryMap memory(options.allocations);
  SharedState shared;
  shared.memory = &memory;
  shared.options = &options;
  const std::vector<const Buffer*> argument_buffers = find_argument_buffers(args, memory);
  Frame frame;
  frame.program = &program;
  frame.shared = &shared;
  frame.argument_buffers = argument_buffers;
  frame.values.resize(program.value_types.size());
  for (int64_t linear = 0; linear < grid.size(); ++linear) {
    if (absl::Status status = run_instance(frame, grid, linear, args); !status.ok()) return status;
  }
  return absl::OkStatus();
}

absl::Status interpret_concurrently(std::span<const Launch> launches, const InterpretOptions& options) {
  int64_t total = 0;
  for (const Launch& launch : launches) {
    if (launch.program == nullptr) return absl::InvalidArgumentError("a launch has no program");
    if (absl::Status status = check_launch(*launch.program, launch.grid, launch.args); !status.ok()) return status;
    total += launch.grid.size();
  }
  if (total > options.max_threads) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%d program instances would run on as many threads, more than InterpretOptions::max_threads (%d); hint: "
        "use a smaller grid (a persistent kernel needs only as many instances as run at once) or raise the limit",
        total, options.max_threads));
  }
  const MemoryMap memory(options.allocations);
  SharedState shared;
  shared.memory = &memory;
  shared.options = &options;
  shared.concurrent = true;
  return run_threads(launches, shared);
}

}  // namespace monotile::dsl::interp
