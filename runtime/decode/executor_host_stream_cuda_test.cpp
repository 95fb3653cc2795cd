// The host's stream and graph on an NVIDIA GPU (host_stream_test_support.h), driven as torch drives
// them: the host makes its own stream with cuStreamCreate, hands it to the executor through
// Device::wrap_stream, and captures the step itself with cuStreamBeginCapture in global mode
// (torch's default, under which any unsafe call from any thread during the capture fails it), then
// cuStreamEndCapture, cuGraphInstantiateWithFlags and cuGraphLaunch. Skips without a CUDA device.
#include "absl/strings/str_join.h"
#include "runtime/decode/host_stream_test_support.h"
#include "runtime/discovery.h"
#include "runtime/driver_cuda.h"
#include "support/status_macros.h"

namespace monotile::runtime::decode {
namespace {

namespace cu = cuda_api;
// cuda.h's CU_STREAM_CAPTURE_MODE_GLOBAL, the mode torch.cuda.graph captures in by default.
constexpr cu::CUstreamCaptureMode kCaptureGlobal = 0;

class CudaHostCapture final : public HostCapture {
 public:
  // The primary context of the device's ordinal current on this thread (the one the Device works
  // in), then the host's own non-blocking stream in it.
  static absl::StatusOr<std::unique_ptr<CudaHostCapture>> create(Device& device) {
    MT_ASSIGN_OR_RETURN(std::shared_ptr<const CudaDriver> driver, load_cuda_driver());
    std::unique_ptr<CudaHostCapture> host(new CudaHostCapture(std::move(driver)));
    const CudaDriver& d = *host->driver_;
    MT_RETURN_IF_ERROR(d.check(d.cuInit(0), "cuInit"));
    MT_RETURN_IF_ERROR(
        d.check(d.cuDeviceGet(&host->cu_device_, device.info().ordinal), "cuDeviceGet"));
    MT_RETURN_IF_ERROR(d.check(d.cuDevicePrimaryCtxRetain(&host->context_, host->cu_device_),
                               "cuDevicePrimaryCtxRetain"));
    host->retained_ = true;
    MT_RETURN_IF_ERROR(d.check(d.cuCtxSetCurrent(host->context_), "cuCtxSetCurrent"));
    MT_RETURN_IF_ERROR(
        d.check(d.cuStreamCreate(&host->stream_, cu::CU_STREAM_NON_BLOCKING), "cuStreamCreate"));
    MT_ASSIGN_OR_RETURN(host->wrapped_,
                        device.wrap_stream(reinterpret_cast<uint64_t>(host->stream_)));
    return host;
  }

  ~CudaHostCapture() override {
    const CudaDriver& d = *driver_;
    wrapped_.reset();
    if (exec_ != nullptr) d.cuGraphExecDestroy(exec_);
    if (stream_ != nullptr) d.cuStreamDestroy(stream_);
    if (retained_) d.cuDevicePrimaryCtxRelease(cu_device_);
  }

  Stream& stream() override { return wrapped_; }
  absl::Status begin() override {
    return driver_->check(driver_->cuStreamBeginCapture(stream_, kCaptureGlobal),
                          "cuStreamBeginCapture_v2");
  }
  absl::Status end() override {
    const CudaDriver& d = *driver_;
    cu::CUgraph graph = nullptr;
    MT_RETURN_IF_ERROR(d.check(d.cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture"));
    const absl::Status made =
        d.check(d.cuGraphInstantiateWithFlags(&exec_, graph, 0), "cuGraphInstantiateWithFlags");
    d.cuGraphDestroy(graph);
    return made;
  }
  absl::Status replay() override {
    return driver_->check(driver_->cuGraphLaunch(exec_, stream_), "cuGraphLaunch");
  }
  absl::Status synchronize() override {
    return driver_->check(driver_->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

 private:
  explicit CudaHostCapture(std::shared_ptr<const CudaDriver> driver) : driver_(std::move(driver)) {}
  std::shared_ptr<const CudaDriver> driver_;
  cu::CUdevice cu_device_ = 0;
  cu::CUcontext context_ = nullptr;
  bool retained_ = false;
  cu::CUstream stream_ = nullptr;
  cu::CUgraphExec exec_ = nullptr;
  Stream wrapped_;
};

class HostStreamCuda : public HostStreamFixture {
 protected:
  std::unique_ptr<Device> make_device() override {
    Discovery found = discover_devices();
    for (std::unique_ptr<Device>& device : found.devices) {
      if (device->info().vendor == dsl::Vendor::kNvidia) return std::move(device);
    }
    std::vector<std::string> reasons;
    for (const MissingBackend& missing : found.missing) reasons.push_back(missing.reason);
    skip_reason_ = "no NVIDIA GPU: " + absl::StrJoin(reasons, "; ");
    return nullptr;
  }
};

TEST_F(HostStreamCuda, TheHostsCapturedStepReplaysAsAnEagerRun) {
  absl::StatusOr<std::unique_ptr<CudaHostCapture>> host = CudaHostCapture::create(*device_);
  ASSERT_TRUE(host.ok()) << host.status();
  host_stream_graph(**host);
}

}  // namespace
}  // namespace monotile::runtime::decode
