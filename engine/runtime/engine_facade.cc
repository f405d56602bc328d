// The handles the caller holds: JobHandle (Job) and EngineFacade (Engine)
// over the EngineImpl (engine_impl.h), and Engine::Create.
#include <atomic>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/common/status_macros.h"
#include "engine/runtime/engine.h"
#include "engine/runtime/engine_impl.h"

namespace diarization::runtime {

absl::StatusOr<std::unique_ptr<Job>> Engine::Submit(
    const JobOptions& options, std::vector<float>&& samples,
    JobCallbacks callbacks) {
  ASSIGN_OR_RETURN(
      Reservation r,
      Reserve(AdmissionRequest{
          .audio_s = static_cast<double>(samples.size()) / kSampleRateHz,
          .peer = options.peer,
          .principal = options.principal,
          .principal_backlog_share = options.principal_backlog_share}));
  return Submit(options, std::move(samples), std::move(callbacks),
                std::move(r));
}

absl::StatusOr<std::unique_ptr<Job>> Engine::StartJob(const JobOptions& options,
                                                      JobCallbacks callbacks) {
  ASSIGN_OR_RETURN(Reservation r, Reserve(AdmissionRequest{
                                      .audio_s = 0.0,
                                      .peer = options.peer,
                                      .principal = options.principal,
                                      .principal_backlog_share =
                                          options.principal_backlog_share}));
  return StartJob(options, std::move(callbacks), std::move(r));
}

namespace internal {
namespace {

class JobHandle : public Job {
 public:
  JobHandle(std::shared_ptr<EngineImpl> engine, std::shared_ptr<JobState> job,
            bool finished)
      : engine_(std::move(engine)),
        job_(std::move(job)),
        device_(engine_->DeviceName(job_->device())),
        finished_(finished) {}

  ~JobHandle() override {
    if (!finished_.load()) engine_->Cancel(job_);
  }

  using Job::Append;
  using Job::AppendOwned;

  absl::Status Append(std::span<const float> samples,
                      const CropEdges& crop_edges) override {
    return engine_->Append(job_, samples, crop_edges);
  }

  absl::Status AppendOwned(std::vector<float>&& samples,
                           const CropEdges& crop_edges) override {
    return engine_->Append(job_, samples, crop_edges, &samples);
  }

  absl::Status Finish() override {
    absl::Status s = engine_->Finish(job_);
    // Whatever Finish returned, the job no longer needs this handle: it
    // either runs to completion or has completed.
    finished_.store(true);
    return s;
  }

  void Cancel() override { engine_->Cancel(job_); }

  const std::string& device() const override { return device_; }

  double audio_received_s() const override {
    return job_->AudioReceivedSeconds();
  }

  double backlog_audio_s() const override { return job_->BacklogSeconds(); }

  void NotifyWhenBacklogAtMost(double seconds,
                               std::function<void()> resume) override {
    engine_->NotifyWhenBacklogAtMost(job_, seconds, std::move(resume));
  }

  int64_t memory_bytes() const override { return job_->MemoryBytes(); }

 private:
  std::shared_ptr<EngineImpl> engine_;
  std::shared_ptr<JobState> job_;
  const std::string device_;
  std::atomic<bool> finished_;
};

class EngineFacade : public Engine {
 public:
  explicit EngineFacade(std::shared_ptr<EngineImpl> impl)
      : impl_(std::move(impl)) {}
  ~EngineFacade() override { impl_->Drain(absl::Now()).IgnoreError(); }

  using Engine::StartJob;
  using Engine::Submit;

  absl::StatusOr<Reservation> Reserve(
      const AdmissionRequest& request) override {
    return impl_->Reserve(request);
  }
  absl::StatusOr<std::unique_ptr<Job>> Submit(
      const JobOptions& options, std::vector<float>&& samples,
      CropEdges&& crop_edges, JobCallbacks callbacks,
      Reservation reservation) override {
    ASSIGN_OR_RETURN(
        std::shared_ptr<JobState> job,
        impl_->Submit(options, samples, crop_edges, std::move(callbacks),
                      std::move(reservation)));
    return std::unique_ptr<Job>(
        new JobHandle(impl_, std::move(job), /*finished=*/true));
  }
  absl::StatusOr<std::unique_ptr<Job>> StartJob(
      const JobOptions& options, JobCallbacks callbacks,
      Reservation reservation) override {
    ASSIGN_OR_RETURN(
        std::shared_ptr<JobState> job,
        impl_->StartJob(options, std::move(callbacks), std::move(reservation)));
    return std::unique_ptr<Job>(
        new JobHandle(impl_, std::move(job), /*finished=*/false));
  }
  absl::Status Drain(absl::Time deadline) override {
    return impl_->Drain(deadline);
  }
  EngineState state() const override { return impl_->state(); }
  std::vector<DeviceStatus> Devices() const override {
    return impl_->Devices();
  }
  double backlog_audio_s() const override { return impl_->backlog_audio_s(); }
  int active_jobs() const override { return impl_->active_jobs(); }
  int64_t job_memory_bytes() const override {
    return impl_->job_memory_bytes();
  }
  double drain_rate() const override { return impl_->drain_rate(); }
  const EngineOptions& options() const override { return impl_->options(); }
  Metrics& metrics() override { return impl_->metrics(); }

 private:
  std::shared_ptr<EngineImpl> impl_;
};

}  // namespace
}  // namespace internal

absl::StatusOr<std::unique_ptr<Engine>> Engine::Create(
    EngineOptions options, std::vector<Device> devices,
    std::shared_ptr<const pipeline::PldaModel> plda,
    std::shared_ptr<Metrics> metrics) {
  if (devices.empty()) {
    return absl::InvalidArgumentError("Engine::Create: no devices");
  }
  for (size_t i = 0; i < devices.size(); ++i) {
    const Device& d = devices[i];
    if (d.name.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("Engine::Create: device ", i, " has no name"));
    }
    if (d.segmentation == nullptr || d.embedding == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("Engine::Create: device ", d.name,
                       " lacks a segmentation or an "
                       "embedding model"));
    }
    for (size_t j = 0; j < i; ++j) {
      if (devices[j].name == d.name) {
        return absl::InvalidArgumentError(
            absl::StrCat("Engine::Create: two devices are named ", d.name));
      }
    }
  }
  RETURN_IF_ERROR(ValidateEngineOptions(options, plda != nullptr));
  if (metrics == nullptr) {
    ASSIGN_OR_RETURN(metrics,
                     Metrics::Create(std::make_shared<prometheus::Registry>(),
                                     BuildInfo{"unknown", "unknown"}));
  }
  auto impl = std::make_shared<internal::EngineImpl>(
      std::move(options), std::move(plda), std::move(metrics));
  absl::Status s = impl->Init(std::move(devices));
  if (!s.ok()) {
    impl->Drain(absl::Now()).IgnoreError();
    return s;
  }
  return std::unique_ptr<Engine>(new internal::EngineFacade(std::move(impl)));
}

}  // namespace diarization::runtime
