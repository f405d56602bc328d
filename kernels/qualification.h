// The kernel qualification record (kernels/qualification.json, written by
// bench/qualify on a GPU, committed) and the rule production follows: a
// custom kernel is selected only for a (kernel, batch, precision) tuple the
// record qualifies, on a device of the record's name and compute capability,
// and only while the kernel's sources hash to what was qualified. Anything
// else (no record in this build, another device, an edited kernel, a batch
// not covered or not qualified) selects the fallback, with the reason.
//
// Today production asks this for the cluster LSTM ("lstm_cluster", per
// batch; fallback the resident kernel), and launches it with the tuple's
// recorded group size (windows per cluster: the fastest that qualified on
// the GPU; absent in a record older than schema 2, where the harness timed
// only the kernel's default group and recorded that one), and for the
// layer1 convolution kernel ("conv3x3_c32", at the embedding model's
// max_batch; fallback cuDNN), which runs only where both its layer forms'
// tuples qualified. The other kernels
// have no alternative path in production; their records exist so that the CI
// check (qualification_test) catches an edit that was not re-qualified.
#ifndef DIARIZATION_KERNELS_QUALIFICATION_H_
#define DIARIZATION_KERNELS_QUALIFICATION_H_

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "kernels/qualification_data.h"

namespace diarization::kernels {

struct QualificationTuple {
  std::string kernel;
  std::string layer;  // "all" where the kernel's shape is the same per layer
  int batch = 0;
  std::string precision;
  bool qualified = false;
  std::string reason;  // why not, when not
  // Optional: the launch configuration qualified (lstm_cluster: windows per
  // cluster); 0 when the record has none.
  int group = 0;
};

struct QualificationRecord {
  std::string device_name;                           // cudaDeviceProp::name
  std::string compute_capability;                    // "9.0"
  std::map<std::string, std::string> source_hashes;  // kernel → sha256
  std::vector<QualificationTuple> tuples;
  bool complete = true;  // false: the harness was stopped before the end
};

// InvalidArgument with the reason when `json` is not a record.
absl::StatusOr<QualificationRecord> ParseQualificationRecord(
    std::string_view json);

struct KernelSelection {
  bool use_custom = false;
  std::string reason;  // one line: why this choice
  // With use_custom: the qualified tuple's group (launch with it); 0 when
  // the record has none (launch with the kernel's default).
  int group = 0;
};

// `record` may be null (no record). `hashes` are the compiled-in sources.
KernelSelection SelectQualified(
    const QualificationRecord* record,
    const std::vector<std::pair<std::string, std::string>>& hashes,
    const std::string& kernel, int batch, const std::string& precision,
    const std::string& device_name, const std::string& compute_capability);

// SelectQualified against the record compiled into this binary (parsed
// once; an unparsable one counts as none, its error in the reason).
KernelSelection SelectEmbeddedQualified(const std::string& kernel, int batch,
                                        const std::string& precision,
                                        const std::string& device_name,
                                        const std::string& compute_capability);

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_QUALIFICATION_H_
