// What //kernels:qualification_data_gen compiles into the binary.
#ifndef DIARIZATION_KERNELS_QUALIFICATION_DATA_H_
#define DIARIZATION_KERNELS_QUALIFICATION_DATA_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace diarization::kernels {

// (kernel, sha256 of its sources) for every custom kernel, sorted by name
// (kernels/BUILD KERNEL_SOURCES lists the files of each).
const std::vector<std::pair<std::string, std::string>>& KernelSourceHashes();

// kernels/qualification.json as committed at build time; empty when the
// repository has none.
std::string_view EmbeddedQualificationJson();

}  // namespace diarization::kernels

#endif  // DIARIZATION_KERNELS_QUALIFICATION_DATA_H_
