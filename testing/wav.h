// Test-only helpers: read golden WAV files (libsndfile) as float32 in
// [-1, 1], the way pyannote/torchaudio load them (int16 / 32768).
#ifndef DIARIZATION_TESTING_WAV_H_
#define DIARIZATION_TESTING_WAV_H_

#include <cstdint>
#include <string>
#include <vector>

namespace diarization::testing {

// `relative` is inside diarization::testing::TestDataDir(). Mono files only.
// Aborts with a message when the file is missing or unreadable: tests must
// fail without their data.
std::vector<float> ReadWavOrDie(const std::string& relative);

// The four 10 s windows pyannote's recorded references use
// (tools/reference/record.py's WINDOWS, in order).
struct RecordedWindow {
  const char* file;
  int64_t offset_samples;
};
inline constexpr RecordedWindow kRecordedWindows[] = {
    {"findit-dia-parity/02_pyannote_sample/clip_16k.wav", 0},
    {"findit-dia-parity/02_pyannote_sample/clip_16k.wav", 7 * 16000},
    {"speakrs-fixtures/test_3speakers.wav", 12 * 16000},
    {"pyannote-audio/tests-data/dev00.wav", 5 * 16000},
};
inline constexpr int kRecordedWindowCount = 4;
inline constexpr int kRecordedWindowSamples = 160000;

// kRecordedWindows' audio, concatenated (4 × 160000 samples). Aborts like
// ReadWavOrDie when a file is missing or too short.
std::vector<float> ReadRecordedWindowsOrDie();

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_WAV_H_
