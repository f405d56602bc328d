// Test inputs that decode to far more audio than their size suggests: FLAC
// streams of digital silence written frame by frame (CONSTANT subframes, the
// largest block size), so hours of 192 kHz × 8-channel audio fit in about a
// megabyte and are made in milliseconds. The decoder-bomb shape of issue 13:
// a 1.4 MB upload that decodes to 14000 s.
#ifndef DIARIZATION_TESTING_SILENT_FLAC_H_
#define DIARIZATION_TESTING_SILENT_FLAC_H_

#include <cstdint>
#include <string>

namespace diarization::testing {

struct SilentFlacOptions {
  int sample_rate_hz = 192000;
  int channel_count = 8;
  double seconds = 14000.0;
  // Write the total sample count into STREAMINFO; false leaves it 0
  // ("unknown"), as a streaming encoder does, so only decoding tells the
  // length.
  bool announce_length = true;
  // 16..65535 samples per frame.
  int block_size = 65535;
};

// A valid 16-bit FLAC file of silence.
std::string SilentFlac(const SilentFlacOptions& options);

}  // namespace diarization::testing

#endif  // DIARIZATION_TESTING_SILENT_FLAC_H_
