// The committed kernel qualification record (kernels/qualification.json)
// against the kernels compiled into this build, and the selection rule on
// synthetic records. No GPU: runs in CI.
//
// With a committed record: it must parse, cover every custom kernel, and
// each kernel's sources must hash to what was qualified — an edited kernel
// fails here until bench/gpu/parts/qualify.sh is run again and its record
// committed. Without one: production must fall back everywhere.
#include "kernels/qualification.h"

#include <string>

#include "gtest/gtest.h"

namespace diarization::kernels {
namespace {

TEST(QualificationTest, CommittedRecordMatchesTheKernels) {
  const std::string_view json = EmbeddedQualificationJson();
  if (json.empty()) {
    // No record yet: every selection falls back, and says why.
    const KernelSelection s = SelectEmbeddedQualified("lstm_cluster", 1, "fp32",
                                                      "NVIDIA H200", "9.0");
    EXPECT_FALSE(s.use_custom);
    EXPECT_NE(s.reason.find("no kernel qualification record"),
              std::string::npos)
        << s.reason;
    return;
  }
  absl::StatusOr<QualificationRecord> r = ParseQualificationRecord(json);
  ASSERT_TRUE(r.ok()) << "kernels/qualification.json: " << r.status();
  EXPECT_FALSE(r->device_name.empty());
  EXPECT_TRUE(r->complete) << "kernels/qualification.json is from a harness "
                              "run that was stopped before the end";
  EXPECT_FALSE(r->tuples.empty());
  for (const auto& [kernel, hash] : KernelSourceHashes()) {
    auto it = r->source_hashes.find(kernel);
    if (it == r->source_hashes.end()) {
      ADD_FAILURE() << "kernels/qualification.json has no record of kernel "
                    << kernel
                    << "; run bench/gpu/parts/qualify.sh on the GPU and "
                       "commit its qualification.json";
      continue;
    }
    EXPECT_EQ(it->second, hash)
        << "kernel " << kernel
        << " changed since it was qualified; run bench/gpu/parts/qualify.sh "
           "on the GPU and commit its qualification.json";
    bool has_tuple = false;
    for (const QualificationTuple& t : r->tuples)
      has_tuple = has_tuple || t.kernel == kernel;
    EXPECT_TRUE(has_tuple) << "no tuple for kernel " << kernel;
  }
  // Production launches the cluster LSTM with the recorded group: it must
  // be one the kernel has (kernels/lstm_cluster.h), and no larger than the
  // batch rounded up to a power of two (the harness tries no other).
  for (const QualificationTuple& t : r->tuples) {
    if (t.kernel != "lstm_cluster" || t.group == 0) continue;
    EXPECT_TRUE(t.group == 1 || t.group == 2 || t.group == 4 || t.group == 8 ||
                t.group == 16)
        << "batch " << t.batch << " group " << t.group;
    EXPECT_TRUE(t.group == 1 || t.group / 2 < t.batch)
        << "batch " << t.batch << " group " << t.group;
  }
}

TEST(QualificationTest, HashesCoverEveryKernelAndLookLikeSha256) {
  const auto& h = KernelSourceHashes();
  ASSERT_EQ(h.size(), 8u);  // kernels/BUILD KERNEL_SOURCES
  for (const auto& [name, hash] : h) {
    EXPECT_EQ(hash.size(), 64u) << name;
    EXPECT_EQ(hash.find_first_not_of("0123456789abcdef"), std::string::npos)
        << name;
  }
  EXPECT_NE(h[0].second, h[1].second);
}

constexpr char kRecord[] = R"({
  "device": {"name": "NVIDIA H200", "compute_capability": "9.0"},
  "sources": {"lstm_cluster": "aaaa", "fbank": "bbbb"},
  "tuples": [
    {"kernel": "lstm_cluster", "layer": "all", "batch": 1, "precision": "fp32",
     "qualified": true},
    {"kernel": "lstm_cluster", "layer": "all", "batch": 12,
     "precision": "fp32", "qualified": true, "group": 2,
     "groups": [{"group": 1, "timing": {"custom_median_us": 700}},
                {"group": 2, "timing": {"custom_median_us": 650}}]},
    {"kernel": "lstm_cluster", "layer": "all", "batch": 64,
     "precision": "fp32", "qualified": false, "group": 4,
     "reason": "slower than the baseline"},
    {"kernel": "lstm_cluster", "layer": "all", "batch": 256,
     "precision": "fp32", "qualified": false, "reason": "slower: 1.31x"}
  ]
})";

TEST(QualificationTest, SelectionRule) {
  absl::StatusOr<QualificationRecord> r = ParseQualificationRecord(kRecord);
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<std::pair<std::string, std::string>> same = {
      {"fbank", "bbbb"}, {"lstm_cluster", "aaaa"}};
  const std::vector<std::pair<std::string, std::string>> edited = {
      {"fbank", "bbbb"}, {"lstm_cluster", "cccc"}};
  auto sel = [&](const QualificationRecord* rec, const auto& hashes, int batch,
                 const std::string& dev, const std::string& cc) {
    return SelectQualified(rec, hashes, "lstm_cluster", batch, "fp32", dev, cc);
  };
  EXPECT_TRUE(sel(&*r, same, 1, "NVIDIA H200", "9.0").use_custom);
  // The recorded group comes with the selection; none recorded: 0 (the
  // kernel's default).
  EXPECT_EQ(sel(&*r, same, 1, "NVIDIA H200", "9.0").group, 0);
  KernelSelection g = sel(&*r, same, 12, "NVIDIA H200", "9.0");
  EXPECT_TRUE(g.use_custom);
  EXPECT_EQ(g.group, 2);
  EXPECT_NE(g.reason.find("group 2"), std::string::npos) << g.reason;
  EXPECT_FALSE(sel(&*r, same, 64, "NVIDIA H200", "9.0").use_custom);
  // Another device does not get this device's group either.
  EXPECT_FALSE(sel(&*r, same, 12, "NVIDIA H100 80GB HBM3", "9.0").use_custom);
  // Not qualified, not covered, other device, edited sources, no record.
  KernelSelection s = sel(&*r, same, 256, "NVIDIA H200", "9.0");
  EXPECT_FALSE(s.use_custom);
  EXPECT_NE(s.reason.find("slower: 1.31x"), std::string::npos) << s.reason;
  EXPECT_FALSE(sel(&*r, same, 2, "NVIDIA H200", "9.0").use_custom);
  EXPECT_FALSE(sel(&*r, same, 1, "NVIDIA H100 80GB HBM3", "9.0").use_custom);
  EXPECT_FALSE(sel(&*r, same, 1, "NVIDIA H200", "10.0").use_custom);
  s = sel(&*r, edited, 1, "NVIDIA H200", "9.0");
  EXPECT_FALSE(s.use_custom);
  EXPECT_NE(s.reason.find("changed since"), std::string::npos) << s.reason;
  EXPECT_FALSE(sel(nullptr, same, 1, "NVIDIA H200", "9.0").use_custom);
  EXPECT_FALSE(
      SelectQualified(&*r, same, "sinc_conv", 1, "fp32", "NVIDIA H200", "9.0")
          .use_custom);
  EXPECT_FALSE(SelectQualified(&*r, same, "lstm_cluster", 1, "tf32",
                               "NVIDIA H200", "9.0")
                   .use_custom);
}

// A kernel recorded per layer runs at a batch only where every layer's
// tuple qualified; the reason names the layer that did not.
TEST(QualificationTest, EveryLayerOfABatchMustQualify) {
  absl::StatusOr<QualificationRecord> r = ParseQualificationRecord(R"({
    "device": {"name": "NVIDIA H200", "compute_capability": "9.0"},
    "sources": {"conv3x3_c32": "dddd"},
    "tuples": [
      {"kernel": "conv3x3_c32", "layer": "layer1.conv1", "batch": 4,
       "precision": "tf32", "qualified": true},
      {"kernel": "conv3x3_c32", "layer": "layer1.conv2", "batch": 4,
       "precision": "tf32", "qualified": false, "reason": "slower: 1.05x"},
      {"kernel": "conv3x3_c32", "layer": "layer1.conv1", "batch": 32,
       "precision": "tf32", "qualified": true},
      {"kernel": "conv3x3_c32", "layer": "layer1.conv2", "batch": 32,
       "precision": "tf32", "qualified": true}
    ]})");
  ASSERT_TRUE(r.ok()) << r.status();
  const std::vector<std::pair<std::string, std::string>> hashes = {
      {"conv3x3_c32", "dddd"}};
  auto sel = [&](int batch, const std::string& precision) {
    return SelectQualified(&*r, hashes, "conv3x3_c32", batch, precision,
                           "NVIDIA H200", "9.0");
  };
  EXPECT_TRUE(sel(32, "tf32").use_custom) << sel(32, "tf32").reason;
  const KernelSelection four = sel(4, "tf32");
  EXPECT_FALSE(four.use_custom);
  EXPECT_NE(four.reason.find("layer1.conv2"), std::string::npos) << four.reason;
  EXPECT_NE(four.reason.find("slower: 1.05x"), std::string::npos)
      << four.reason;
  EXPECT_FALSE(sel(16, "tf32").use_custom);
  EXPECT_FALSE(sel(32, "fp32").use_custom);
}

TEST(QualificationTest, RejectsMalformedRecords) {
  EXPECT_FALSE(ParseQualificationRecord("").ok());
  EXPECT_FALSE(ParseQualificationRecord("[1, 2]").ok());
  EXPECT_FALSE(ParseQualificationRecord(R"({"device": {}})").ok());
  EXPECT_FALSE(ParseQualificationRecord(
                   R"({"device": {"name": "x", "compute_capability": "9.0"},
                       "sources": {}, "tuples": [{"kernel": 3}]})")
                   .ok());
  constexpr char kTuple[] = R"({
    "device": {"name": "x", "compute_capability": "9.0"}, "sources": {},
    "tuples": [{"kernel": "lstm_cluster", "layer": "all", "batch": 4,
                "precision": "fp32", "qualified": true, "group": %s}]})";
  auto with_group = [&](const char* g) {
    std::string s(kTuple);
    s.replace(s.find("%s"), 2, g);
    return ParseQualificationRecord(s);
  };
  ASSERT_TRUE(with_group("4").ok());
  EXPECT_EQ(with_group("4")->tuples[0].group, 4);
  EXPECT_FALSE(with_group("-1").ok());
  EXPECT_FALSE(with_group("\"four\"").ok());
}

}  // namespace
}  // namespace diarization::kernels
