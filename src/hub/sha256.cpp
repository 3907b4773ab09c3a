#include "hub/sha256.hpp"

#include <openssl/evp.h>

#include <cctype>
#include <cerrno>
#include <fstream>
#include <memory>
#include <vector>

#include "io/file.hpp"
#include "meganeura/error.hpp"

namespace meganeura::hub {

namespace {

using Context = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

Context start() {
  Context ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!ctx || EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr) != 1)
    throw HubError("hub: OpenSSL cannot start a SHA-256 digest");
  return ctx;
}

std::string finish(EVP_MD_CTX* ctx) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (EVP_DigestFinal_ex(ctx, digest, &length) != 1) throw HubError("hub: OpenSSL cannot finish a SHA-256 digest");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  for (unsigned int i = 0; i < length; ++i) {
    hex += kHex[digest[i] >> 4];
    hex += kHex[digest[i] & 15];
  }
  return hex;
}

}  // namespace

std::string sha256_hex(std::string_view bytes) {
  Context ctx = start();
  EVP_DigestUpdate(ctx.get(), bytes.data(), bytes.size());
  return finish(ctx.get());
}

std::string sha256_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw HubError("hub: cannot read " + path.string() + ": " + io::errno_text(errno));
  Context ctx = start();
  std::vector<char> buffer(1 << 20);
  while (in) {
    in.read(buffer.data(), static_cast<std::streamsize>(buffer.size()));
    EVP_DigestUpdate(ctx.get(), buffer.data(), static_cast<size_t>(in.gcount()));
  }
  if (in.bad()) throw HubError("hub: cannot read " + path.string() + ": " + io::errno_text(errno));
  return finish(ctx.get());
}

bool looks_like_sha256(const std::string& etag) {
  if (etag.size() != 64) return false;
  for (char c : etag)
    if (!std::isxdigit(static_cast<unsigned char>(c))) return false;
  return true;
}

}  // namespace meganeura::hub
