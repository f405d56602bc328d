// The backend's custom kernels against independent float64 references on the
// CPU, on fresh random inputs (GPU only).
#include <cuda_runtime_api.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <tuple>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/lstm.h"
#include "kernels/nn_ops.h"
#include "kernels/sinc_conv.h"
#include "kernels/stats_pool.h"
#include "testing/cuda_test_buffers.h"
#include "testing/sinc_conv_reference.h"
#include "testing/stats_pool_reference.h"

namespace diarization::kernels {
namespace {

using ::diarization::testing::Random;
using ::diarization::testing::Rng;
using Dev = ::diarization::testing::DeviceFloats;
using ::diarization::testing::StatsPoolReference;
using ::diarization::testing::ToChannelsLast;

double MaxAbsDiff(const std::vector<float>& a, const std::vector<double>& b) {
  EXPECT_EQ(a.size(), b.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) return INFINITY;
    m = std::max(m, std::abs(a[i] - b[i]));
  }
  return m;
}

double Sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

TEST(LstmRecurrenceTest, MatchesFloat64Reference) {
  for (int batch : {1, 3, 6, 9}) {
    const int steps = 37;
    const int g = kLstmGates, hdim = kLstmHidden;
    auto gates = Random(size_t(batch) * steps * 2 * g, -1.0f, 1.0f);
    // PyTorch-like init scale U(±1/sqrt(hidden)).
    const float k = 1.0f / std::sqrt(float(hdim));
    auto w_hh = Random(size_t(2) * g * hdim, -k, k);  // (2, 512, 128) row-major
    std::vector<float> w_hh_t(w_hh.size());
    for (int d = 0; d < 2; ++d)
      for (int j = 0; j < g; ++j)
        for (int kk = 0; kk < hdim; ++kk)
          w_hh_t[(size_t(d) * hdim + kk) * g + j] =
              w_hh[(size_t(d) * g + j) * hdim + kk];
    Dev d_gates(gates), d_w(w_hh_t), d_out(size_t(batch) * steps * 2 * hdim),
        d_l2(d_out.n);
    ASSERT_TRUE(LaunchLstmRecurrence({.gates_in = d_gates.p,
                                      .w_hh_t = d_w.p,
                                      .out = d_out.p,
                                      .batch = batch,
                                      .steps = steps},
                                     nullptr)
                    .ok());
    // The variant that reads W_hh from L2 every step: the same products and
    // sums in the same order (the compiler may still contract the cell
    // update differently, so not necessarily the same bits).
    ASSERT_TRUE(LaunchLstmRecurrence({.gates_in = d_gates.p,
                                      .w_hh_t = d_w.p,
                                      .out = d_l2.p,
                                      .batch = batch,
                                      .steps = steps,
                                      .resident_weights = false},
                                     nullptr)
                    .ok());
    {
      const auto a = d_out.Host(), b = d_l2.Host();
      std::vector<double> bd(b.begin(), b.end());
      EXPECT_LT(MaxAbsDiff(a, bd), 1e-6) << "batch " << batch;
    }
    std::vector<double> ref(d_out.n);
    for (int b = 0; b < batch; ++b) {
      for (int d = 0; d < 2; ++d) {
        std::vector<double> h(hdim, 0.0), c(hdim, 0.0), z(g);
        for (int s = 0; s < steps; ++s) {
          const int t = d == 0 ? s : steps - 1 - s;
          for (int j = 0; j < g; ++j) {
            double acc = gates[(size_t(b) * steps + t) * 2 * g + d * g + j];
            for (int kk = 0; kk < hdim; ++kk)
              acc += double(w_hh[(size_t(d) * g + j) * hdim + kk]) * h[kk];
            z[j] = acc;
          }
          for (int u = 0; u < hdim; ++u) {
            const double i = Sigmoid(z[u]), f = Sigmoid(z[hdim + u]);
            const double gg = std::tanh(z[2 * hdim + u]),
                         o = Sigmoid(z[3 * hdim + u]);
            c[u] = f * c[u] + i * gg;
            h[u] = o * std::tanh(c[u]);
            ref[(size_t(b) * steps + t) * 2 * hdim + d * hdim + u] = h[u];
          }
        }
      }
    }
    EXPECT_LT(MaxAbsDiff(d_out.Host(), ref), 2e-5) << "batch " << batch;
  }
}

// The SincNet step against its float64 reference on fresh random audio and
// filters, in the general form or (symmetric) the form for SincNet's even /
// odd filters: a length whose pooled output is not a multiple of the
// 32-output tile, and the segmentation model's own shape (160000 samples ->
// 15975 -> 5325).
void ExpectSincConvMatchesReference(bool symmetric) {
  for (const int len : {4003, 160000}) {
    const int batch = 3, taps = 251, stride = 10;
    const int pooled = ((len - taps) / stride + 1) / 3;
    auto x = Random(size_t(batch) * len, -1.0f, 1.0f);
    auto w = Random(size_t(kSincConvChannels) * taps, -0.1f, 0.1f);
    if (symmetric) {
      ::diarization::testing::MakeSymmetricHalves(w, kSincConvChannels, taps);
      ASSERT_TRUE(HasSymmetricHalves(w, taps));
    }
    Dev dx(x), dw(w), dy(size_t(batch) * kSincConvChannels * pooled);
    dy.Poison();
    ASSERT_TRUE(LaunchSincConvAbsPool({.x = dx.p,
                                       .filters = dw.p,
                                       .y = dy.p,
                                       .batch = batch,
                                       .len = len,
                                       .taps = taps,
                                       .stride = stride,
                                       .symmetric_halves = symmetric},
                                      nullptr)
                    .ok());
    std::vector<double> ref;
    for (int b = 0; b < batch; ++b) {
      const std::vector<double> one =
          ::diarization::testing::SincConvAbsPoolReference(
              x, w, b, len, kSincConvChannels, taps, stride);
      ref.insert(ref.end(), one.begin(), one.end());
    }
    EXPECT_LT(MaxAbsDiff(dy.Host(), ref), 5e-6) << "len " << len;
  }
}

TEST(SincConvTest, AbsPoolMatchesFloat64Reference) {
  ExpectSincConvMatchesReference(false);
}

TEST(SincConvTest, SymmetricHalvesMatchFloat64Reference) {
  ExpectSincConvMatchesReference(true);
}

// The host check that decides which form runs: random filters fail it, made
// symmetric they pass, and one broken pair, an odd filter's non-zero centre
// or an even tap count fail again.
TEST(SincConvTest, SymmetryCheck) {
  const int taps = 251;
  auto w = Random(size_t(kSincConvChannels) * taps, -0.1f, 0.1f);
  EXPECT_FALSE(HasSymmetricHalves(w, taps));
  ::diarization::testing::MakeSymmetricHalves(w, kSincConvChannels, taps);
  EXPECT_TRUE(HasSymmetricHalves(w, taps));
  auto broken = w;
  broken[size_t(7) * taps + 3] += 1e-3f;
  EXPECT_FALSE(HasSymmetricHalves(broken, taps));
  broken = w;
  broken[size_t(60) * taps + taps / 2] = 1e-3f;
  EXPECT_FALSE(HasSymmetricHalves(broken, taps));
  EXPECT_FALSE(HasSymmetricHalves(
      std::span<const float>(w).first(size_t(kSincConvChannels) * 250), 250));
}

// Masks of every kind, cycling with the mask index: all zero, a single
// frame, binary, soft.
std::vector<float> EdgeMasks(int batch, int masks, int frames) {
  std::vector<float> m(size_t(batch) * masks * frames, 0.0f);
  std::bernoulli_distribution coin(0.4);
  for (int b = 0; b < batch; ++b) {
    for (int s = 0; s < masks; ++s) {
      float* mm = &m[(size_t(b) * masks + s) * frames];
      switch (s % 4) {
        case 0:
          break;
        case 1: {  // a frame the resampling to 125 frames reads
          const int j = (b * 37 + s) % 125;
          mm[int(std::floor(float(j) * (float(frames) / 125.0f)))] = 1.0f;
          break;
        }
        case 2:
          for (int t = 0; t < frames; ++t) mm[t] = coin(Rng()) ? 1.0f : 0.0f;
          break;
        default: {
          auto soft = Random(frames, 0.0f, 1.0f);
          std::copy(soft.begin(), soft.end(), mm);
        }
      }
    }
  }
  return m;
}

// LaunchStatsPool on `features` ((batch, feat, time), or channels-last
// with `rows` > 0) and masks `m`; the stats, back on the host, in `stats`.
absl::Status PoolOnDevice(const std::vector<float>& features,
                          const std::vector<float>& m, int batch, int masks,
                          int feat, int time, int frames, int rows,
                          std::vector<float>* stats) {
  Dev dx(features), dm(m), ds(size_t(batch) * masks * 2 * feat);
  const absl::Status st = LaunchStatsPool({.features = dx.p,
                                           .masks = dm.p,
                                           .stats = ds.p,
                                           .batch = batch,
                                           .masks_per_item = masks,
                                           .feat = feat,
                                           .time = time,
                                           .mask_frames = frames,
                                           .channels_last_rows = rows},
                                          nullptr);
  if (st.ok()) *stats = ds.Host();
  return st;
}

TEST(StatsPoolTest, MatchesFloat64ReferenceWithEdgeMasks) {
  const int batch = 2, masks = 4, feat = 40, time = 125, frames = 589;
  auto x = Random(size_t(batch) * feat * time, -2.0f, 3.0f);
  const std::vector<float> m = EdgeMasks(batch, masks, frames);
  std::vector<float> got;
  ASSERT_TRUE(
      PoolOnDevice(x, m, batch, masks, feat, time, frames, 0, &got).ok());
  const std::vector<double> ref =
      StatsPoolReference(x, m, batch, masks, feat, time, frames);
  EXPECT_LT(MaxAbsDiff(got, ref), 2e-5);
  // Zero mask: exactly zero mean and std. One-frame mask: std exactly 0.
  for (int f = 0; f < 2 * feat; ++f) EXPECT_EQ(got[f], 0.0f);
  for (int f = 0; f < feat; ++f) EXPECT_EQ(got[2 * feat + feat + f], 0.0f);

  // Channels-last input: the same statistics.
  const int rows = 4;
  std::vector<float> got_cl;
  ASSERT_TRUE(PoolOnDevice(ToChannelsLast(x, batch, feat, time, rows), m, batch,
                           masks, feat, time, frames, rows, &got_cl)
                  .ok());
  EXPECT_LT(MaxAbsDiff(got_cl, ref), 2e-5);
}

// The embedding model's shape (ResNet34 output: 256 channels x 10 rows x
// 125 frames, channels-last) with its 3 masks per window, and other mask
// and feature counts (7 masks; 330 features, not a multiple of a warp).
TEST(StatsPoolTest, ModelShapeAndMaskGroupsMatchFloat64Reference) {
  for (const auto& [feat, rows, masks] :
       {std::tuple{2560, 10, 3}, std::tuple{2560, 10, 7},
        std::tuple{330, 10, 5}}) {
    const int batch = 3, time = 125, frames = 589;
    auto x = Random(size_t(batch) * feat * time, -2.0f, 3.0f);
    const std::vector<float> m = EdgeMasks(batch, masks, frames);
    std::vector<float> got;
    ASSERT_TRUE(PoolOnDevice(ToChannelsLast(x, batch, feat, time, rows), m,
                             batch, masks, feat, time, frames, rows, &got)
                    .ok());
    EXPECT_LT(MaxAbsDiff(got, StatsPoolReference(x, m, batch, masks, feat, time,
                                                 frames)),
              2e-5)
        << feat << " features, " << masks << " masks";
    for (int b = 0; b < batch; ++b) {
      for (int s = 0; s < masks; s += 4) {  // all-zero masks
        const float* row = &got[(size_t(b) * masks + s) * 2 * feat];
        for (int f = 0; f < 2 * feat; ++f) ASSERT_EQ(row[f], 0.0f);
      }
    }
  }
}

// The segmentation's waveform norm: one 160,000-sample row per window, with
// an offset far from zero so that the variance is a small difference of
// large sums.
TEST(NnOpsTest, InstanceNormOfLongRowsMatchesFloat64Reference) {
  const int batch = 3, channels = 1, len = 160000;
  auto x = Random(size_t(batch) * len, 0.5f, 0.52f);
  for (size_t i = 0; i < x.size(); i += 997) x[i] = -4.0f;  // outliers
  const std::vector<float> gamma = {1.25f}, beta = {-0.125f};
  Dev dx(x), dg(gamma), db(beta), dy(x.size());
  ASSERT_TRUE(LaunchInstanceNorm({.x = dx.p,
                                  .gamma = dg.p,
                                  .beta = db.p,
                                  .out = dy.p,
                                  .batch = batch,
                                  .channels = channels,
                                  .len = len},
                                 nullptr)
                  .ok());
  std::vector<double> ref(x.size());
  for (int b = 0; b < batch; ++b) {
    const float* r = &x[size_t(b) * len];
    double mean = 0, var = 0;
    for (int t = 0; t < len; ++t) mean += r[t];
    mean /= len;
    for (int t = 0; t < len; ++t) var += (r[t] - mean) * (r[t] - mean);
    var /= len;
    for (int t = 0; t < len; ++t)
      ref[size_t(b) * len + t] =
          (r[t] - mean) / std::sqrt(var + 1e-5) * gamma[0] + beta[0];
  }
  EXPECT_LT(MaxAbsDiff(dy.Host(), ref), 2e-5);
}

TEST(NnOpsTest, InstanceNormPoolLogSoftmaxScaleShift) {
  const int batch = 3, channels = 5, len = 301;
  auto x = Random(size_t(batch) * channels * len, -3.0f, 5.0f);
  auto gamma = Random(channels, 0.5f, 1.5f),
       beta = Random(channels, -0.5f, 0.5f);
  Dev dx(x), dg(gamma), db(beta), dy(x.size());
  ASSERT_TRUE(LaunchInstanceNorm({.x = dx.p,
                                  .gamma = dg.p,
                                  .beta = db.p,
                                  .out = dy.p,
                                  .batch = batch,
                                  .channels = channels,
                                  .len = len,
                                  .leaky = true,
                                  .slope = 0.01f,
                                  .transpose_out = true},
                                 nullptr)
                  .ok());
  std::vector<double> ref(x.size());
  for (int b = 0; b < batch; ++b)
    for (int c = 0; c < channels; ++c) {
      const float* r = &x[(size_t(b) * channels + c) * len];
      double mean = 0, var = 0;
      for (int t = 0; t < len; ++t) mean += r[t];
      mean /= len;
      for (int t = 0; t < len; ++t) var += (r[t] - mean) * (r[t] - mean);
      var /= len;
      for (int t = 0; t < len; ++t) {
        double v = (r[t] - mean) / std::sqrt(var + 1e-5) * gamma[c] + beta[c];
        if (v < 0) v *= 0.01;
        ref[(size_t(b) * len + t) * channels + c] = v;
      }
    }
  EXPECT_LT(MaxAbsDiff(dy.Host(), ref), 2e-5);

  // Max-pool 3 with |x| and with a bias.
  Dev dp(size_t(batch) * channels * (len / 3));
  auto bias = Random(channels, -1.0f, 1.0f);
  Dev dbias(bias);
  for (bool with_abs : {true, false}) {
    ASSERT_TRUE(LaunchMaxPool3({.x = dx.p,
                                .bias = with_abs ? nullptr : dbias.p,
                                .out = dp.p,
                                .rows = batch * channels,
                                .channels = channels,
                                .in_len = len,
                                .abs_first = with_abs},
                               nullptr)
                    .ok());
    std::vector<double> pref(dp.n);
    for (int r = 0; r < batch * channels; ++r)
      for (int t = 0; t < len / 3; ++t) {
        double m = -INFINITY;
        for (int k = 0; k < 3; ++k) {
          double v = x[size_t(r) * len + 3 * t + k];
          if (with_abs) v = std::abs(v);
          m = std::max(m, with_abs ? v : v + bias[r % channels]);
        }
        pref[size_t(r) * (len / 3) + t] = m;
      }
    EXPECT_LT(MaxAbsDiff(dp.Host(), pref), 1e-6) << with_abs;
  }

  // Log-softmax over rows of 7.
  const int rows = 100, cols = 7;
  auto l = Random(size_t(rows) * cols, -20.0f, 20.0f);
  Dev dl(l), dls(l.size());
  ASSERT_TRUE(LaunchLogSoftmax(dl.p, dls.p, rows, cols, nullptr).ok());
  std::vector<double> lref(l.size());
  for (int r = 0; r < rows; ++r) {
    double m = -INFINITY, s = 0;
    for (int c = 0; c < cols; ++c) m = std::max(m, double(l[r * cols + c]));
    for (int c = 0; c < cols; ++c) s += std::exp(l[r * cols + c] - m);
    for (int c = 0; c < cols; ++c)
      lref[r * cols + c] = l[r * cols + c] - m - std::log(s);
  }
  EXPECT_LT(MaxAbsDiff(dls.Host(), lref), 5e-5);

  // BatchNorm epilogue with residual and ReLU.
  auto res = Random(x.size(), -1.0f, 1.0f);
  Dev dres(res), dss(x.size());
  ASSERT_TRUE(LaunchScaleShiftAct({.x = dx.p,
                                   .scale = dg.p,
                                   .shift = db.p,
                                   .residual = dres.p,
                                   .out = dss.p,
                                   .n = batch,
                                   .channels = channels,
                                   .spatial = len,
                                   .relu = true},
                                  nullptr)
                  .ok());
  std::vector<double> sref(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const int c = int((i / len) % channels);
    sref[i] = std::max(0.0, double(x[i]) * gamma[c] + beta[c] + res[i]);
  }
  EXPECT_LT(MaxAbsDiff(dss.Host(), sref), 1e-5);

  // Channels-last: the channel is the fastest-moving index.
  Dev dcl(x.size());
  ASSERT_TRUE(LaunchScaleShiftAct({.x = dx.p,
                                   .scale = dg.p,
                                   .shift = db.p,
                                   .residual = dres.p,
                                   .out = dcl.p,
                                   .n = batch,
                                   .channels = channels,
                                   .spatial = len,
                                   .relu = true,
                                   .channels_last = true},
                                  nullptr)
                  .ok());
  for (size_t i = 0; i < x.size(); ++i) {
    const int c = int(i % channels);
    sref[i] = std::max(0.0, double(x[i]) * gamma[c] + beta[c] + res[i]);
  }
  EXPECT_LT(MaxAbsDiff(dcl.Host(), sref), 1e-5);
}

}  // namespace
}  // namespace diarization::kernels
