#include "input_file.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace meganeura::fuzz {

namespace fs = std::filesystem;

const std::string& scratch_dir() {
  static const std::string dir = [] {
    // Memory-backed /dev/shm where there is one: a disk's file system (an overlay in a
    // container) can make the writes, not the readers, take most of the time.
    const char* tmp = std::getenv("TMPDIR");
    const char* base = tmp && *tmp ? tmp : access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    std::string pattern = std::string(base) + "/meganeura-fuzz-XXXXXX";
    if (!mkdtemp(pattern.data())) fail("cannot create a folder from " + pattern);
    return pattern;
  }();
  static const bool cleanup = [] { return std::atexit([] { fs::remove_all(scratch_dir()); }) == 0; }();
  (void)cleanup;
  return dir;
}

std::string write_input(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = scratch_dir() + "/" + name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out.flush()) fail("cannot write " + path);
  return path;
}

void fail(const std::string& what) {
  std::fprintf(stderr, "meganeura fuzz: %s\n", what.c_str());
  std::abort();
}

}  // namespace meganeura::fuzz
