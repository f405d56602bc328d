#include "engine/common/sha256.h"

#include <openssl/evp.h>

#include <cstdio>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"

namespace diarization {
namespace {

std::string Hex(const unsigned char* digest, unsigned int len) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * len);
  for (unsigned int i = 0; i < len; ++i) {
    out.push_back(kDigits[digest[i] >> 4]);
    out.push_back(kDigits[digest[i] & 15]);
  }
  return out;
}

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* ctx) const { EVP_MD_CTX_free(ctx); }
};

}  // namespace

std::string Sha256Hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), digest, &len, EVP_sha256(),
                 nullptr) != 1) {
    return "";
  }
  return Hex(digest, len);
}

std::string Sha256Hex(std::span<const std::byte> bytes) {
  return Sha256Hex(std::string_view(reinterpret_cast<const char*>(bytes.data()),
                                    bytes.size()));
}

absl::StatusOr<std::string> Sha256HexOfFile(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> file(std::fopen(path.c_str(), "rb"),
                                             &std::fclose);
  if (!file) {
    return absl::NotFoundError(absl::StrCat("cannot open ", path));
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1) {
    return absl::InternalError("OpenSSL SHA-256 initialisation failed");
  }
  std::vector<unsigned char> buffer(1 << 20);
  size_t n;
  while ((n = std::fread(buffer.data(), 1, buffer.size(), file.get())) > 0) {
    EVP_DigestUpdate(ctx.get(), buffer.data(), n);
  }
  if (std::ferror(file.get())) {
    return absl::DataLossError(absl::StrCat("read error on ", path));
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &len);
  return Hex(digest, len);
}

}  // namespace diarization
