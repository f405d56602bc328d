#include "server/open_file_limit.h"

#include <sys/resource.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace diarization::server {
namespace {

std::string Show(rlim_t v) {
  return v == RLIM_INFINITY ? std::string("unlimited") : absl::StrCat(v);
}

}  // namespace

OpenFileLimit RaiseOpenFileLimit() {
  OpenFileLimit out;
  rlimit r{};
  if (getrlimit(RLIMIT_NOFILE, &r) != 0) {
    out.summary =
        absl::StrCat("getrlimit(RLIMIT_NOFILE) failed: ", std::strerror(errno));
    return out;
  }
  out.soft_before = r.rlim_cur;
  out.hard = r.rlim_max;
  out.soft = r.rlim_cur;
  if (r.rlim_cur == r.rlim_max) {
    out.summary = absl::StrCat("open files: soft limit ", Show(r.rlim_cur),
                               " is already the hard limit");
    return out;
  }
  rlimit raised = r;
  raised.rlim_cur = r.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &raised) != 0) {
    out.summary = absl::StrCat("open files: could not raise the soft limit ",
                               Show(r.rlim_cur), " to the hard limit ",
                               Show(r.rlim_max), ": ", std::strerror(errno));
    return out;
  }
  out.soft = raised.rlim_cur;
  out.summary =
      absl::StrCat("open files: soft limit raised from ", Show(r.rlim_cur),
                   " to the hard limit ", Show(r.rlim_max));
  return out;
}

}  // namespace diarization::server
