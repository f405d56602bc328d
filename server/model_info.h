// GetInfo's description of the loaded models (v1::ModelInfo), from what the
// loaded devices say the model directory holds (engine/runtime/devices.h
// LoadedDevices::models).
#ifndef DIARIZATION_SERVER_MODEL_INFO_H_
#define DIARIZATION_SERVER_MODEL_INFO_H_

#include <vector>

#include "diarization/v1/diarization.pb.h"
#include "engine/runtime/loaded_model.h"

namespace diarization::server {

// One ModelInfo per loaded model, in their order (segmentation, embedding,
// PLDA).
std::vector<v1::ModelInfo> DescribeModels(
    const std::vector<runtime::LoadedModel>& models);

}  // namespace diarization::server

#endif  // DIARIZATION_SERVER_MODEL_INFO_H_
