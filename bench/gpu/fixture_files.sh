# The fixture recordings of the RTTM byte-check, one list for the GPU side
# (fixture_rttms.sh) and the CPU side (cpu_fixture_rttms.sh): paths under
# DIARIZATION_TEST_DATA (../shared/data).
FIXTURE_FILES=(
  findit-dia-parity/02_pyannote_sample/clip_16k.wav
  findit-dia-parity/03_dual_speaker/clip_16k.wav
  findit-dia-parity/04_three_speaker/clip_16k.wav
  findit-dia-parity/05_four_speaker/clip_16k.wav
  speakrs-fixtures/test.wav
  speakrs-fixtures/test_3speakers.wav
  speakrs-fixtures/test_single_speaker.wav
  speakrs-fixtures/test_short.wav
)
