// Times the host pipeline (everything after the networks: count, filter,
// AHC, PLDA, VBx, assignment, reconstruction, segments) on synthetic long
// inputs, single-threaded.
//
//   bazel run -c opt //bench/pipeline:pipeline_bench -- [--hours 1]
//       [--repeats 5] [--fixture DIR] [--exact-max-n N]
//
// Input synthesis: pyannote's recorded segmentations and embeddings of a
// fixture (default findit 01_dialogue, 218 windows, 2 speakers) are tiled to
// the requested length (3600 windows per hour at the 1 s step). Each tile is a
// new "meeting segment": its embeddings get independent Gaussian noise
// (σ = 0.15 × the row's RMS), and every third tile swaps local speaker
// columns, so AHC and VBx see realistic, non-duplicated points.
#include <sys/resource.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "engine/common/openblas_kernels.h"
#include "engine/io/fixture.h"
#include "engine/io/plda_files.h"
#include "engine/pipeline/ahc_blockwise.h"
#include "engine/pipeline/diarization.h"

namespace {

namespace dp = diarization::pipeline;
using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// CPU time of this process: on a shared, loaded machine wall time also
// counts other processes' time slices.
double CpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

long PeakRssMb() {
  rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss / 1024;
}

}  // namespace

int main(int argc, char** argv) {
  // First: it may execute the binary again (engine/common/openblas_kernels.h).
  std::printf("%s\n", diarization::ReexecWithOpenBlasKernels(argv).c_str());
  double hours = 1.0;
  int repeats = 5;
  int exact_max_n = dp::AhcOptions().exact_max_n;
  std::string fixture;
  std::vector<int> compare_blocks;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string key = argv[i], value = argv[i + 1];
    if (key == "--hours") {
      absl::SimpleAtod(value, &hours);
    } else if (key == "--repeats") {
      absl::SimpleAtoi(value, &repeats);
    } else if (key == "--fixture") {
      fixture = value;
    } else if (key == "--compare-blockwise") {
      int b = 0;
      absl::SimpleAtoi(value, &b);
      compare_blocks.push_back(b);
    } else if (key == "--exact-max-n") {
      absl::SimpleAtoi(value, &exact_max_n);
    } else {
      std::cerr << "unknown flag " << key << "\n";
      return 1;
    }
  }
  if (fixture.empty()) {
    std::string root = ".";
    if (const char* ws = std::getenv("BUILD_WORKSPACE_DIRECTORY")) root = ws;
    fixture = root + "/../shared/data/findit-dia-parity/01_dialogue";
  }
  auto base = diarization::io::LoadFinditFixture(fixture);
  if (!base.ok()) {
    std::cerr << base.status() << "\n";
    return 1;
  }
  std::string models = fixture + "/../../../models";
  if (const char* m = std::getenv("DIARIZATION_MODELS_DIR")) models = m;
  auto plda = diarization::io::LoadPlda(models + "/community-1-plda");
  if (!plda.ok()) {
    std::cerr << plda.status() << "\n";
    return 1;
  }

  constexpr int F = diarization::kFramesPerWindow,
                S = diarization::kLocalSpeakers, D = diarization::kEmbeddingDim;
  const int windows = static_cast<int>(std::lround(hours * 3600));
  std::vector<float> seg(static_cast<size_t>(windows) * F * S);
  std::vector<float> emb(static_cast<size_t>(windows) * S * D);
  std::mt19937_64 rng(7);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  for (int c = 0; c < windows; ++c) {
    const int src = c % base->num_windows;
    const int tile = c / base->num_windows;
    const bool swap = tile % 3 == 2;
    for (int s = 0; s < S; ++s) {
      const int from = swap ? (s + 1) % S : s;
      for (int f = 0; f < F; ++f) {
        seg[(static_cast<size_t>(c) * F + f) * S + s] =
            base->segmentations[(static_cast<size_t>(src) * F + f) * S + from];
      }
      const float* e =
          base->embeddings.data() + (static_cast<size_t>(src) * S + from) * D;
      double sq = 0.0;
      for (int t = 0; t < D; ++t) sq += e[t] * e[t];
      const float sigma =
          tile == 0 ? 0.0f : 0.15f * static_cast<float>(std::sqrt(sq / D));
      float* out = emb.data() + (static_cast<size_t>(c) * S + s) * D;
      for (int t = 0; t < D; ++t) out[t] = e[t] + sigma * noise(rng);
    }
  }

  dp::AhcOptions ahc;
  ahc.exact_max_n = exact_max_n;
  std::vector<double> times, cpu_times;
  dp::DiarizationDetails last;
  for (int r = 0; r < repeats; ++r) {
    const double c0 = CpuSeconds();
    const auto t0 = Clock::now();
    auto run = dp::DiarizeDetailed(seg, emb, windows, *plda,
                                   dp::PipelineConfig::Accurate(),
                                   dp::SpeakerHints{}, "bench", ahc);
    const auto t1 = Clock::now();
    if (!run.ok()) {
      std::cerr << run.status() << "\n";
      return 1;
    }
    times.push_back(Seconds(t0, t1));
    cpu_times.push_back(CpuSeconds() - c0);
    if (r == repeats - 1) last = *std::move(run);
  }
  std::sort(times.begin(), times.end());
  std::sort(cpu_times.begin(), cpu_times.end());
  const auto& cl = last.clustering;
  const int n = cl.train.size();
  int s_ahc = 0;
  for (int l : cl.ahc_labels) s_ahc = std::max(s_ahc, l + 1);

  // Stage breakdown on the same inputs (one run each).
  std::vector<float> train(static_cast<size_t>(n) * D);
  for (int i = 0; i < n; ++i) {
    std::copy_n(emb.data() + (static_cast<size_t>(cl.train.window_idx[i]) * S +
                              cl.train.speaker_idx[i]) *
                                 D,
                D, train.data() + static_cast<size_t>(i) * D);
  }
  if (n <= ahc.exact_max_n) {
    const auto a0 = Clock::now();
    const auto normed = dp::NormalizeRowsF32(train, n, D);
    auto condensed = dp::PdistEuclidean(normed, n, D);
    const auto a1 = Clock::now();
    const auto z = dp::CentroidLinkage(condensed, n);
    const auto a2 = Clock::now();
    const auto flat = dp::FclusterDistance(z, n, ahc.threshold);
    const auto a3 = Clock::now();
    std::cout << "ahc_detail_s pdist=" << Seconds(a0, a1)
              << " linkage=" << Seconds(a1, a2)
              << " fcluster=" << Seconds(a2, a3) << "\n";
    // Does the blockwise variant find the same partition on this input?
    for (int block : compare_blocks) {
      const auto b0 = Clock::now();
      const auto blockwise =
          dp::BlockwiseCentroidFcluster(normed, n, D, ahc.threshold, block);
      const auto b1 = Clock::now();
      std::map<int, int> fwd, bwd;
      bool same = true;
      for (int i = 0; i < n && same; ++i) {
        auto [f, fnew] = fwd.emplace(flat[i], blockwise[i]);
        auto [b, bnew] = bwd.emplace(blockwise[i], flat[i]);
        same = f->second == blockwise[i] && b->second == flat[i];
      }
      std::cout << "blockwise block=" << block << " s=" << Seconds(b0, b1)
                << " same_partition_as_exact=" << (same ? "yes" : "no") << "\n";
    }
  }
  const double t0 = CpuSeconds();
  const auto labels = dp::AhcCluster(train, n, D, ahc);
  const double t1 = CpuSeconds();
  const auto xvec = dp::XvecTransform(*plda, train, n);
  const auto fea = dp::PldaTransform(*plda, xvec, n);
  const double t2 = CpuSeconds();
  dp::VbxOptions vo;
  const auto vbx = dp::ClusterVbx(labels, fea, plda->lda_dim, plda->phi, vo);
  const double t3 = CpuSeconds();

  std::cout << "hours=" << hours << " windows=" << windows
            << " embeddings=" << windows * S << " train=" << n
            << " ahc_clusters=" << s_ahc
            << " ahc_path=" << (n <= ahc.exact_max_n ? "exact" : "blockwise")
            << " vbx_iters=" << cl.vbx.elbo.size()
            << " speakers=" << cl.num_clusters
            << " segments=" << last.output.segments.size() << "\n";
  std::cout << "total_s min=" << times.front()
            << " median=" << times[times.size() / 2] << " max=" << times.back()
            << " (repeats=" << repeats << ")\n";
  std::cout << "cpu_s min=" << cpu_times.front()
            << " median=" << cpu_times[cpu_times.size() / 2]
            << " max=" << cpu_times.back() << "\n";
  std::cout << "breakdown_cpu_s ahc=" << t1 - t0 << " plda=" << t2 - t1
            << " vbx=" << t3 - t2 << "\n";
  // The production path's own step times, last timed run (wall).
  const dp::ClusteringTimes& ct = last.clustering.times;
  std::cout << "steps_s count=" << last.count_s << " filter=" << ct.filter_s
            << " ahc=" << ct.ahc_s << " plda=" << ct.plda_s
            << " vbx=" << ct.vbx_s << " assignment=" << ct.assignment_s
            << " reconstruction=" << last.reconstruction_s << "\n";
  std::cout << "peak_rss_mb=" << PeakRssMb() << "\n";
  return 0;
}
