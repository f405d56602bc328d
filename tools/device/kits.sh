# The kit list of the GPU harness: per kit, the Bazel targets, the golden
# data and the extras a GPU round needs. Sourced by tools/device/pack.sh
# (which builds, stages and archives the kits asked for into the one
# payload, .device/payload.tar.xz) and bench/gpu/round.sh (which says which
# kit a part needs when its binary is missing).
#
# Kits:
#   tests    the GPU tests (gtest binaries run by bench/gpu/parts/tests.sh)
#   bench    rtfx_main and the layer1 kernel's bench (parts rtfx, fixtures,
#            ratio)
#   server   the server, clients and tools of the service parts (streams,
#            live, soak, attack, multi_gpu)
#   qualify  the qualification harness and its tests (part qualify)
#   ratio    pyannote.audio's wheels (.whl, tools/device/fetch_wheels.sh)
#            for the ratio part, beside the bench kit
#   cpu      the CPU versions of the service binaries: the harness rehearsed
#            here, with the CPU backend (DEVICE=cpu bench/gpu/round.sh ...)
# Extras: plda (the real PLDA), real (the real segmentation-3.0 weights,
# REAL_MODELS_DIR), service_audio (sample.wav, four_speaker.wav), wheels
# (.whl from tools/device/fetch_wheels.sh: pyannote for the ratio part).
KITS_ALL="tests bench server qualify"

# The fixture recordings (the CPU backend's RTTMs are the references of the
# fixtures part).
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

declare -A KIT_TARGETS KIT_DATA KIT_EXTRAS
KIT_TARGETS[tests]="//engine/models/cuda:device_arena_test
  //engine/models/cuda:device_arena_cuda_test //kernels:kernels_test
  //kernels:window_gather_test
  //kernels:conv1d_pool_test //kernels:conv3x3_c32_test
  //engine/models/cuda:cuda_models_test
  //engine/models/cuda:cuda_reference_test
  //engine/models/cuda/linkage:cuda_linkage_test"
KIT_DATA[tests]="${FIXTURE_FILES[*]} pyannote-audio/tests-data/dev00.wav"
KIT_EXTRAS[tests]="plda real"

KIT_TARGETS[bench]="//bench/gpu:rtfx_main //bench/gpu:conv3x3_c32_bench
  //tools/make_random_models:make_random_models"
KIT_DATA[bench]="${FIXTURE_FILES[*]} pyannote-audio/tests-data/dev00.wav"
KIT_EXTRAS[bench]="plda real"

KIT_TARGETS[server]="//server:diarization_server_cuda //clients:diarize_client
  //tools/make_random_models:make_random_models //bench/soak:soak_client
  //tests:attack_test //bench/service_overhead:engine_direct_cuda"
KIT_DATA[server]=""
KIT_EXTRAS[server]="plda real service_audio"

KIT_TARGETS[qualify]="//kernels:lstm_cluster_test //kernels:kernels_test
  //bench/qualify:qualify_main //bench/service_overhead:engine_direct_cuda
  //server:diarization_server_cuda //clients:diarize_client
  //tools/make_random_models:make_random_models"
KIT_DATA[qualify]=""
KIT_EXTRAS[qualify]="plda real service_audio"

KIT_TARGETS[ratio]=""
KIT_DATA[ratio]=""
KIT_EXTRAS[ratio]="wheels"

KIT_TARGETS[cpu]="//server:diarization_server //clients:diarize_client
  //tools/make_random_models:make_random_models //bench/soak:soak_client
  //tests:attack_test //bench/service_overhead:engine_direct //tools/diarize:diarize"
KIT_DATA[cpu]="${FIXTURE_FILES[*]}"
KIT_EXTRAS[cpu]="plda service_audio"

# The kit each part of bench/gpu/round.sh reads its binaries from.
declare -A PART_KIT=([tests]=tests [fixtures]=bench [rtfx]=bench
  [ratio]=bench [qualify]=qualify [streams]=server [live]=server
  [soak]=server [attack]=server [multi_gpu]=server)
