// IDX (http://yann.lecun.com/exdb/mnist/): bytes 0 0, an element-type byte, a rank byte, the
// dimensions as big-endian u32, then the elements. zlib's gzread reads gzip and raw files alike.
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <memory>

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

  out.values.resize(total);
  got = read_some(f.get(), out.values.data(), total, path);
  if (got < total)
    throw Error(path + ": truncated: expected " + std::to_string(total) + " bytes of data after the header, got " +
                std::to_string(got));
  uint8_t extra;
  if (read_some(f.get(), &extra, 1, path) != 0)
    throw Error(path + ": trailing garbage after the " + std::to_string(total) + " bytes of data the IDX header declares");
  return out;
}

}  // namespace meganeura::data
