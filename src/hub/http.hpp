// HTTP(S) through libcurl, no more than the hub client needs: a HEAD that does not follow
// redirects (the Hub puts a file's metadata in the first response), and a GET that follows them
// and streams the body. HTTP statuses come back to the caller; transport failures (no route,
// refused, TLS, a stalled or cut-off transfer) throw NetworkError with curl's message and the URL.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "meganeura/error.hpp"

namespace meganeura::hub {

struct NetworkError : HubError {
  explicit NetworkError(const std::string& what) : HubError("hub: " + what), detail(what) {}
  std::string detail;  // "GET <url>: <curl's message>"
};

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  int connect_timeout_s = 10;
  int stall_timeout_s = 30;  // abandon the request below 1 byte/s over this long
  int64_t range_from = 0;    // > 0: ask for the bytes from there on (Range: bytes=N-)
};

struct HttpResponse {
  long status = 0;
  std::string url;                                              // the URL that answered, after redirects
  std::map<std::string, std::string> headers;                   // names in lower case
  std::string header(const std::string& lowercase_name) const;  // "" when absent
};

// Receives the body of a GET's final response. `start` sees its status and headers first and
// returns whether to take the body (not for an error status); `write` gets the bytes in order.
// Either may throw: the transfer stops and http_get rethrows.
struct BodySink {
  std::function<bool(const HttpResponse&)> start;
  std::function<void(const char* data, size_t size)> write;
};

// Reads one header line as curl hands it over into `response`: a status line ("HTTP/...")
// starts a new response (after a redirect or a 100 Continue); returns true for the blank line
// that ends a response's headers. Exposed for the fuzz target (fuzz/hub_metadata.cpp).
bool read_header_line(HttpResponse& response, std::string line);

HttpResponse http_head(const HttpRequest& request);
// "http://127.0.0.1:8080/a/b" -> "http://127.0.0.1:8080": scheme, host and port.
std::string url_origin(const std::string& url);
HttpResponse http_get(const HttpRequest& request, const BodySink& sink);

}  // namespace meganeura::hub
