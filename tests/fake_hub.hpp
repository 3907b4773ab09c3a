// A Hugging Face Hub on 127.0.0.1 for the hub client's tests: an HTTP/1.1 server on an ephemeral
// port, in threads of the test process, serving repositories from memory the way the Hub does.
//   HEAD/GET /{org}/{name}/resolve/{revision}/{file}   revision: "main" or the repository's commit
//     regular file: 200, ETag "<git blob sha1>", Content-Length, X-Repo-Commit
//     LFS file:     302 to /cdn/<sha256> with X-Linked-Etag "<sha256>", X-Linked-Size, X-Repo-Commit
//     missing:      404 with X-Error-Code RepoNotFound, RevisionNotFound or EntryNotFound
//     gated repo without its token: 401 with X-Error-Code GatedRepo
//   GET /cdn/<sha256>   the bytes, with Range support
// Faults (on GETs of a file's bytes): cut the connection after N bytes, stall after N bytes,
// serve a corrupted copy, ignore Range. Every request is logged for the tests to inspect.
#pragma once
#include <gtest/gtest.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mntest {

class FakeHub {
 public:
  FakeHub();
  ~FakeHub();
  FakeHub(const FakeHub&) = delete;
  FakeHub& operator=(const FakeHub&) = delete;

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }

  // Adds or replaces a file; the repository exists once it has one. LFS files are named by the
  // sha256 of their content, others by their git blob sha1, as on the Hub.
  void put(const std::string& repo, const std::string& filename, const std::string& content, bool lfs = false);
  std::string commit(const std::string& repo) const;  // fixed per repository id
  std::string etag(const std::string& repo, const std::string& filename) const;
  void require_token(const std::string& repo, const std::string& token);         // a gated repository
  void redirect_repo(const std::string& old_repo, const std::string& new_repo);  // renamed: relative 307

  void drop_after(const std::string& filename, int64_t bytes, int times = 1);  // close mid-body
  void stall_after(const std::string& filename, int64_t bytes);                // then send nothing
  void corrupt(const std::string& filename, bool on);                          // one byte flipped
  void oversend(const std::string& filename, int64_t bytes);                   // more than announced
  void ignore_range(bool on);                                                  // 200 for every Range

  struct Request {
    std::string method, path, range, authorization;
  };
  std::vector<Request> requests() const;
  void clear_requests();
  // Requests with this method whose path ends with `path_end` ("" counts every one).
  int count(const std::string& method, const std::string& path_end = "") const;

 private:
  struct File {
    std::string content, etag;
    bool lfs = false;
  };
  struct Fault {
    int64_t drop_after = -1, stall_after = -1, oversend = 0;
    int drops_left = 0;
    bool corrupt = false;
  };
  void accept_loop();
  void serve(int fd);
  void respond(int fd, const Request& req);
  // The file's bytes (or the part a Range asks for) with `headers`, and this file's faults.
  void send_body(int fd, const std::string& method, const std::string& filename, const std::string& content,
                 const std::string& range, const std::string& headers);

  int listen_fd_ = -1, port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread acceptor_;
  std::vector<std::thread> connections_;
  mutable std::mutex mu_;
  std::condition_variable stopped_;
  std::map<std::string, std::map<std::string, File>> repos_;
  std::map<std::string, std::string> tokens_, renamed_;
  std::map<std::string, Fault> faults_;
  bool ignore_range_ = false;
  std::vector<Request> log_;
};

// Each test gets a fresh FakeHub, a temporary HF_HUB_CACHE and HF_HOME (no real token or cache
// of the machine is read), and HF_ENDPOINT pointing at the server; HF_TOKEN, HF_HUB_OFFLINE and
// proxy variables are cleared, and everything is restored afterwards.
class HubTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  void set_env(const char* name, const std::string& value);

  static inline const std::string kRepo = "org/tiny";  // most tests' repository
  FakeHub hub;
  std::filesystem::path dir, cache, home;

 private:
  std::map<std::string, std::pair<bool, std::string>> saved_env_;
};

// SHA-256 and a git blob's SHA-1 (of "blob <size>\0<content>"), as lowercase hex.
std::string sha256_of(const std::string& bytes);
std::string git_sha1_of(const std::string& content);
// Deterministic filler bytes, different for each seed.
std::string bytes_of(size_t n, uint32_t seed);
std::string read_file(const std::filesystem::path& path);

}  // namespace mntest
