// The Hugging Face Hub client against FakeHub, a local server shaped like the Hub: the cache
// layout huggingface_hub writes, what is and is not requested again, errors (404, 401),
// tokens, offline mode, the network gone, and snapshots of a single-file and a sharded model.
// Interrupted, corrupted and stalled transfers are in hub_resume_test.cpp.
#include "meganeura/hub.hpp"

#include <gmock/gmock.h>

#include <cstdlib>
#include <fstream>

#include "fake_hub.hpp"
#include "hub/sha256.hpp"
#include "test_util.hpp"

namespace mntest {
namespace {

namespace fs = std::filesystem;
namespace hub = meganeura::hub;
using ::testing::AllOf;
using ::testing::HasSubstr;

const std::string kConfig = R"({"model_type": "llama", "hidden_size": 8})";

// A commit hash in the cache's refs/, as huggingface_hub writes it (no newline).
std::string ref_of(const fs::path& cache, const std::string& repo_folder, const std::string& revision) {
  return read_file(cache / repo_folder / "refs" / revision);
}

TEST(HubSha256, KnownAnswers) {  // FIPS 180-2 test vectors
  EXPECT_EQ(hub::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(hub::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(hub::sha256_hex("abc"), sha256_of("abc"));  // the test server's own digest agrees
}

TEST_F(HubTest, CacheLayoutIsHuggingFaceHubs) {
  const std::string weights = bytes_of(300000, 1);
  hub.put(kRepo, "config.json", kConfig);
  hub.put(kRepo, "model.safetensors", weights, /*lfs=*/true);
  hub.put(kRepo, "sub/dir/extra.json", "{}");

  const fs::path config = hub::download(kRepo, "config.json");
  const fs::path model = hub::download(kRepo, "model.safetensors");
  const fs::path nested = hub::download(kRepo, "sub/dir/extra.json");

  const fs::path root = cache / "models--org--tiny";
  const std::string commit = hub.commit(kRepo);
  EXPECT_EQ(config, root / "snapshots" / commit / "config.json");
  EXPECT_EQ(model, root / "snapshots" / commit / "model.safetensors");
  EXPECT_EQ(nested, root / "snapshots" / commit / "sub/dir/extra.json");
  EXPECT_EQ(ref_of(cache, "models--org--tiny", "main"), commit);
  // Blobs named by ETag: the git blob sha1 of a regular file, the sha256 of an LFS file.
  EXPECT_EQ(read_file(root / "blobs" / git_sha1_of(kConfig)), kConfig);
  EXPECT_EQ(read_file(root / "blobs" / sha256_of(weights)), weights);
  // Snapshot entries are relative symlinks into blobs/.
  EXPECT_EQ(fs::read_symlink(config), fs::path("../../blobs") / git_sha1_of(kConfig));
  EXPECT_EQ(fs::read_symlink(model), fs::path("../../blobs") / sha256_of(weights));
  EXPECT_EQ(fs::read_symlink(nested), fs::path("../../../../blobs") / git_sha1_of("{}"));
  EXPECT_EQ(read_file(model), weights);
  EXPECT_FALSE(fs::exists(root / "blobs" / (sha256_of(weights) + ".incomplete")));
  EXPECT_TRUE(fs::exists(cache / ".locks" / "models--org--tiny" / (sha256_of(weights) + ".lock")));
  // The LFS file's bytes came from the "CDN" the HEAD redirected to.
  EXPECT_EQ(hub.count("GET", "/cdn/" + sha256_of(weights)), 1);
}

TEST_F(HubTest, CachedFileCostsOneHeadAndNoDownload) {
  hub.put(kRepo, "config.json", kConfig);
  const fs::path first = hub::download(kRepo, "config.json");
  hub.clear_requests();
  EXPECT_EQ(hub::download(kRepo, "config.json"), first);
  EXPECT_EQ(hub.count("HEAD"), 1);
  EXPECT_EQ(hub.count("GET"), 0);
  // At a commit hash the content cannot have changed: no request at all.
  hub.clear_requests();
  EXPECT_EQ(hub::download(kRepo, "config.json", {.revision = hub.commit(kRepo)}), first);
  EXPECT_TRUE(hub.requests().empty());
}

TEST_F(HubTest, MissingFileAndMissingRepositoryAreNamed) {
  hub.put(kRepo, "config.json", kConfig);
  const std::string file = message_of<meganeura::HubFileNotFoundError>([&] { hub::download(kRepo, "nope.json"); });
  EXPECT_THAT(file, AllOf(HasSubstr("nope.json"), HasSubstr(kRepo), HasSubstr("404"), HasSubstr(hub.endpoint())));
  // Remembered as huggingface_hub does, so offline runs know the file does not exist.
  EXPECT_TRUE(fs::exists(cache / "models--org--tiny/.no_exist" / hub.commit(kRepo) / "nope.json"));

  const std::string repo = message_of<meganeura::HubNotFoundError>([&] { hub::download("org/absent", "config.json"); });
  EXPECT_THAT(repo, AllOf(HasSubstr("repository org/absent not found"), HasSubstr("404")));
  try {
    hub::download("org/absent", "config.json");
  } catch (const meganeura::HubFileNotFoundError&) {
    ADD_FAILURE() << "a missing repository is not a missing file";
  } catch (const meganeura::HubNotFoundError&) {}

  const std::string rev =
      message_of<meganeura::HubNotFoundError>([&] { hub::download(kRepo, "config.json", {.revision = "v9"}); });
  EXPECT_THAT(rev, HasSubstr("revision v9 not found"));
  EXPECT_THAT(message_of<meganeura::HubError>([&] { hub::download("../evil", "config.json"); }),
              HasSubstr("not a repository id"));
  EXPECT_THAT(message_of<meganeura::HubError>([&] { hub::download(kRepo, "../../etc/passwd"); }),
              HasSubstr("not a file name"));
}

TEST_F(HubTest, GatedRepositoryNeedsHfToken) {
  hub.put("org/gated", "config.json", kConfig);
  hub.require_token("org/gated", "hf_secret");
  const std::string denied = message_of<meganeura::HubAuthError>([&] { hub::download("org/gated", "config.json"); });
  EXPECT_THAT(denied, AllOf(HasSubstr("org/gated"), HasSubstr("HF_TOKEN"), HasSubstr("401")));
  EXPECT_EQ(hub.requests().back().authorization, "");

  set_env("HF_TOKEN", "hf_wrong");
  EXPECT_THAT(message_of<meganeura::HubAuthError>([&] { hub::download("org/gated", "config.json"); }),
              HasSubstr("has no access"));

  set_env("HF_TOKEN", "hf_secret");
  hub.clear_requests();
  EXPECT_EQ(read_file(hub::download("org/gated", "config.json")), kConfig);
  EXPECT_EQ(hub.count("HEAD") + hub.count("GET"), 2);
  for (const auto& r : hub.requests()) EXPECT_EQ(r.authorization, "Bearer hf_secret") << r.method << " " << r.path;
}

TEST_F(HubTest, TokenFileInHfHomeIsUsed) {
  hub.put("org/gated", "config.json", kConfig);
  hub.require_token("org/gated", "hf_from_file");
  std::ofstream(home / "token") << "hf_from_file\n";  // as `hf auth login` leaves it
  EXPECT_EQ(read_file(hub::download("org/gated", "config.json")), kConfig);
  EXPECT_EQ(hub.requests().back().authorization, "Bearer hf_from_file");
}

TEST_F(HubTest, OfflineServesFromTheCacheAlone) {
  hub.put(kRepo, "config.json", kConfig);
  const fs::path online = hub::download(kRepo, "config.json");
  hub.clear_requests();
  set_env("HF_HUB_OFFLINE", "1");
  EXPECT_EQ(hub::download(kRepo, "config.json"), online);
  EXPECT_TRUE(hub.requests().empty());

  hub.put(kRepo, "tokenizer.json", "{}");
  const std::string miss = message_of<meganeura::HubError>([&] { hub::download(kRepo, "tokenizer.json"); });
  EXPECT_THAT(miss,
              AllOf(HasSubstr("offline"), HasSubstr("tokenizer.json"), HasSubstr("snapshots/" + hub.commit(kRepo))));
  const std::string no_ref =
      message_of<meganeura::HubError>([&] { hub::download(kRepo, "config.json", {.revision = "dev"}); });
  EXPECT_THAT(no_ref, AllOf(HasSubstr("no revision dev"), HasSubstr("refs/dev")));
  EXPECT_TRUE(hub.requests().empty());
}

TEST_F(HubTest, UnreachableHubFallsBackToTheCache) {
  hub.put(kRepo, "config.json", kConfig);
  const fs::path online = hub::download(kRepo, "config.json");
  set_env("HF_ENDPOINT", "http://127.0.0.1:1");  // nothing listens on port 1
  EXPECT_EQ(hub::download(kRepo, "config.json"), online);
  const std::string down = message_of<meganeura::HubError>([&] { hub::download(kRepo, "tokenizer.json"); });
  EXPECT_THAT(down, AllOf(HasSubstr("cannot reach the Hub"),
                          HasSubstr("http://127.0.0.1:1/org/tiny/resolve/main/tokenizer.json"),
                          HasSubstr("127.0.0.1 port 1")));  // curl's message
}

TEST_F(HubTest, RenamedRepositoryIsFollowed) {
  hub.put("org/new-name", "config.json", kConfig);
  hub.redirect_repo("org/old-name", "org/new-name");
  const fs::path p = hub::download("org/old-name", "config.json");
  EXPECT_EQ(read_file(p), kConfig);
  EXPECT_EQ(p.parent_path().parent_path().parent_path(),
            cache / "models--org--old-name");  // cached under the id asked for
}

TEST_F(HubTest, SnapshotOfAShardedModel) {
  const std::string shard1 = bytes_of(70000, 2), shard2 = bytes_of(50000, 3);
  const std::string index = R"({"metadata": {"total_size": 120000}, "weight_map": {
      "a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00002-of-00002.safetensors",
      "c.weight": "model-00001-of-00002.safetensors"}})";
  hub.put(kRepo, "config.json", kConfig);
  hub.put(kRepo, "tokenizer.json", R"({"model": {}})");
  hub.put(kRepo, "generation_config.json", "{}");  // tokenizer_config.json: absent, and optional
  hub.put(kRepo, "model.safetensors.index.json", index);
  hub.put(kRepo, "model-00001-of-00002.safetensors", shard1, true);
  hub.put(kRepo, "model-00002-of-00002.safetensors", shard2, true);

  const fs::path dir = hub::snapshot(kRepo);
  EXPECT_EQ(dir, cache / "models--org--tiny/snapshots" / hub.commit(kRepo));
  for (const char* f : {"config.json", "tokenizer.json", "generation_config.json", "model.safetensors.index.json"})
    EXPECT_TRUE(fs::is_symlink(dir / f)) << f;
  EXPECT_FALSE(fs::exists(dir / "tokenizer_config.json"));
  EXPECT_FALSE(fs::exists(dir / "model.safetensors"));
  EXPECT_EQ(read_file(dir / "model-00001-of-00002.safetensors"), shard1);
  EXPECT_EQ(read_file(dir / "model-00002-of-00002.safetensors"), shard2);
  EXPECT_EQ(hub.count("GET", "/cdn/" + sha256_of(shard1)), 1) << "a shard named twice in weight_map is fetched once";

  // Every file after the first is asked for at the commit "main" resolved to.
  for (const auto& r : hub.requests()) {
    if (r.path.find("/resolve/") != std::string::npos && r.path != "/org/tiny/resolve/main/config.json") {
      EXPECT_THAT(r.path, HasSubstr("/resolve/" + hub.commit(kRepo) + "/"));
    }
  }

  // Again: one HEAD (for config.json, to learn where main points), nothing else.
  hub.clear_requests();
  EXPECT_EQ(hub::snapshot(kRepo), dir);
  EXPECT_EQ(hub.count("HEAD"), 1);
  EXPECT_EQ(hub.count("GET"), 0);

  // Offline: the same snapshot, no request; the missing optional file is known to be missing.
  hub.clear_requests();
  set_env("HF_HUB_OFFLINE", "1");
  EXPECT_EQ(hub::snapshot(kRepo), dir);
  EXPECT_TRUE(hub.requests().empty());
}

TEST_F(HubTest, SnapshotOfASingleFileModelAndOfChosenFiles) {
  const std::string weights = bytes_of(40000, 4);
  hub.put(kRepo, "config.json", kConfig);
  hub.put(kRepo, "tokenizer.json", "{}");
  hub.put(kRepo, "tokenizer_config.json", "{}");
  hub.put(kRepo, "model.safetensors", weights, true);
  hub.put(kRepo, "README.md", "# tiny");
  const fs::path dir = hub::snapshot(kRepo);
  EXPECT_EQ(read_file(dir / "model.safetensors"), weights);
  EXPECT_TRUE(fs::exists(dir / "tokenizer_config.json"));
  EXPECT_EQ(hub.count("HEAD", "model.safetensors.index.json"), 0);
  EXPECT_FALSE(fs::exists(dir / "README.md"));

  EXPECT_EQ(hub::snapshot(kRepo, {"README.md"}), dir);
  EXPECT_EQ(read_file(dir / "README.md"), "# tiny");
  EXPECT_THROW(hub::snapshot(kRepo, {"README.md", "missing.bin"}), meganeura::HubFileNotFoundError);
}

TEST_F(HubTest, SnapshotWithoutWeightsSaysSo) {
  hub.put(kRepo, "config.json", kConfig);
  hub.put(kRepo, "tokenizer.json", "{}");
  EXPECT_THAT(message_of<meganeura::HubFileNotFoundError>([&] { hub::snapshot(kRepo); }),
              HasSubstr("neither model.safetensors nor model.safetensors.index.json"));
  set_env("HF_HUB_OFFLINE", "1");
  EXPECT_THAT(message_of<meganeura::HubError>([&] { hub::snapshot("org/never-seen"); }), HasSubstr("offline"));
}

TEST_F(HubTest, CacheDirectoryFollowsHfHomeAndXdg) {
  EXPECT_EQ(hub::cache_dir(), cache);
  set_env("HF_HUB_CACHE", "");
  EXPECT_EQ(hub::cache_dir(), home / "hub");
  set_env("HF_HOME", "");
  set_env("XDG_CACHE_HOME", (dir / "xdg").string());
  EXPECT_EQ(hub::cache_dir(), dir / "xdg/huggingface/hub");
  set_env("XDG_CACHE_HOME", "");
  if (const char* h = std::getenv("HOME")) {
    EXPECT_EQ(hub::cache_dir(), fs::path(h) / ".cache/huggingface/hub");
  }
  EXPECT_EQ(hub::cache_dir({.cache_dir = "/somewhere"}), "/somewhere");
}

}  // namespace
}  // namespace mntest
