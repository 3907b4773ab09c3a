// The `meganeura` command line tool. `meganeura info` prints one line per Vulkan device (the
// banner users paste into bug reports), the default device marked with '*'.
#include <cstdio>
#include <string>

#include "meganeura/device.hpp"
#include "meganeura/error.hpp"

namespace {

constexpr const char* kUsage =
    "usage: meganeura <command>\n"
    "\n"
    "commands:\n"
    "  info      list the Vulkan devices and what each offers ('*' marks the default)\n"
    "  help      show this message (also --help, -h)\n"
    "\n"
    "environment:\n"
    "  MEGANEURA_DEVICE=<index or name>   the device to run on\n"
    "  MEGANEURA_VALIDATION=1             Vulkan validation layer with synchronization checks\n"
    "  MEGANEURA_TIMEOUT_S=<seconds>      how long a step may take before it counts as a hang (60)\n";

int info() {
  const auto devices = meganeura::list_devices();
  // The default is chosen separately so a bad MEGANEURA_DEVICE still lists the devices first.
  std::string error;
  int chosen = -1;
  try {
    chosen = meganeura::default_device_info().index;
  } catch (const meganeura::Error& e) {
    error = e.what();
  }
  for (const auto& d : devices) std::printf("%s %s\n", d.index == chosen ? "*" : " ", d.banner().c_str());
  if (!error.empty()) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string command = argv[1];
  if (command == "help" || command == "--help" || command == "-h") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (command == "info" && argc > 2) {
    std::fprintf(stderr, "meganeura: info takes no arguments\n\n%s", kUsage);
    return 2;
  }
  try {
    if (command == "info") return info();
  } catch (const meganeura::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "meganeura: unknown command '%s'\n\n%s", command.c_str(), kUsage);
  return 2;
}
