// Shared by the fuzz targets: the readers take paths, so each input is written to a file in a
// folder of this process's own, and every outcome but success or a meganeura::Error is a finding.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "meganeura/error.hpp"

namespace meganeura::fuzz {

// A fresh folder for this process under $TMPDIR, else /dev/shm, else /tmp; removed at exit.
const std::string& scratch_dir();

// Writes the input to scratch_dir()/name, replacing the previous one; returns its path.
std::string write_input(const std::string& name, const uint8_t* data, size_t size);

// Runs a reader: a meganeura::Error is the promised answer to a bad input, so it is swallowed;
// any other exception escapes, and libFuzzer reports the uncaught exception as a crash.
// Returns whether the reader succeeded.
template <class Read>
bool reads(Read&& read) {
  try {
    read();
    return true;
  } catch (const Error&) {
    return false;
  }
}

// A broken promise that is no crash (two readers disagree, a round trip changes the text):
// prints what and aborts, so libFuzzer saves the input.
[[noreturn]] void fail(const std::string& what);

}  // namespace meganeura::fuzz
