#include "fake_hub.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/sha.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mntest {

namespace fs = std::filesystem;

namespace {

std::string hex(const unsigned char* digest, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) s += {kHex[digest[i] >> 4], kHex[digest[i] & 15]};
  return s;
}

std::string percent_decode(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::istringstream in(s);
  for (std::string p; std::getline(in, p, sep);) parts.push_back(p);
  return parts;
}

// Sends all of `data` (false: the client went away).
bool send_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, data, n, MSG_NOSIGNAL);
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}
bool send_all(int fd, const std::string& s) { return send_all(fd, s.data(), s.size()); }

std::string status_line(int status) {
  const char* reason = status == 200   ? "OK"
                       : status == 206 ? "Partial Content"
                       : status == 302 ? "Found"
                       : status == 307 ? "Temporary Redirect"
                       : status == 401 ? "Unauthorized"
                       : status == 404 ? "Not Found"
                       : status == 416 ? "Range Not Satisfiable"
                                       : "Error";
  return "HTTP/1.1 " + std::to_string(status) + " " + reason + "\r\n";
}

// A response without a body (HEAD, errors, redirects): headers and Content-Length 0.
void send_empty(int fd, int status, const std::string& headers) {
  send_all(fd, status_line(status) + headers + "Content-Length: 0\r\nConnection: close\r\n\r\n");
}

}  // namespace

std::string sha256_of(const std::string& bytes) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), d);
  return hex(d, sizeof d);
}

std::string git_sha1_of(const std::string& content) {
  const std::string object = "blob " + std::to_string(content.size()) + '\0' + content;
  unsigned char d[SHA_DIGEST_LENGTH];
  SHA1(reinterpret_cast<const unsigned char*>(object.data()), object.size(), d);
  return hex(d, sizeof d);
}

std::string bytes_of(size_t n, uint32_t seed) {
  std::string s(n, '\0');
  uint32_t x = seed * 2654435761u + 1;
  for (auto& c : s) {
    x ^= x << 13, x ^= x >> 17, x ^= x << 5;
    c = static_cast<char>(x);
  }
  return s;
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

FakeHub::FakeHub() {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;  // ephemeral
  socklen_t len = sizeof addr;
  if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(listen_fd_, 16) != 0 || ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
    throw std::runtime_error("FakeHub: cannot listen on 127.0.0.1");
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { accept_loop(); });
}

FakeHub::~FakeHub() {
  {
    std::lock_guard lock(mu_);  // a stalled response checks stop_ under the lock: no lost wake-up
    stop_ = true;
  }
  stopped_.notify_all();
  acceptor_.join();
  for (auto& t : connections_) t.join();
  ::close(listen_fd_);
}

void FakeHub::put(const std::string& repo, const std::string& filename, const std::string& content, bool lfs) {
  std::lock_guard lock(mu_);
  repos_[repo][filename] = File{content, lfs ? sha256_of(content) : git_sha1_of(content), lfs};
}

std::string FakeHub::commit(const std::string& repo) const { return sha256_of("commit of " + repo).substr(0, 40); }

std::string FakeHub::etag(const std::string& repo, const std::string& filename) const {
  std::lock_guard lock(mu_);
  return repos_.at(repo).at(filename).etag;
}

void FakeHub::require_token(const std::string& repo, const std::string& token) {
  std::lock_guard lock(mu_);
  tokens_[repo] = token;
}

void FakeHub::redirect_repo(const std::string& old_repo, const std::string& new_repo) {
  std::lock_guard lock(mu_);
  renamed_[old_repo] = new_repo;
}

void FakeHub::drop_after(const std::string& filename, int64_t bytes, int times) {
  std::lock_guard lock(mu_);
  faults_[filename].drop_after = bytes;
  faults_[filename].drops_left = times;
}

void FakeHub::stall_after(const std::string& filename, int64_t bytes) {
  std::lock_guard lock(mu_);
  faults_[filename].stall_after = bytes;
}

void FakeHub::oversend(const std::string& filename, int64_t bytes) {
  std::lock_guard lock(mu_);
  faults_[filename].oversend = bytes;
}

void FakeHub::corrupt(const std::string& filename, bool on) {
  std::lock_guard lock(mu_);
  faults_[filename].corrupt = on;
}

void FakeHub::ignore_range(bool on) {
  std::lock_guard lock(mu_);
  ignore_range_ = on;
}

std::vector<FakeHub::Request> FakeHub::requests() const {
  std::lock_guard lock(mu_);
  return log_;
}

void FakeHub::clear_requests() {
  std::lock_guard lock(mu_);
  log_.clear();
}

int FakeHub::count(const std::string& method, const std::string& path_end) const {
  int n = 0;
  for (const auto& r : requests())
    n += r.method == method && r.path.size() >= path_end.size() &&
         r.path.compare(r.path.size() - path_end.size(), path_end.size(), path_end) == 0;
  return n;
}

void FakeHub::accept_loop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) connections_.emplace_back([this, fd] { serve(fd); });
  }
}

// One request per connection ("Connection: close"), read up to the blank line (HEAD and GET
// have no body), answered, then the connection is closed.
void FakeHub::serve(int fd) {
  std::string head;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (head.find("\r\n\r\n") == std::string::npos && !stop_ && std::chrono::steady_clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 50) <= 0) continue;
    char buf[4096];
    const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    head.append(buf, static_cast<size_t>(n));
  }
  const auto lines = split(head.substr(0, head.find("\r\n\r\n")), '\n');
  if (!lines.empty()) {
    Request req;
    std::istringstream first(lines[0]);
    first >> req.method >> req.path;
    for (size_t i = 1; i < lines.size(); ++i) {
      std::string line = lines[i];
      if (!line.empty() && line.back() == '\r') line.pop_back();
      const auto colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon), value = line.substr(line.find_first_not_of(' ', colon + 1));
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      if (name == "range") req.range = value;
      if (name == "authorization") req.authorization = value;
    }
    {
      std::lock_guard lock(mu_);
      log_.push_back(req);
    }
    respond(fd, req);
  }
  ::shutdown(fd, SHUT_WR);  // FIN, not RST: the client reads everything that was sent
  ::close(fd);
}

void FakeHub::respond(int fd, const Request& req) {
  const std::string path = req.path.substr(0, req.path.find('?'));
  if (path.rfind("/cdn/", 0) == 0) {  // an LFS file's bytes, by sha256
    std::string filename, content;
    {
      std::lock_guard lock(mu_);
      for (const auto& [repo, files] : repos_)
        for (const auto& [name, f] : files)
          if (f.lfs && f.etag == path.substr(5)) filename = name, content = f.content;
    }
    if (filename.empty()) return send_empty(fd, 404, "");
    return send_body(fd, req.method, filename, content, req.range, "");
  }
  const auto parts = split(path.substr(1), '/');
  if (parts.size() < 5 || parts[2] != "resolve") return send_empty(fd, 404, "");
  const std::string repo = parts[0] + "/" + parts[1], revision = percent_decode(parts[3]);
  std::string filename = percent_decode(parts[4]);
  for (size_t i = 5; i < parts.size(); ++i) filename.append("/").append(percent_decode(parts[i]));

  std::unique_lock lock(mu_);
  if (renamed_.count(repo)) {  // as the Hub answers for a renamed repository: a relative redirect
    const std::string to = "/" + renamed_[repo] + path.substr(1 + repo.size());
    lock.unlock();
    return send_empty(fd, 307, "Location: " + to + "\r\n");
  }
  if (!repos_.count(repo)) {
    lock.unlock();
    return send_empty(fd, 404, "X-Error-Code: RepoNotFound\r\nX-Error-Message: Repository not found\r\n");
  }
  if (tokens_.count(repo) && req.authorization != "Bearer " + tokens_[repo]) {
    lock.unlock();
    return send_empty(fd, 401,
                      "X-Error-Code: GatedRepo\r\nX-Error-Message: Access to model " + repo + " is restricted.\r\n");
  }
  const std::string commit_header = "X-Repo-Commit: " + commit(repo) + "\r\n";
  if (revision != "main" && revision != commit(repo)) {
    lock.unlock();
    return send_empty(fd, 404,
                      "X-Error-Code: RevisionNotFound\r\nX-Error-Message: Invalid rev id: " + revision + "\r\n");
  }
  const auto it = repos_[repo].find(filename);
  if (it == repos_[repo].end()) {
    lock.unlock();
    return send_empty(fd, 404, commit_header + "X-Error-Code: EntryNotFound\r\nX-Error-Message: Entry not found\r\n");
  }
  const File f = it->second;
  lock.unlock();
  if (f.lfs)  // the Hub sends LFS files' bytes from a CDN; its metadata comes with the redirect
    return send_empty(fd, 302,
                      commit_header + "X-Linked-Etag: \"" + f.etag + "\"\r\nX-Linked-Size: " +
                          std::to_string(f.content.size()) + "\r\nETag: \"" + git_sha1_of("pointer " + f.etag) +
                          "\"\r\nLocation: " + endpoint() + "/cdn/" + f.etag + "\r\n");
  send_body(fd, req.method, filename, f.content, req.range, commit_header + "ETag: \"" + f.etag + "\"\r\n");
}

void FakeHub::send_body(int fd, const std::string& method, const std::string& filename, const std::string& content,
                        const std::string& range, const std::string& headers) {
  Fault fault;
  bool ignore_range = false;
  {
    std::lock_guard lock(mu_);
    fault = faults_[filename];
    if (method == "GET" && faults_[filename].drops_left > 0) --faults_[filename].drops_left;
    ignore_range = ignore_range_;
  }
  std::string body = content;
  if (fault.corrupt && !body.empty()) body[body.size() / 2] ^= 0x5a;
  int status = 200;
  std::string extra = headers + "Accept-Ranges: bytes\r\n";
  if (!range.empty() && !ignore_range && range.rfind("bytes=", 0) == 0) {
    const size_t from = std::stoull(range.substr(6));
    if (from >= body.size())
      return send_empty(fd, 416, "Content-Range: bytes */" + std::to_string(body.size()) + "\r\n");
    status = 206;
    extra += "Content-Range: bytes " + std::to_string(from) + "-" + std::to_string(body.size() - 1) + "/" +
             std::to_string(body.size()) + "\r\n";
    body = body.substr(from);
  }
  body.append(static_cast<size_t>(fault.oversend), 'x');  // past the size the Hub announced
  if (!send_all(fd, status_line(status) + extra + "Content-Length: " + std::to_string(body.size()) +
                        "\r\nConnection: close\r\n\r\n"))
    return;
  if (method != "GET") return;
  if (fault.drops_left > 0 && fault.drop_after >= 0) {  // cut the connection mid-body
    send_all(fd, body.data(), std::min(body.size(), static_cast<size_t>(fault.drop_after)));
    return;
  }
  if (fault.stall_after >= 0) {  // part of the body, then silence until the server stops
    send_all(fd, body.data(), std::min(body.size(), static_cast<size_t>(fault.stall_after)));
    std::unique_lock lock(mu_);
    stopped_.wait_for(lock, std::chrono::seconds(30), [this] { return stop_.load(); });
    return;
  }
  send_all(fd, body);
}

void HubTest::set_env(const char* name, const std::string& value) {
  if (!saved_env_.count(name)) {
    const char* old = std::getenv(name);
    saved_env_[name] = {old != nullptr, old ? old : ""};
  }
  if (value.empty())
    ::unsetenv(name);
  else
    ::setenv(name, value.c_str(), 1);
}

void HubTest::SetUp() {
  static int counter = 0;
  dir = fs::temp_directory_path() /
        ("meganeura-hub-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++));
  fs::remove_all(dir);
  cache = dir / "hub";
  home = dir / "home";
  fs::create_directories(home);
  for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_TOKEN_PATH", "HF_HUB_OFFLINE",
                           "TRANSFORMERS_OFFLINE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME", "http_proxy",
                           "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "all_proxy", "ALL_PROXY"})
    set_env(name, "");
  set_env("HF_ENDPOINT", hub.endpoint());
  set_env("HF_HUB_CACHE", cache.string());
  set_env("HF_HOME", home.string());
}

void HubTest::TearDown() {
  for (const auto& [name, old] : saved_env_) {
    if (old.first)
      ::setenv(name.c_str(), old.second.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
}

}  // namespace mntest
