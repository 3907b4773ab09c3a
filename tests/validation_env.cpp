// The main() of every test binary: turns on the Vulkan validation layer before anything touches
// Vulkan, and fails any test during which the layer reported something.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "meganeura/device.hpp"

namespace {

std::string join(const std::vector<std::string>& msgs) {
  std::ostringstream os;
  for (size_t i = 0; i < msgs.size(); ++i) os << "\n  [" << i << "] " << msgs[i];
  return os.str();
}

// Drains the validation messages after each test; a test that produced any fails. End events run
// in reverse listener order, so this runs before the printer reports the test's result.
class ValidationListener : public ::testing::EmptyTestEventListener {
  void OnTestStart(const ::testing::TestInfo&) override {
    // Messages from before this test (a previous test's static teardown, start-up) are not its own.
    auto msgs = meganeura::take_validation_messages();
    leftover_.insert(leftover_.end(), msgs.begin(), msgs.end());
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    auto msgs = meganeura::take_validation_messages();
    if (!msgs.empty()) ADD_FAILURE() << msgs.size() << " Vulkan validation message(s) during this test:" << join(msgs);
  }
  void OnTestProgramEnd(const ::testing::UnitTest&) override {
    auto msgs = meganeura::take_validation_messages();
    if (!leftover_.empty()) msgs.insert(msgs.begin(), leftover_.begin(), leftover_.end());
    if (!msgs.empty()) std::fprintf(stderr, "Vulkan validation messages outside tests:%s\n", join(msgs).c_str());
  }
  std::vector<std::string> leftover_;
};

class ValidationEnvironment : public ::testing::Environment {
 public:
  ValidationEnvironment() { setenv("MEGANEURA_VALIDATION", "1", 0); }
};

}  // namespace

int main(int argc, char** argv) {
  // Before any Vulkan instance exists. An explicit MEGANEURA_VALIDATION=0 in the environment is
  // kept, for debugging a binary by hand; ctest always sets it to 1.
  setenv("MEGANEURA_VALIDATION", "1", 0);
  // The tests compare with double references at f32 tolerances: no tensor cores unless a test
  // asks (matmul_tiers_test.cpp checks each tier at its own tolerance).
  setenv("MEGANEURA_MATMUL_PRECISION", "highest", 0);
  ::testing::InitGoogleMock(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new ValidationEnvironment);
  ::testing::UnitTest::GetInstance()->listeners().Append(new ValidationListener);
  return RUN_ALL_TESTS();
}
