#include "engine/models/format/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/common/status_macros.h"
#include "nlohmann/json.hpp"

namespace diarization::models {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this code maps it directly");

namespace {

// The reference implementation (huggingface/safetensors) refuses headers over
// 100 MB; a larger length field is a corrupt file, not a large model.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

struct DTypeInfo {
  DType dtype;
  const char* name;
  int64_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kF32, "F32", 4},   {DType::kF64, "F64", 8},
    {DType::kF16, "F16", 2},   {DType::kBF16, "BF16", 2},
    {DType::kI64, "I64", 8},   {DType::kI32, "I32", 4},
    {DType::kI8, "I8", 1},     {DType::kU8, "U8", 1},
    {DType::kBool, "BOOL", 1},
};

const DTypeInfo& Info(DType dtype) {
  for (const DTypeInfo& info : kDTypes) {
    if (info.dtype == dtype) return info;
  }
  return kDTypes[0];  // Unreachable: every enumerator is listed.
}

std::string ShapeString(const std::vector<int64_t>& shape) {
  return absl::StrCat("[", absl::StrJoin(shape, ","), "]");
}

// Element count, or -1 on overflow (a corrupt header can claim anything).
int64_t CheckedNumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

}  // namespace

std::string DTypeName(DType dtype) { return Info(dtype).name; }

int64_t DTypeSize(DType dtype) { return Info(dtype).size; }

absl::StatusOr<DType> ParseDType(const std::string& name) {
  for (const DTypeInfo& info : kDTypes) {
    if (name == info.name) return info.dtype;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unsupported safetensors dtype \"", name,
                   "\" (supported: F32 F64 F16 BF16 I64 I32 I8 U8 BOOL)"));
}

int64_t TensorView::num_elements() const { return CheckedNumElements(shape); }

std::span<const float> TensorView::f32() const {
  if (dtype != DType::kF32) return {};
  return {reinterpret_cast<const float*>(bytes.data()),
          bytes.size() / sizeof(float)};
}

struct SafetensorsFile::Impl {
  std::string path;
  void* map = nullptr;
  size_t map_size = 0;
  // Used instead of the mapping when the data section is not 8-byte aligned
  // in the file (the format does not require it), so typed spans stay valid.
  std::vector<uint64_t> aligned_copy;
  std::map<std::string, TensorView> tensors;
  std::map<std::string, std::string> metadata;

  ~Impl() {
    if (map != nullptr) munmap(map, map_size);
  }
};

SafetensorsFile::~SafetensorsFile() = default;

namespace {

absl::Status Corrupt(const std::string& path, const std::string& what) {
  return absl::DataLossError(
      absl::StrCat("safetensors file ", path, " is corrupt: ", what));
}

}  // namespace

absl::StatusOr<std::unique_ptr<SafetensorsFile>> SafetensorsFile::Open(
    const std::string& path) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;

  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = absl::StrCat("cannot open safetensors file ", path,
                                         ": ", std::strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg)
                         : absl::PermissionDeniedError(msg);
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return absl::InvalidArgumentError(
        absl::StrCat("safetensors path ", path, " is not a regular file"));
  }
  const uint64_t file_size = static_cast<uint64_t>(st.st_size);
  if (file_size < 8) {
    ::close(fd);
    return Corrupt(path, absl::StrCat("truncated: ", file_size,
                                      " bytes, less than the 8-byte header "
                                      "length field"));
  }
  void* map = mmap(nullptr, file_size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (map == MAP_FAILED) {
    return absl::InternalError(
        absl::StrCat("cannot mmap ", path, " (", file_size,
                     " bytes): ", std::strerror(map_errno)));
  }
  impl->map = map;
  impl->map_size = file_size;
  const auto* base = static_cast<const std::byte*>(map);

  uint64_t header_len = 0;
  std::memcpy(&header_len, base, 8);
  if (header_len > kMaxHeaderBytes) {
    return Corrupt(path, absl::StrCat("header length ", header_len,
                                      " exceeds the limit of ", kMaxHeaderBytes,
                                      " bytes"));
  }
  if (header_len > file_size - 8) {
    return Corrupt(
        path, absl::StrCat("truncated: header length field says ", header_len,
                           " bytes but only ", file_size - 8, " follow it"));
  }
  const std::string_view header_text(reinterpret_cast<const char*>(base + 8),
                                     header_len);
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(header_text);
  } catch (const nlohmann::json::exception& e) {
    return Corrupt(path, absl::StrCat("header is not valid JSON: ", e.what()));
  }
  if (!header.is_object()) {
    return Corrupt(path, "header is not a JSON object");
  }

  const uint64_t data_start = 8 + header_len;
  const uint64_t data_size = file_size - data_start;
  const std::byte* data = base + data_start;
  if (data_start % 8 != 0) {
    impl->aligned_copy.resize((data_size + 7) / 8);
    std::memcpy(impl->aligned_copy.data(), data, data_size);
    data = reinterpret_cast<const std::byte*>(impl->aligned_copy.data());
  }

  // (begin, end, name) of every tensor, to check that they tile the data.
  std::vector<std::tuple<uint64_t, uint64_t, std::string>> extents;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") {
      if (!entry.is_object()) {
        return Corrupt(path, "__metadata__ is not a JSON object");
      }
      for (const auto& [key, value] : entry.items()) {
        if (!value.is_string()) {
          return Corrupt(path, absl::StrCat("__metadata__ value of \"", key,
                                            "\" is not a string"));
        }
        impl->metadata[key] = value.get<std::string>();
      }
      continue;
    }
    const std::string where = absl::StrCat("tensor \"", name, "\"");
    if (!entry.is_object()) {
      return Corrupt(path, where + " is not a JSON object");
    }
    for (const char* field : {"dtype", "shape", "data_offsets"}) {
      if (!entry.contains(field)) {
        return Corrupt(path, absl::StrCat(where, " has no \"", field, "\""));
      }
    }
    if (!entry["dtype"].is_string()) {
      return Corrupt(path, where + ": dtype is not a string");
    }
    absl::StatusOr<DType> dtype = ParseDType(entry["dtype"].get<std::string>());
    if (!dtype.ok()) {
      return Corrupt(path, absl::StrCat(where, ": ", dtype.status().message()));
    }
    const nlohmann::json& shape_json = entry["shape"];
    if (!shape_json.is_array()) {
      return Corrupt(path, where + ": shape is not an array");
    }
    std::vector<int64_t> shape;
    for (const nlohmann::json& d : shape_json) {
      if (!d.is_number_unsigned()) {
        return Corrupt(path, absl::StrCat(where, ": shape ", shape_json.dump(),
                                          " has a non-integer or negative "
                                          "dimension"));
      }
      const uint64_t v = d.get<uint64_t>();
      if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
        return Corrupt(path, where + ": shape dimension overflows int64");
      }
      shape.push_back(static_cast<int64_t>(v));
    }
    const nlohmann::json& offsets = entry["data_offsets"];
    if (!offsets.is_array() || offsets.size() != 2 ||
        !offsets[0].is_number_unsigned() || !offsets[1].is_number_unsigned()) {
      return Corrupt(path,
                     absl::StrCat(where, ": data_offsets ", offsets.dump(),
                                  " is not [begin, end] of two "
                                  "non-negative integers"));
    }
    const uint64_t begin = offsets[0].get<uint64_t>();
    const uint64_t end = offsets[1].get<uint64_t>();
    if (begin > end) {
      return Corrupt(path, absl::StrCat(where, ": data_offsets [", begin, ",",
                                        end, "] end before begin"));
    }
    if (end > data_size) {
      return Corrupt(
          path,
          absl::StrCat("truncated: ", where, " ends at data byte ", end,
                       " but the data section has only ", data_size, " bytes"));
    }
    const int64_t n = CheckedNumElements(shape);
    const int64_t elem = DTypeSize(*dtype);
    if (n < 0 || n > std::numeric_limits<int64_t>::max() / elem) {
      return Corrupt(path, absl::StrCat(where, ": shape ", ShapeString(shape),
                                        " overflows"));
    }
    if (static_cast<uint64_t>(n * elem) != end - begin) {
      return Corrupt(path,
                     absl::StrCat(where, ": shape ", ShapeString(shape), " ",
                                  DTypeName(*dtype), " needs ", n * elem,
                                  " bytes but data_offsets "
                                  "span ",
                                  end - begin));
    }
    TensorView view;
    view.name = name;
    view.dtype = *dtype;
    view.shape = std::move(shape);
    view.bytes = std::span<const std::byte>(data + begin, end - begin);
    extents.emplace_back(begin, end, name);
    impl->tensors.emplace(name, std::move(view));
  }

  // Like huggingface/safetensors, require the tensors to tile the data
  // section exactly: overlaps, gaps and trailing bytes mean a damaged file.
  std::sort(extents.begin(), extents.end());
  uint64_t expected_begin = 0;
  for (const auto& [begin, end, name] : extents) {
    if (begin < expected_begin) {
      return Corrupt(path, absl::StrCat("tensor \"", name,
                                        "\" overlaps the previous tensor "
                                        "(begins at ",
                                        begin, ", previous ends at ",
                                        expected_begin, ")"));
    }
    if (begin > expected_begin) {
      return Corrupt(path, absl::StrCat("gap of ", begin - expected_begin,
                                        " bytes before tensor \"", name, "\""));
    }
    expected_begin = end;
  }
  if (expected_begin != data_size) {
    return Corrupt(path, absl::StrCat(data_size - expected_begin,
                                      " trailing bytes after the last "
                                      "tensor (data section ",
                                      data_size, " bytes, tensors end at ",
                                      expected_begin, ")"));
  }

  auto file = std::unique_ptr<SafetensorsFile>(new SafetensorsFile());
  file->impl_ = std::move(impl);
  return file;
}

const TensorView* SafetensorsFile::Find(const std::string& name) const {
  auto it = impl_->tensors.find(name);
  return it == impl_->tensors.end() ? nullptr : &it->second;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(impl_->tensors.size());
  for (const auto& [name, view] : impl_->tensors) out.push_back(name);
  return out;
}

const std::map<std::string, std::string>& SafetensorsFile::metadata() const {
  return impl_->metadata;
}

const std::string& SafetensorsFile::path() const { return impl_->path; }

absl::Status SafetensorsFile::Validate(
    const std::vector<TensorSpec>& expected,
    const std::vector<std::string>& ignored) const {
  const std::set<std::string> ignored_set(ignored.begin(), ignored.end());
  std::set<std::string> expected_names;
  std::vector<std::string> missing, mismatched, unexpected;
  for (const TensorSpec& spec : expected) {
    expected_names.insert(spec.name);
    const TensorView* view = Find(spec.name);
    if (view == nullptr) {
      missing.push_back(spec.name);
      continue;
    }
    if (view->dtype != spec.dtype || view->shape != spec.shape) {
      mismatched.push_back(absl::StrCat(
          spec.name, " is ", DTypeName(view->dtype), ShapeString(view->shape),
          ", expected ", DTypeName(spec.dtype), ShapeString(spec.shape)));
    }
  }
  for (const auto& [name, view] : impl_->tensors) {
    if (!expected_names.contains(name) && !ignored_set.contains(name)) {
      unexpected.push_back(name);
    }
  }
  if (missing.empty() && mismatched.empty() && unexpected.empty()) {
    return absl::OkStatus();
  }
  std::vector<std::string> parts;
  if (!missing.empty()) {
    parts.push_back(absl::StrCat(
        missing.size(), " missing tensor(s): ", absl::StrJoin(missing, ", ")));
  }
  if (!mismatched.empty()) {
    parts.push_back(absl::StrCat(mismatched.size(),
                                 " tensor(s) with wrong dtype/shape: ",
                                 absl::StrJoin(mismatched, "; ")));
  }
  if (!unexpected.empty()) {
    parts.push_back(absl::StrCat(unexpected.size(), " unexpected tensor(s): ",
                                 absl::StrJoin(unexpected, ", ")));
  }
  return absl::InvalidArgumentError(
      absl::StrCat("safetensors file ", impl_->path,
                   " does not match the model: ", absl::StrJoin(parts, " | ")));
}

absl::Status WriteSafetensors(
    const std::string& path, const std::vector<TensorData>& tensors,
    const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) {
    nlohmann::json meta = nlohmann::json::object();
    for (const auto& [key, value] : metadata) meta[key] = value;
    header["__metadata__"] = std::move(meta);
  }
  uint64_t offset = 0;
  for (const TensorData& t : tensors) {
    if (t.spec.name.empty() || t.spec.name == "__metadata__") {
      return absl::InvalidArgumentError(
          absl::StrCat("invalid tensor name \"", t.spec.name, "\""));
    }
    if (header.contains(t.spec.name)) {
      return absl::InvalidArgumentError(
          absl::StrCat("duplicate tensor name \"", t.spec.name, "\""));
    }
    const int64_t n = CheckedNumElements(t.spec.shape);
    if (n < 0 ||
        static_cast<uint64_t>(n) * DTypeSize(t.spec.dtype) != t.bytes.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "tensor \"", t.spec.name, "\" ", DTypeName(t.spec.dtype),
          ShapeString(t.spec.shape), " needs ", n * DTypeSize(t.spec.dtype),
          " bytes but ", t.bytes.size(), " were given"));
    }
    header[t.spec.name] = {{"dtype", DTypeName(t.spec.dtype)},
                           {"shape", t.spec.shape},
                           {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text = header.dump();
  // Pad with spaces (valid JSON whitespace) so the data starts 8-byte
  // aligned, as huggingface/safetensors' writer does.
  text.append((8 - text.size() % 8) % 8, ' ');

  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) {
      return absl::PermissionDeniedError(
          absl::StrCat("cannot create ", tmp, ": ", std::strerror(errno)));
    }
    const uint64_t len = text.size();
    out.write(reinterpret_cast<const char*>(&len), 8);
    out.write(text.data(), static_cast<std::streamsize>(text.size()));
    for (const TensorData& t : tensors) {
      out.write(reinterpret_cast<const char*>(t.bytes.data()),
                static_cast<std::streamsize>(t.bytes.size()));
    }
    out.flush();
    if (!out) {
      return absl::InternalError(
          absl::StrCat("write to ", tmp, " failed: ", std::strerror(errno)));
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    return absl::InternalError(
        absl::StrCat("cannot rename ", tmp, " to ", path, ": ", ec.message()));
  }
  return absl::OkStatus();
}

}  // namespace diarization::models
