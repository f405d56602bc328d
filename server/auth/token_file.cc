#include "server/auth/token_file.h"

#include <openssl/sha.h>

#include <cctype>
#include <set>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "nlohmann/json.hpp"

namespace diarization::server::auth {
namespace {

using nlohmann::json;

constexpr size_t kMinPlainTokenChars = 16;

struct NamedMethod {
  const char* name;
  Method method;
};
constexpr NamedMethod kMethods[] = {
    {"Diarize", Method::kDiarize},
    {"DiarizeFile", Method::kDiarizeFile},
    {"GetInfo", Method::kGetInfo},
    {"CreateVoiceprint", Method::kCreateVoiceprint},
    {"ServerReflectionInfo", Method::kReflection},
    {"metrics", Method::kMetrics},
};

bool ValidName(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (const char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' &&
        c != '-') {
      return false;
    }
  }
  return true;
}

absl::StatusOr<uint32_t> ParseMethods(const json& list,
                                      const std::string& where) {
  if (!list.is_array() || list.empty()) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ".methods must be a non-empty list of method names"));
  }
  uint32_t bits = 0;
  for (const json& m : list) {
    if (!m.is_string()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".methods holds a non-string"));
    }
    const std::string name = m.get<std::string>();
    if (name == "*") {
      bits |= kAllMethods;
      continue;
    }
    bool known = false;
    for (const NamedMethod& k : kMethods) {
      if (name == k.name) {
        bits |= static_cast<uint32_t>(k.method);
        known = true;
      }
    }
    if (!known) {
      std::vector<std::string> names;
      for (const NamedMethod& k : kMethods) names.push_back(k.name);
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".methods: unknown method '", name,
                       "' (known: ", absl::StrJoin(names, ", "), ", *)"));
    }
  }
  return bits;
}

absl::StatusOr<PrincipalLimits> ParseLimits(const json& j,
                                            const std::string& where) {
  PrincipalLimits limits;
  if (!j.is_object()) {
    return absl::InvalidArgumentError(
        absl::StrCat(where, ".limits must be an object"));
  }
  for (const auto& [key, value] : j.items()) {
    if (key == "max_concurrent_calls") {
      if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
          value.get<int64_t>() > 1000000) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ".limits.max_concurrent_calls must be an integer >= 0"));
      }
      limits.max_concurrent_calls = value.get<int>();
    } else if (key == "max_backlog_share") {
      if (!value.is_number() || value.get<double>() < 0 ||
          value.get<double>() > 1) {
        return absl::InvalidArgumentError(absl::StrCat(
            where, ".limits.max_backlog_share must be a number in [0, 1]"));
      }
      limits.max_backlog_share = value.get<double>();
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ".limits: unknown key '", key,
                       "' (known: max_concurrent_calls, max_backlog_share)"));
    }
  }
  return limits;
}

}  // namespace

const char* MethodName(Method method) {
  for (const NamedMethod& k : kMethods) {
    if (k.method == method) return k.name;
  }
  return "unknown";
}

TokenHash HashToken(std::string_view token) {
  TokenHash out;
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(),
         out.data());
  return out;
}

absl::StatusOr<TokenTable> ParseTokenFile(std::string_view json_text) {
  const json root = json::parse(json_text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) {
    return absl::InvalidArgumentError("the token file is not valid JSON");
  }
  if (!root.is_object() || !root.contains("tokens") ||
      !root["tokens"].is_array()) {
    return absl::InvalidArgumentError(
        "the token file must be an object with a \"tokens\" list");
  }
  for (const auto& [key, value] : root.items()) {
    if (key != "tokens") {
      return absl::InvalidArgumentError(
          absl::StrCat("the token file: unknown key '", key, "'"));
    }
  }
  TokenTable table;
  std::set<std::string> names;
  std::set<TokenHash> hashes;
  int index = 0;
  for (const json& e : root["tokens"]) {
    std::string where = absl::StrCat("tokens[", index++, "]");
    if (!e.is_object()) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " must be an object"));
    }
    auto principal = std::make_shared<Principal>();
    TokenEntry entry;
    bool has_secret = false, has_methods = false;
    for (const auto& [key, value] : e.items()) {
      if (key == "name") {
        if (!value.is_string() || !ValidName(value.get<std::string>())) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, ".name must be 1-64 characters of [A-Za-z0-9._-]"));
        }
        principal->name = value.get<std::string>();
      } else if (key == "sha256" || key == "token") {
        if (has_secret) {
          return absl::InvalidArgumentError(absl::StrCat(
              where, " has both \"sha256\" and \"token\"; give one"));
        }
        has_secret = true;
        if (!value.is_string()) {
          return absl::InvalidArgumentError(
              absl::StrCat(where, ".", key, " must be a string"));
        }
        const std::string text = value.get<std::string>();
        if (key == "token") {
          if (text.size() < kMinPlainTokenChars) {
            return absl::InvalidArgumentError(
                absl::StrCat(where, ".token is shorter than ",
                             kMinPlainTokenChars, " characters"));
          }
          entry.sha256 = HashToken(text);
        } else {
          std::string bytes;
          bool hex = text.size() == 64;
          for (const char c : text) {
            hex = hex && std::isxdigit(static_cast<unsigned char>(c));
          }
          if (!hex) {
            return absl::InvalidArgumentError(
                absl::StrCat(where,
                             ".sha256 must be 64 hex digits (sha256sum of the "
                             "token, without a newline)"));
          }
          bytes = absl::HexStringToBytes(text);
          std::copy(bytes.begin(), bytes.end(), entry.sha256.begin());
        }
      } else if (key == "methods") {
        absl::StatusOr<uint32_t> bits = ParseMethods(value, where);
        if (!bits.ok()) return bits.status();
        principal->methods = *bits;
        has_methods = true;
      } else if (key == "limits") {
        absl::StatusOr<PrincipalLimits> limits = ParseLimits(value, where);
        if (!limits.ok()) return limits.status();
        principal->limits = *limits;
      } else {
        return absl::InvalidArgumentError(
            absl::StrCat(where, ": unknown key '", key,
                         "' (known: name, sha256, token, methods, limits)"));
      }
    }
    if (principal->name.empty()) {
      return absl::InvalidArgumentError(absl::StrCat(where, " has no name"));
    }
    where = absl::StrCat(where, " ('", principal->name, "')");
    if (!has_secret) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has neither \"sha256\" nor \"token\""));
    }
    if (!has_methods) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, " has no \"methods\" list"));
    }
    if (!names.insert(principal->name).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the name is used twice"));
    }
    if (!hashes.insert(entry.sha256).second) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, ": the same token is listed twice"));
    }
    entry.principal = std::move(principal);
    table.entries.push_back(std::move(entry));
  }
  return table;
}

}  // namespace diarization::server::auth
