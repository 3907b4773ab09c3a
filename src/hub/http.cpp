#include "hub/http.hpp"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>

namespace meganeura::hub {

namespace {

void global_init() {
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (result != CURLE_OK) throw NetworkError(std::string("cannot initialise libcurl: ") + curl_easy_strerror(result));
}

std::string trim(std::string s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace

bool read_header_line(HttpResponse& response, std::string line) {
  line = trim(std::move(line));
  if (line.rfind("HTTP/", 0) == 0) {  // a new response (after a redirect, or a 100 Continue)
    response.headers.clear();
    const auto space = line.find(' ');
    // strtol, not atol: a status too large for a long is then LONG_MAX, not undefined behaviour.
    response.status = space == std::string::npos ? 0 : std::strtol(line.c_str() + space + 1, nullptr, 10);
    return false;
  }
  if (line.empty()) return true;
  const auto colon = line.find(':');
  if (colon == std::string::npos) return false;
  std::string name = line.substr(0, colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  response.headers[name] = trim(line.substr(colon + 1));
  return false;
}

namespace {

// One transfer's state, shared with curl's C callbacks; exceptions thrown by the sink wait here
// until curl has returned (they must not unwind through C code).
struct Transfer {
  const BodySink* sink = nullptr;
  bool follows_redirects = false;
  HttpResponse response;
  bool started = false, taking_body = false;
  std::exception_ptr error;

  // Called for each header line, the status line of each response and the blank line that ends it.
  void on_header(std::string line) {
    if (!read_header_line(response, std::move(line))) return;
    // End of one response's headers: is it the one whose body we want?
    const bool interim = response.status >= 100 && response.status < 200;
    const bool redirected =
        follows_redirects && response.status >= 300 && response.status < 400 && !response.header("location").empty();
    if (interim || redirected || started || !sink) return;
    started = true;
    taking_body = sink->start(response);
  }

  static size_t header_callback(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    try {
      t->on_header(std::string(data, size * count));
    } catch (...) {
      t->error = std::current_exception();
      return 0;  // stops the transfer
    }
    return size * count;
  }

  static size_t write_callback(char* data, size_t size, size_t count, void* self) {
    auto* t = static_cast<Transfer*>(self);
    if (!t->taking_body) return size * count;  // an error page: not the file
    try {
      t->sink->write(data, size * count);
    } catch (...) {
      t->error = std::current_exception();
      return 0;
    }
    return size * count;
  }
};

HttpResponse perform(const HttpRequest& request, bool head, const BodySink* sink) {
  global_init();
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> curl(curl_easy_init(), curl_easy_cleanup);
  if (!curl) throw NetworkError("cannot create a libcurl handle for " + request.url);
  curl_slist* list = nullptr;
  for (const auto& h : request.headers) list = curl_slist_append(list, h.c_str());
  // Sizes and hashes are of the file's own bytes: never a compressed encoding.
  list = curl_slist_append(list, "Accept-Encoding: identity");
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> headers(list, curl_slist_free_all);

  Transfer t;
  t.sink = sink;
  t.follows_redirects = !head;
  char error_text[CURL_ERROR_SIZE] = "";
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, request.url.c_str());
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_USERAGENT, "meganeura/" MEGANEURA_VERSION);
  curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: safe in threaded programs
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, static_cast<long>(request.connect_timeout_s));
  // "Less than 1 byte/s for stall_timeout_s seconds" is curl's stall detector: no hang, however
  // long a healthy transfer of a large file takes.
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, static_cast<long>(request.stall_timeout_s));
  curl_easy_setopt(c, CURLOPT_ERRORBUFFER, error_text);
  curl_easy_setopt(c, CURLOPT_SUPPRESS_CONNECT_HEADERS,
                   1L);  // a proxy's "200 Connection established" is not the answer
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, &Transfer::header_callback);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, &Transfer::write_callback);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &t);
  if (head) {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else {
    // curl sends the Authorization header only to the host it was given, not to a CDN a
    // redirect leads to (which is what huggingface_hub does too).
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_MAXREDIRS, 10L);
  }
  const std::string range = std::to_string(request.range_from) + "-";
  if (request.range_from > 0) curl_easy_setopt(c, CURLOPT_RANGE, range.c_str());

  const CURLcode code = curl_easy_perform(c);
  if (t.error) std::rethrow_exception(t.error);
  if (code != CURLE_OK)
    throw NetworkError(std::string(head ? "HEAD " : "GET ") + request.url + ": " +
                       (*error_text ? error_text : curl_easy_strerror(code)));
  char* effective = nullptr;
  curl_easy_getinfo(c, CURLINFO_EFFECTIVE_URL, &effective);
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &t.response.status);
  t.response.url = effective ? effective : request.url;
  return t.response;
}

}  // namespace

std::string HttpResponse::header(const std::string& lowercase_name) const {
  auto it = headers.find(lowercase_name);
  return it == headers.end() ? "" : it->second;
}

std::string url_origin(const std::string& url) {
  const auto scheme = url.find("://");
  const auto path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  return path == std::string::npos ? url : url.substr(0, path);
}

HttpResponse http_head(const HttpRequest& request) { return perform(request, /*head=*/true, nullptr); }

HttpResponse http_get(const HttpRequest& request, const BodySink& sink) {
  return perform(request, /*head=*/false, &sink);
}

}  // namespace meganeura::hub
