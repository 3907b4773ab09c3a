// IDX files (MNIST's format) through data::read_idx, as written and gzip-compressed: the input
// itself (which reaches the gzip path when it starts with gzip's magic: a damaged stream) and a
// gzip copy of it, which must read the same as the plain file.
#include <zlib.h>

#include "input_file.hpp"
#include "meganeura/data.hpp"

namespace mn = meganeura;

namespace {

std::string write_gzip(const uint8_t* data, size_t size) {
  const std::string path = mn::fuzz::scratch_dir() + "/input.idx.gz";
  gzFile f = gzopen(path.c_str(), "wb");
  if (!f) mn::fuzz::fail("cannot write " + path);
  if (size > 0 && gzwrite(f, data, static_cast<unsigned>(size)) != static_cast<int>(size))
    mn::fuzz::fail("gzwrite failed");
  if (gzclose(f) != Z_OK) mn::fuzz::fail("gzclose failed");
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mn::data::IdxArray plain, inflated;
  const bool plain_ok =
      mn::fuzz::reads([&] { plain = mn::data::read_idx(mn::fuzz::write_input("input.idx", data, size)); });
  const bool inflated_ok = mn::fuzz::reads([&] { inflated = mn::data::read_idx(write_gzip(data, size)); });
  const bool input_is_gzip = size >= 2 && data[0] == 0x1f && data[1] == 0x8b;  // then the copy is gzip twice
  if (!input_is_gzip && plain_ok != inflated_ok)
    mn::fuzz::fail(plain_ok ? "only the plain file reads" : "only the gzip copy reads");
  if (plain_ok && inflated_ok && (plain.dims != inflated.dims || plain.values != inflated.values))
    mn::fuzz::fail("the gzip copy reads differently from the plain file");
  return 0;
}
