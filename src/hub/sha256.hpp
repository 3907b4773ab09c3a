// SHA-256 of a file, for checking downloads of Git LFS files, whose ETag on the Hub is the
// sha256 of their content. OpenSSL's libcrypto does the hashing (the TLS library libcurl
// already loads, with SHA extensions / AVX2 code paths); never a hand-written digest.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>

namespace meganeura::hub {

// 64 lowercase hex digits. Throws HubError naming the file if it cannot be read.
std::string sha256_file(const std::filesystem::path& path);
std::string sha256_hex(std::string_view bytes);

// Whether an ETag has the form of a sha256 (64 hex digits): the Hub's ETag for LFS files.
bool looks_like_sha256(const std::string& etag);

}  // namespace meganeura::hub
