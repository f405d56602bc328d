#include "engine/io/npy.h"

#include <zip.h>

#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"
#include "engine/common/status_macros.h"

namespace diarization::io {
namespace {

int ElementSize(NpyDtype d) {
  switch (d) {
    case NpyDtype::kFloat64:
    case NpyDtype::kInt64:
      return 8;
    case NpyDtype::kFloat32:
    case NpyDtype::kInt32:
      return 4;
    case NpyDtype::kInt16:
      return 2;
    case NpyDtype::kInt8:
    case NpyDtype::kUint8:
    case NpyDtype::kBool:
      return 1;
  }
  return 1;
}

absl::StatusOr<NpyDtype> ParseDescr(absl::string_view descr) {
  if (descr.size() < 3) {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: bad descr '", descr, "'"));
  }
  const char order = descr[0];
  const absl::string_view type = descr.substr(1);
  const bool one_byte = type == "u1" || type == "i1" || type == "b1";
  if (order == '>' || (order != '<' && order != '|') ||
      (order == '|' && !one_byte)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "npy: only little-endian arrays are supported, got descr '", descr,
        "'"));
  }
  if (type == "f4") return NpyDtype::kFloat32;
  if (type == "f8") return NpyDtype::kFloat64;
  if (type == "i1") return NpyDtype::kInt8;
  if (type == "u1") return NpyDtype::kUint8;
  if (type == "i2") return NpyDtype::kInt16;
  if (type == "i4") return NpyDtype::kInt32;
  if (type == "i8") return NpyDtype::kInt64;
  if (type == "b1") return NpyDtype::kBool;
  return absl::InvalidArgumentError(
      absl::StrCat("npy: unsupported dtype '", descr, "'"));
}

// Value text of `key` in the header dict: from after "'key':" to the next
// top-level ',' or '}'.
absl::StatusOr<std::string> DictValue(absl::string_view header,
                                      absl::string_view key) {
  const std::string quoted = absl::StrCat("'", key, "'");
  size_t pos = header.find(quoted);
  if (pos == absl::string_view::npos) {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: header has no '", key, "': ", header));
  }
  pos = header.find(':', pos + quoted.size());
  if (pos == absl::string_view::npos) {
    return absl::InvalidArgumentError("npy: malformed header");
  }
  ++pos;
  int depth = 0;
  size_t end = pos;
  for (; end < header.size(); ++end) {
    const char ch = header[end];
    if (ch == '(') ++depth;
    if (ch == ')') --depth;
    if (depth == 0 && (ch == ',' || ch == '}')) break;
  }
  return std::string(absl::StripAsciiWhitespace(header.substr(pos, end - pos)));
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename Out>
std::vector<Out> Convert(const NpyArray& a) {
  const int64_t n = a.size();
  std::vector<Out> out(n);
  const uint8_t* p = a.bytes.data();
  for (int64_t i = 0; i < n; ++i) {
    switch (a.dtype) {
      case NpyDtype::kFloat32:
        out[i] = static_cast<Out>(Load<float>(p + 4 * i));
        break;
      case NpyDtype::kFloat64:
        out[i] = static_cast<Out>(Load<double>(p + 8 * i));
        break;
      case NpyDtype::kInt8:
        out[i] = static_cast<Out>(Load<int8_t>(p + i));
        break;
      case NpyDtype::kUint8:
      case NpyDtype::kBool:
        out[i] = static_cast<Out>(Load<uint8_t>(p + i));
        break;
      case NpyDtype::kInt16:
        out[i] = static_cast<Out>(Load<int16_t>(p + 2 * i));
        break;
      case NpyDtype::kInt32:
        out[i] = static_cast<Out>(Load<int32_t>(p + 4 * i));
        break;
      case NpyDtype::kInt64:
        out[i] = static_cast<Out>(Load<int64_t>(p + 8 * i));
        break;
    }
  }
  return out;
}

}  // namespace

int64_t NpyArray::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::vector<double> NpyArray::ToDouble() const {
  return Convert<double>(*this);
}
std::vector<float> NpyArray::ToFloat() const { return Convert<float>(*this); }
std::vector<int64_t> NpyArray::ToInt64() const {
  return Convert<int64_t>(*this);
}

absl::StatusOr<NpyArray> ParseNpy(std::string_view data_std) {
  const absl::string_view data(data_std.data(), data_std.size());
  static constexpr char kMagic[] = "\x93NUMPY";
  if (data.size() < 10 || data.substr(0, 6) != absl::string_view(kMagic, 6)) {
    return absl::InvalidArgumentError("npy: missing \\x93NUMPY magic");
  }
  const int major = static_cast<uint8_t>(data[6]);
  size_t header_len = 0;
  size_t offset = 0;
  if (major == 1) {
    header_len =
        Load<uint16_t>(reinterpret_cast<const uint8_t*>(data.data() + 8));
    offset = 10;
  } else if (major == 2 || major == 3) {
    if (data.size() < 12) return absl::InvalidArgumentError("npy: truncated");
    header_len =
        Load<uint32_t>(reinterpret_cast<const uint8_t*>(data.data() + 8));
    offset = 12;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: unsupported format version ", major));
  }
  if (offset + header_len > data.size()) {
    return absl::InvalidArgumentError(absl::StrCat(
        "npy: header length ", header_len, " exceeds file size ", data.size()));
  }
  const absl::string_view header = data.substr(offset, header_len);
  ASSIGN_OR_RETURN(const std::string descr_text, DictValue(header, "descr"));
  const std::string descr(
      absl::StripSuffix(absl::StripPrefix(descr_text, "'"), "'"));
  ASSIGN_OR_RETURN(const std::string fortran,
                   DictValue(header, "fortran_order"));
  if (fortran != "False" && fortran != "True") {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: bad fortran_order '", fortran, "'"));
  }
  ASSIGN_OR_RETURN(std::string shape_text, DictValue(header, "shape"));
  NpyArray array;
  ASSIGN_OR_RETURN(array.dtype, ParseDescr(descr));
  shape_text =
      std::string(absl::StripSuffix(absl::StripPrefix(shape_text, "("), ")"));
  for (absl::string_view part : absl::StrSplit(shape_text, ',')) {
    part = absl::StripAsciiWhitespace(part);
    if (part.empty()) continue;
    int64_t dim = 0;
    if (!absl::SimpleAtoi(part, &dim) || dim < 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("npy: bad shape entry '", part, "'"));
    }
    array.shape.push_back(dim);
  }
  const size_t payload =
      static_cast<size_t>(array.size()) * ElementSize(array.dtype);
  const size_t begin = offset + header_len;
  if (data.size() - begin < payload) {
    return absl::InvalidArgumentError(
        absl::StrCat("npy: data has ", data.size() - begin,
                     " bytes, shape needs ", payload));
  }
  array.bytes.assign(data.begin() + begin, data.begin() + begin + payload);
  if (fortran == "True" && array.shape.size() > 1) {
    // Column-major on disk: reorder into C order, the layout callers expect.
    const int rank = static_cast<int>(array.shape.size());
    const int esize = ElementSize(array.dtype);
    std::vector<int64_t> f_stride(rank, 1);
    for (int k = 1; k < rank; ++k)
      f_stride[k] = f_stride[k - 1] * array.shape[k - 1];
    std::vector<uint8_t> c_order(array.bytes.size());
    std::vector<int64_t> index(rank, 0);
    for (int64_t i = 0; i < array.size(); ++i) {
      int64_t src = 0;
      for (int k = 0; k < rank; ++k) src += index[k] * f_stride[k];
      std::memcpy(&c_order[i * esize], &array.bytes[src * esize], esize);
      for (int k = rank - 1; k >= 0; --k) {
        if (++index[k] < array.shape[k]) break;
        index[k] = 0;
      }
    }
    array.bytes = std::move(c_order);
  }
  return array;
}

absl::StatusOr<NpyArray> ReadNpyFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::string data((std::istreambuf_iterator<char>(in)),
                   std::istreambuf_iterator<char>());
  auto parsed = ParseNpy(std::string_view(data.data(), data.size()));
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", parsed.status().message()));
  }
  return parsed;
}

namespace {

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};

absl::StatusOr<std::unique_ptr<zip_t, ZipCloser>> OpenZip(
    const std::string& path) {
  int error = 0;
  zip_t* z = zip_open(path.c_str(), ZIP_RDONLY, &error);
  if (z == nullptr) {
    zip_error_t ze;
    zip_error_init_with_code(&ze, error);
    std::string msg = zip_error_strerror(&ze);
    zip_error_fini(&ze);
    return absl::NotFoundError(
        absl::StrCat("cannot open npz ", path, ": ", msg));
  }
  return std::unique_ptr<zip_t, ZipCloser>(z);
}

absl::StatusOr<NpyArray> ReadMember(zip_t* z, zip_uint64_t index,
                                    const std::string& path,
                                    const std::string& name) {
  zip_stat_t st;
  zip_stat_init(&st);
  if (zip_stat_index(z, index, 0, &st) != 0 || !(st.valid & ZIP_STAT_SIZE)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot stat ", name));
  }
  zip_file_t* f = zip_fopen_index(z, index, 0);
  if (f == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": cannot open ", name));
  }
  std::string data(st.size, '\0');
  const zip_int64_t got = zip_fread(f, data.data(), st.size);
  zip_fclose(f);
  if (got != static_cast<zip_int64_t>(st.size)) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": short read of ", name));
  }
  auto parsed = ParseNpy(std::string_view(data.data(), data.size()));
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ":", name, ": ", parsed.status().message()));
  }
  return parsed;
}

}  // namespace

absl::StatusOr<std::map<std::string, NpyArray>> ReadNpzFile(
    const std::string& path) {
  ASSIGN_OR_RETURN(auto z, OpenZip(path));
  std::map<std::string, NpyArray> out;
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  for (zip_int64_t i = 0; i < n; ++i) {
    const char* name = zip_get_name(z.get(), i, 0);
    if (name == nullptr) continue;
    absl::string_view key(name);
    if (!absl::ConsumeSuffix(&key, ".npy")) continue;
    ASSIGN_OR_RETURN(out[std::string(key)], ReadMember(z.get(), i, path, name));
  }
  return out;
}

absl::StatusOr<NpyArray> ReadNpzMember(const std::string& path,
                                       const std::string& key) {
  ASSIGN_OR_RETURN(auto z, OpenZip(path));
  const std::string name = key + ".npy";
  const zip_int64_t index = zip_name_locate(z.get(), name.c_str(), 0);
  if (index < 0) {
    return absl::NotFoundError(
        absl::StrCat(path, " has no member '", key, "'"));
  }
  return ReadMember(z.get(), index, path, name);
}

}  // namespace diarization::io
