// Saves that fail: a full disk (ENOSPC injected at many byte offsets, io::fail_writes_after) and
// a process killed with SIGKILL at random points, during write_safetensors, a sharded
// write_checkpoint and Session::save. Afterwards the previous file must load bit-identically,
// or the new one be complete — never a mix of the two, never a torn file.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fashion_mlp.hpp"
#include "file_fixtures.hpp"
#include "io/file.hpp"
#include "meganeura/meganeura.hpp"
#include "test_util.hpp"

namespace {

using namespace meganeura;
using mntest::read_bytes;
using mntest::TempDir;
using ::testing::AllOf;
using ::testing::HasSubstr;
namespace fs = std::filesystem;

// Generation g of a checkpoint: four tensors of 64 Ki floats (1 MiB in all), every value g.
TensorFile generation(int g) {
  TensorFile f;
  for (const char* name : {"a", "b", "c", "d"})
    f.tensors[name] = HostTensor::f32s({1 << 16}, std::vector<float>(1 << 16, float(g)));
  f.metadata["generation"] = std::to_string(g);
  return f;
}

// The generation every tensor of the checkpoint at `path` holds; fails the test on a mix.
int generation_of(const std::string& path) {
  Checkpoint c = Checkpoint::open(path);
  std::set<float> seen;
  for (const std::string& name : c.names())
    for (float v : c.read(name, f32).to_f32()) seen.insert(v);
  EXPECT_EQ(seen.size(), 1u) << path << " mixes generations";
  EXPECT_EQ(c.names().size(), 4u);
  return seen.empty() ? -1 : static_cast<int>(*seen.begin());
}

std::set<std::string> files_in(const fs::path& dir) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.insert(e.path().filename().string());
  return names;
}

std::string snapshot(const fs::path& dir) {  // every file's name and bytes
  std::string all;
  for (const std::string& name : files_in(dir)) all += name + "\n" + read_bytes((dir / name).string());
  return all;
}

// Byte offsets to fail at: the first bytes, every header boundary, and 40 spread through.
std::vector<uint64_t> failure_points(uint64_t size) {
  std::vector<uint64_t> at{0, 1, 7, 8, 9, 100};
  for (uint64_t i = 1; i < 40; ++i) at.push_back(size * i / 40);
  at.push_back(size - 1);
  return at;
}

struct NoFullDisk {
  ~NoFullDisk() { io::fail_writes_after(UINT64_MAX); }
};

TEST(FullDisk, WriteSafetensorsKeepsThePreviousFile) {
  NoFullDisk reset;
  TempDir dir;
  const std::string path = dir / "ckpt.safetensors";
  write_safetensors(path, generation(1));
  const std::string old = read_bytes(path);
  for (uint64_t k : failure_points(old.size())) {
    SCOPED_TRACE("the disk full after " + std::to_string(k) + " bytes");
    io::fail_writes_after(k);
    EXPECT_THAT(mntest::message_of<Error>([&] { write_safetensors(path, generation(2)); }),
                AllOf(HasSubstr("cannot write " + path), HasSubstr("No space left on device")));
    EXPECT_TRUE(read_bytes(path) == old);
    EXPECT_EQ(files_in(dir.path()), std::set<std::string>{"ckpt.safetensors"}) << "a temp file was left behind";
  }
  io::fail_writes_after(UINT64_MAX);
  write_safetensors(path, generation(2));  // room again: the save goes through
  EXPECT_EQ(generation_of(path), 2);
}

TEST(FullDisk, ShardedCheckpointKeepsThePreviousOne) {
  NoFullDisk reset;
  TempDir dir;
  const uint64_t shard = 600'000;  // two tensors a shard: two shards and an index
  write_checkpoint(dir.path(), generation(1), shard);
  const std::string old = snapshot(dir.path());
  uint64_t bytes = 0;  // a save writes as much
  for (const std::string& name : files_in(dir.path())) bytes += fs::file_size(dir.path() / name);
  for (uint64_t k : failure_points(bytes)) {
    SCOPED_TRACE("the disk full after " + std::to_string(k) + " bytes");
    io::fail_writes_after(k);
    EXPECT_THAT(mntest::message_of<Error>([&] { write_checkpoint(dir.path(), generation(2), shard); }),
                HasSubstr("No space left on device"));
    EXPECT_TRUE(snapshot(dir.path()) == old) << "the failed save changed the directory";
  }
  io::fail_writes_after(UINT64_MAX);
  write_checkpoint(dir.path(), generation(2), shard);
  EXPECT_EQ(generation_of(dir.path()), 2);
  write_checkpoint(dir.path(), generation(3), shard);  // and over its own shards' names
  EXPECT_EQ(generation_of(dir.path()), 3);
  EXPECT_EQ(files_in(dir.path()).size(), 3u) << "the replaced checkpoint's shards were not removed";
}

// A child saving generation after generation (forked: it only writes files) is killed after a
// random delay; the checkpoint must be one whole generation (every value of every tensor the
// same: the previous one, 0, or a newer one), never torn or mixed. Killed children leave their
// temp files (and a sharded save its unreferenced shards), which the next save reuses.
void kill_during_saves(const std::function<void(int)>& save, const std::string& read_path, int kills) {
  mntest::Rng rng;
  SCOPED_TRACE(mntest::seed_note(rng.seed()));
  save(0);
  int torn_or_mixed = 0, first_intact = 0, later = 0;
  for (int i = 0; i < kills; ++i) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (int g = 1;; ++g) save(g);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng.integer(0, 40'000)));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status));
    try {
      const int g = generation_of(read_path);
      g == 0 ? ++first_intact : ++later;
    } catch (const Error& e) {
      ++torn_or_mixed;
      ADD_FAILURE() << "kill " << i << ": " << e.what();
    }
    // Back to generation 0 for the next kill, which must then survive bit for bit too.
    save(0);
  }
  std::printf("%d kills: %d left the previous checkpoint, %d a newer whole one, %d a broken one\n", kills, first_intact,
              later, torn_or_mixed);
}

TEST(KilledSave, WriteSafetensors) {
  TempDir dir;
  const std::string path = dir / "ckpt.safetensors";
  kill_during_saves([&](int g) { write_safetensors(path, generation(g)); }, path, 30);
}

TEST(KilledSave, ShardedWriteCheckpoint) {
  TempDir dir;
  kill_during_saves([&](int g) { write_checkpoint(dir.path(), generation(g), 600'000); },
                    dir / "model.safetensors.index.json", 30);
}

// A training session (Fashion-MNIST-shaped MLP, AdamW) with a batch set.
Session mlp_session(const mntest::FashionMlp& m) {
  Session s = m.session(AdamW{.lr = 1e-3f});
  s.set_input("x", std::vector<float>(16 * 784, 0.5f));
  s.set_input("y", HostTensor::i32s({16}, std::vector<int32_t>(16, 3)));
  return s;
}

// That session stepped once and saved.
struct SavedMlp {
  mntest::FashionMlp m{16, 128};
  TempDir dir;
  std::string path = dir / "mlp.safetensors";
  Session s = mlp_session(m);
  std::string first;  // the checkpoint's bytes

  SavedMlp() {
    s.step();
    s.save(path);
    first = read_bytes(path);
  }
};

TEST(FullDisk, SessionSaveKeepsThePreviousCheckpointAndTheSessionGoesOn) {
  NoFullDisk reset;
  SavedMlp saved;
  Session& s = saved.s;
  const std::string& path = saved.path;
  const std::string& old = saved.first;
  s.step();
  for (uint64_t k : {uint64_t{0}, uint64_t{4096}, uint64_t{old.size() / 2}, uint64_t{old.size() - 1}}) {
    io::fail_writes_after(k);
    EXPECT_THAT(mntest::message_of<Error>([&] { s.save(path); }), HasSubstr("No space left on device"));
    EXPECT_TRUE(read_bytes(path) == old);
  }
  io::fail_writes_after(UINT64_MAX);
  s.step();  // usable
  s.save(path);
  s.load(path);
  EXPECT_EQ(s.optimizer_steps(), 3);
}

constexpr const char* kChildPath = "MEGANEURA_TEST_SAVE_LOOP_PATH";

// Run only as the child of SessionSave below: trains on and saves over the checkpoint in a loop
// until it is killed, touching `<path>.ready` once it is in the loop.
TEST(KilledSave, DISABLED_SessionSaveLoopChild) {
  const char* path = std::getenv(kChildPath);
  if (!path) GTEST_SKIP() << "run by KilledSave.SessionSave";
  const mntest::FashionMlp m(16, 128);
  Session s = mlp_session(m);
  s.load(path);
  std::fclose(std::fopen((std::string(path) + ".ready").c_str(), "w"));
  for (;;) {
    s.step();
    s.save(path);
  }
}

TEST(KilledSave, SessionSave) {
  mntest::Rng rng;
  SCOPED_TRACE(mntest::seed_note(rng.seed()));
  SavedMlp saved;
  Session& s = saved.s;
  const TempDir& dir = saved.dir;
  const std::string& path = saved.path;
  const std::string& first = saved.first;
  int intact = 0, newer = 0;
  for (int i = 0; i < 6; ++i) {
    fs::remove(path + ".ready");
    const int child = mntest::spawn_self_child("KilledSave.DISABLED_SessionSaveLoopChild", {kChildPath},
                                               {std::string(kChildPath) + "=" + path}, dir / "child.log");
    ASSERT_GT(child, 0);
    for (int wait = 0; !fs::exists(path + ".ready") && wait < 3000; ++wait)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(fs::exists(path + ".ready")) << read_bytes(dir / "child.log");
    std::this_thread::sleep_for(std::chrono::microseconds(rng.integer(0, 400'000)));
    ::kill(child, SIGKILL);
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    ASSERT_TRUE(WIFSIGNALED(status)) << read_bytes(dir / "child.log");
    const std::string now = read_bytes(path);
    now == first ? ++intact : ++newer;
    EXPECT_NO_THROW(s.load(path)) << "kill " << i;                     // whole, whichever it is
    std::ofstream(path, std::ios::binary | std::ios::trunc) << first;  // back to the first for the next kill
  }
  std::printf("6 kills during Session::save: %d left the previous checkpoint, %d a newer whole one\n", intact, newer);
}

}  // namespace
