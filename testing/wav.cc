#include "testing/wav.h"

#include <sndfile.h>

#include <cstdio>
#include <cstdlib>

#include "testing/test_data.h"

namespace diarization::testing {

std::vector<float> ReadWavOrDie(const std::string& relative) {
  const std::string path = diarization::testing::TestDataDir() + "/" + relative;
  SF_INFO info{};
  SNDFILE* f = sf_open(path.c_str(), SFM_READ, &info);
  if (f == nullptr) {
    std::fprintf(stderr, "cannot open test audio %s: %s\n", path.c_str(),
                 sf_strerror(nullptr));
    std::abort();
  }
  if (info.channels != 1 || info.samplerate != 16000) {
    std::fprintf(stderr, "test audio %s must be 16 kHz mono\n", path.c_str());
    std::abort();
  }
  std::vector<float> samples(info.frames);
  // SFC_SET_NORM_FLOAT (the default) scales int16 by 1/32768, as torchaudio.
  sf_count_t got = sf_readf_float(f, samples.data(), info.frames);
  sf_close(f);
  if (got != info.frames) {
    std::fprintf(stderr, "short read on %s\n", path.c_str());
    std::abort();
  }
  return samples;
}

std::vector<float> ReadRecordedWindowsOrDie() {
  std::vector<float> out;
  out.reserve(size_t{kRecordedWindowCount} * kRecordedWindowSamples);
  for (const RecordedWindow& w : kRecordedWindows) {
    const std::vector<float> audio = ReadWavOrDie(w.file);
    const size_t start = static_cast<size_t>(w.offset_samples);
    if (audio.size() < start + kRecordedWindowSamples) {
      std::fprintf(stderr, "test audio %s is shorter than its window\n",
                   w.file);
      std::abort();
    }
    out.insert(out.end(), audio.begin() + start,
               audio.begin() + start + kRecordedWindowSamples);
  }
  return out;
}

}  // namespace diarization::testing
