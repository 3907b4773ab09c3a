// Transfers that go wrong, against FakeHub: a connection cut mid-file (the part is kept, and the
// next call resumes it with a Range request), a server that ignores Range (a clean restart),
// corrupted bytes (sha256 mismatch: nothing enters the cache), a server that stalls (a timeout,
// not a hang); and the progress line of a large file.
#include <gmock/gmock.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "fake_hub.hpp"
#include "meganeura/hub.hpp"
#include "test_util.hpp"

namespace mntest {
namespace {

namespace fs = std::filesystem;
namespace hub = meganeura::hub;
using ::testing::AllOf;
using ::testing::HasSubstr;

const hub::HubOptions kNoRetry{.progress = false, .retries = 0};

class HubResumeTest : public HubTest {
 protected:
  void SetUp() override {
    HubTest::SetUp();
    weights = bytes_of(300000, 7);
    hub.put(kRepo, "model.safetensors", weights, /*lfs=*/true);
    sha = sha256_of(weights);
    blobs = cache / "models--org--tiny/blobs";
  }
  fs::path part() const { return blobs / (sha + ".incomplete"); }
  fs::path pointer() const { return cache / "models--org--tiny/snapshots" / hub.commit(kRepo) / "model.safetensors"; }
  std::vector<std::string> ranges() const {
    std::vector<std::string> r;
    for (const auto& req : hub.requests())
      if (req.method == "GET") r.push_back(req.range);
    return r;
  }

  std::string weights, sha;
  fs::path blobs;
};

TEST_F(HubResumeTest, InterruptedDownloadKeepsItsPartAndTheNextCallResumesIt) {
  hub.drop_after("model.safetensors", 100000);
  const std::string broke =
      message_of<meganeura::HubError>([&] { hub::download(kRepo, "model.safetensors", kNoRetry); });
  EXPECT_THAT(broke, AllOf(HasSubstr("model.safetensors of org/tiny"), HasSubstr("broke off"), HasSubstr("resume"),
                           HasSubstr(hub.endpoint() + "/cdn/" + sha)));
  ASSERT_TRUE(fs::exists(part()));
  EXPECT_EQ(fs::file_size(part()), 100000u);
  EXPECT_FALSE(fs::exists(blobs / sha));
  EXPECT_FALSE(fs::exists(pointer()));

  hub.clear_requests();
  EXPECT_EQ(read_file(hub::download(kRepo, "model.safetensors", kNoRetry)), weights);
  EXPECT_THAT(ranges(), ::testing::ElementsAre("bytes=100000-"));
  EXPECT_FALSE(fs::exists(part()));
  EXPECT_EQ(read_file(blobs / sha), weights);
}

TEST_F(HubResumeTest, ACutConnectionIsResumedWithinTheSameCall) {
  hub.drop_after("model.safetensors", 120000, /*times=*/2);
  EXPECT_EQ(read_file(hub::download(kRepo, "model.safetensors", {.progress = false, .retries = 2})), weights);
  EXPECT_THAT(ranges(), ::testing::ElementsAre("", "bytes=120000-", "bytes=240000-"));
}

TEST_F(HubResumeTest, ServerThatIgnoresRangeRestartsFromZero) {
  hub.drop_after("model.safetensors", 50000);
  EXPECT_THROW(hub::download(kRepo, "model.safetensors", kNoRetry), meganeura::HubError);
  ASSERT_EQ(fs::file_size(part()), 50000u);
  hub.ignore_range(true);
  hub.clear_requests();
  EXPECT_EQ(read_file(hub::download(kRepo, "model.safetensors", kNoRetry)), weights);
  EXPECT_THAT(ranges(), ::testing::ElementsAre("bytes=50000-"));  // asked, answered with the whole file
}

TEST_F(HubResumeTest, ResumedPartFromAnotherFileIsDiscardedBySha256) {
  // A part that is not a prefix of the file (say, bytes from a changed upload) fails the check.
  fs::create_directories(blobs);
  std::FILE* f = std::fopen(part().c_str(), "wb");
  std::fputs("not the right bytes", f);
  std::fclose(f);
  EXPECT_THROW(hub::download(kRepo, "model.safetensors", kNoRetry), meganeura::HubError);
  EXPECT_FALSE(fs::exists(part()));
  EXPECT_EQ(read_file(hub::download(kRepo, "model.safetensors", kNoRetry)), weights);
}

TEST_F(HubResumeTest, CorruptedFileIsRejectedAndNothingEntersTheCache) {
  hub.corrupt("model.safetensors", true);
  const std::string message =
      message_of<meganeura::HubError>([&] { hub::download(kRepo, "model.safetensors", kNoRetry); });
  std::string bad = weights;
  bad[bad.size() / 2] ^= 0x5a;
  EXPECT_THAT(message, AllOf(HasSubstr("model.safetensors of org/tiny"), HasSubstr("corrupt"),
                             HasSubstr("its sha256 is " + sha256_of(bad)), HasSubstr("the Hub's is " + sha)));
  EXPECT_FALSE(fs::exists(blobs / sha));
  EXPECT_FALSE(fs::exists(part()));
  EXPECT_FALSE(fs::exists(pointer()));

  hub.corrupt("model.safetensors", false);
  EXPECT_EQ(read_file(hub::download(kRepo, "model.safetensors", kNoRetry)), weights);
}

TEST_F(HubResumeTest, StalledServerTimesOutInsteadOfHanging) {
  hub.stall_after("model.safetensors", 0);  // headers, then silence
  const auto start = std::chrono::steady_clock::now();
  const hub::HubOptions impatient{.progress = false, .retries = 0, .stall_timeout_s = 1};
  EXPECT_THAT(message_of<meganeura::HubError>([&] { hub::download(kRepo, "model.safetensors", impatient); }),
              AllOf(HasSubstr("broke off"), HasSubstr("Operation too slow")));
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(fs::exists(part()));
}

// A process killed (SIGKILL) in the middle of a file: its .incomplete part and its lock stay
// behind; the next download takes the lock, resumes from the part with a Range request and
// produces the exact file, checked by sha256. Three random cut points, each in a fresh cache.
TEST_F(HubResumeTest, DownloadKilledMidFileResumesToTheExactFile) {
  Rng rng;
  SCOPED_TRACE(seed_note(rng.seed()));
  for (int round = 0; round < 3; ++round) {
    const auto cut = static_cast<int64_t>(rng.integer(1, static_cast<int64_t>(weights.size()) - 1));
    SCOPED_TRACE("killed after " + std::to_string(cut) + " bytes");
    fs::remove_all(cache);
    hub.stall_after("model.safetensors", cut);  // the bytes up to the cut, then silence
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {  // only the download: no gtest, no exit handlers
      try {
        hub::download(kRepo, "model.safetensors", {.progress = false, .retries = 0, .stall_timeout_s = 60});
      } catch (...) {}
      std::_Exit(0);
    }
    std::error_code ec;
    for (int i = 0; i < 1000 && static_cast<int64_t>(fs::file_size(part(), ec)) != cut; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << "the child finished before it was killed";
    ASSERT_EQ(fs::file_size(part()), static_cast<uintmax_t>(cut));
    EXPECT_FALSE(fs::exists(blobs / sha));

    hub.stall_after("model.safetensors", -1);
    hub.clear_requests();
    EXPECT_TRUE(read_file(hub::download(kRepo, "model.safetensors", kNoRetry)) == weights);
    EXPECT_THAT(ranges(), ::testing::ElementsAre("bytes=" + std::to_string(cut) + "-"));
    EXPECT_FALSE(fs::exists(part()));
    EXPECT_EQ(sha256_of(read_file(blobs / sha)), sha);
  }
}

// A server that sends more than the size the Hub announced is cut off at that size (not after
// filling the disk), and nothing enters the cache.
TEST_F(HubResumeTest, ABodyLongerThanAnnouncedIsCutOffAndDeleted) {
  hub.oversend("model.safetensors", 8 << 20);
  EXPECT_THAT(
      message_of<meganeura::HubError>([&] { hub::download(kRepo, "model.safetensors", kNoRetry); }),
      AllOf(HasSubstr("model.safetensors of org/tiny"), HasSubstr("runs past the 300000 bytes the Hub announced")));
  EXPECT_FALSE(fs::exists(blobs / sha));
  std::error_code ec;
  EXPECT_EQ(fs::file_size(part(), ec), 0u) << "the part holds what the server sent past the end";
  hub.oversend("model.safetensors", 0);
  EXPECT_TRUE(read_file(hub::download(kRepo, "model.safetensors", kNoRetry)) == weights);
}

TEST_F(HubResumeTest, LargeDownloadDrawsAByteProgressLine) {
  const std::string big = bytes_of(1500000, 9);
  hub.put(kRepo, "big.safetensors", big, true);
  ::testing::internal::CaptureStderr();
  hub::download(kRepo, "big.safetensors");
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, AllOf(HasSubstr("big.safetensors"), HasSubstr("1.5/1.5 MB"), HasSubstr("/s | ")));
}

}  // namespace
}  // namespace mntest
