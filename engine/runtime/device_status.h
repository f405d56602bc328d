// What the engine reports of each device (Engine::Devices, for GetInfo and
// health checks).
#ifndef DIARIZATION_ENGINE_RUNTIME_DEVICE_STATUS_H_
#define DIARIZATION_ENGINE_RUNTIME_DEVICE_STATUS_H_

#include <string>

#include "engine/runtime/device.h"

namespace diarization::runtime {

// For GetInfo and health checks.
struct DeviceStatus {
  std::string name;
  std::string description;
  // False after a network batch failed on this device (until one succeeds).
  bool healthy = true;
  std::string segmentation_precision;
  std::string embedding_precision;
  DeviceMemoryStats memory;
  // Jobs assigned and not yet completed.
  int active_jobs = 0;
  // Windows waiting in the two batch queues.
  int segmentation_queue_depth = 0;
  int embedding_queue_depth = 0;
  // Accepted audio seconds on this device not yet through both networks.
  double backlog_audio_s = 0.0;
  // Rolling RTFx (see diarization_device_rtfx in metrics.h).
  double rtfx = 0.0;
};

}  // namespace diarization::runtime

#endif  // DIARIZATION_ENGINE_RUNTIME_DEVICE_STATUS_H_
