// Test-only helpers: read golden WAV files (libsndfile) as float32 in
// [-1, 1], the way pyannote/torchaudio load them (int16 / 32768).
#ifndef DIARIZATION_ENGINE_MODELS_TESTING_WAV_H_
#define DIARIZATION_ENGINE_MODELS_TESTING_WAV_H_

#include <string>
#include <vector>

namespace diarization::models::testing {

// `relative` is inside diarization::testing::TestDataDir(). Mono files only.
// Aborts with a message when the file is missing or unreadable: tests must
// fail without their data.
std::vector<float> ReadWavOrDie(const std::string& relative);

}  // namespace diarization::models::testing

#endif  // DIARIZATION_ENGINE_MODELS_TESTING_WAV_H_
