// GetInfo's description of the loaded models (v1::ModelInfo), from what the
// model directory holds (engine/runtime/devices.h LoadedDevices::models).
#ifndef DIARIZATION_SERVER_MODEL_INFO_H_
#define DIARIZATION_SERVER_MODEL_INFO_H_

#include <vector>

#include "diarization/v1/diarization.pb.h"
#include "engine/models/format/model_dir.h"

namespace diarization::server {

// Segmentation, embedding and PLDA, in that order.
std::vector<v1::ModelInfo> DescribeModels(
    const models::ModelDirectorySummary& summary);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_MODEL_INFO_H_
