// monotile-jit-worker REQUEST RESULT: compiles one request in this short-lived process, so that a
// compiler that aborts or hangs takes only this process down. Writes RESULT (via a temporary name
// and rename, so a half-written result never exists); compile errors are results, not exit codes.
#include <sys/prctl.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "jit/backend.h"
#include "jit/wire.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "monotile-jit-worker: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  // Dies with the thread that started it, so an abandoned compile never lingers.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (argc != 3) return fail("usage: monotile-jit-worker REQUEST RESULT");
  std::ifstream in(argv[1], std::ios::binary);
  if (!in) return fail(std::string("cannot read ") + argv[1]);
  std::ostringstream bytes;
  bytes << in.rdbuf();
  absl::StatusOr<monotile::jit::CompileRequest> request = monotile::jit::decode_request(bytes.str());
  if (!request.ok()) return fail(std::string(request.status().message()));
  if (request->test_sleep_seconds > 0) {
    std::this_thread::sleep_for(std::chrono::duration<double>(request->test_sleep_seconds));
  }
  absl::StatusOr<monotile::jit::CompileResult> result = [&]() -> absl::StatusOr<monotile::jit::CompileResult> {
    auto compiler = monotile::jit::make_backend_compiler(request->target);
    if (!compiler.ok()) return compiler.status();
    return (*compiler)->compile(*request);
  }();
  std::string temporary = std::string(argv[2]) + ".partial";
  std::ofstream out(temporary, std::ios::binary);
  std::string encoded = monotile::jit::encode_result(result);
  out.write(encoded.data(), static_cast<std::streamsize>(encoded.size()));
  out.close();
  if (!out) return fail(std::string("cannot write ") + temporary);
  std::error_code error;
  std::filesystem::rename(temporary, argv[2], error);
  if (error) return fail(std::string("cannot rename ") + temporary + ": " + error.message());
  return 0;
}
