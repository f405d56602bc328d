#include "engine/models/cpu/dnnl_util.h"

#include "absl/strings/str_cat.h"

namespace diarization::models {

dnnl::memory ReorderedCopy(const dnnl::engine& engine, dnnl::stream& stream,
                           const dnnl::memory::desc& user_md, const float* user,
                           const dnnl::memory::desc& wanted) {
  dnnl::memory src(user_md, engine, const_cast<float*>(user));
  dnnl::memory dst(wanted, engine);
  dnnl::reorder(src, dst).execute(stream, src, dst);
  stream.wait();
  return dst;
}

absl::Status DnnlError(const dnnl::error& e, const std::string& what) {
  return absl::InternalError(absl::StrCat("oneDNN failed while ", what, ": ",
                                          e.what(), " (status ",
                                          static_cast<int>(e.status), ")"));
}

}  // namespace diarization::models
