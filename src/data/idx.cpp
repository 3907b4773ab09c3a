// IDX (http://yann.lecun.com/exdb/mnist/): bytes 0 0, an element-type byte, a rank byte, the
// dimensions as big-endian u32, then the elements. zlib's gzread reads gzip and raw files alike.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "io/file.hpp"
#include "meganeura/data.hpp"
#include "meganeura/error.hpp"

namespace meganeura::data {

namespace {

struct GzCloser {
  void operator()(gzFile f) const { gzclose(f); }
};
using Gz = std::unique_ptr<gzFile_s, GzCloser>;

// Reads up to n bytes (gzread takes an unsigned int, so large reads go in chunks); returns the
// count read, which is short only at the end of the stream. Corrupt gzip data throws.
size_t read_some(gzFile f, uint8_t* out, size_t n, const std::string& path) {
  size_t got = 0;
  while (got < n) {
    unsigned chunk = static_cast<unsigned>(std::min<size_t>(n - got, 1u << 30));
    int r = gzread(f, out + got, chunk);
    if (r < 0) {
      int errnum = 0;
      const char* msg = gzerror(f, &errnum);
      throw Error(path + ": cannot read: " + (errnum == Z_ERRNO ? io::errno_text(errno) : std::string(msg)));
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  return got;
}

std::string hex2(unsigned v) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "0x%02x", v);
  return buf;
}

// "60000 x 28 x 28"
std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (int64_t d : dims) s += (s.empty() ? "" : " x ") + std::to_string(d);
  return s.empty() ? "(none: a scalar)" : s;
}

}  // namespace

IdxArray read_idx(const std::string& path) {
  errno = 0;
  Gz f(gzopen(path.c_str(), "rb"));
  if (!f) throw Error("cannot open " + path + ": " + io::errno_text(errno ? errno : ENOMEM));

  uint8_t head[4];
  size_t got = read_some(f.get(), head, 4, path);
  if (got < 4) throw Error(path + ": " + std::to_string(got) + " bytes long, too short for an IDX file");
  if (head[0] != 0 || head[1] != 0)
    throw Error(path + ": not an IDX file (bad magic: first bytes " + hex2(head[0]) + " " + hex2(head[1]) +
                ", expected 0x00 0x00)");
  if (head[2] != 0x08)
    throw Error(path + ": IDX element type " + hex2(head[2]) + " is not supported (only 0x08, unsigned byte)");

  IdxArray out;
  std::vector<uint8_t> dims(4 * size_t{head[3]});
  if (read_some(f.get(), dims.data(), dims.size(), path) < dims.size())
    throw Error(path + ": truncated in the IDX header (" + std::to_string(int{head[3]}) + " dimensions declared)");
  uint64_t total = 1;
  for (size_t i = 0; i < head[3]; ++i) {
    const uint8_t* p = &dims[4 * i];
    uint64_t d = (uint64_t{p[0]} << 24) | (uint64_t{p[1]} << 16) | (uint64_t{p[2]} << 8) | p[3];
    out.dims.push_back(static_cast<int64_t>(d));
    if (__builtin_mul_overflow(total, d, &total) || total > (uint64_t{1} << 40))
      throw Error(path + ": IDX dimensions describe more than 1 TiB of data");
  }

  // A damaged or malicious header can claim anything (12 bytes claimed 64 GiB): before anything
  // is allocated, compare what it claims with what the file can hold. A raw file must hold exactly
  // the claimed bytes after the header; deflate expands at most 1032-fold, so a gzip file of n
  // bytes cannot inflate to more than 1032 n. Within that bound the buffer still grows only as
  // inflated data arrives, so a lying gzip file costs at most what it really inflates to.
  const uint64_t header_bytes = 4 + dims.size();
  std::error_code ec;
  const uint64_t file_bytes = std::filesystem::file_size(path, ec);
  if (!ec) {
    const bool raw = gzdirect(f.get()) != 0;
    const uint64_t can_hold = raw ? file_bytes - std::min(file_bytes, header_bytes)
                                  : (file_bytes > (uint64_t{1} << 40) / 1032 ? uint64_t{1} << 40 : file_bytes * 1032);
    if (total > can_hold && raw)
      throw Error(path + ": truncated: expected " + std::to_string(total) + " bytes of data after the header, got " +
                  std::to_string(can_hold) + " (the header's dimensions: " + dims_text(out.dims) + ")");
    if (total > can_hold)
      throw Error(path + ": truncated or not an IDX file: the header's dimensions " + dims_text(out.dims) + " claim " +
                  std::to_string(total) + " bytes of data, but the gzip file is " + std::to_string(file_bytes) +
                  " bytes long and inflates to at most " + std::to_string(can_hold));
  }
  got = 0;
  for (uint64_t chunk = std::min<uint64_t>(total, uint64_t{1} << 20); got < total;
       chunk = std::min<uint64_t>(total - got, 2 * chunk)) {
    out.values.resize(static_cast<size_t>(got + chunk));
    const size_t r = read_some(f.get(), out.values.data() + got, static_cast<size_t>(chunk), path);
    got += r;
    if (r < chunk) break;
  }
  if (got < total)
    throw Error(path + ": truncated: expected " + std::to_string(total) + " bytes of data after the header, got " +
                std::to_string(got));
  uint8_t extra;
  if (read_some(f.get(), &extra, 1, path) != 0)
    throw Error(path + ": trailing garbage after the " + std::to_string(total) +
                " bytes of data the IDX header declares");
  return out;
}

}  // namespace meganeura::data
