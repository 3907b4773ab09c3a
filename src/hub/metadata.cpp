#include "hub/metadata.hpp"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "hub/cache_layout.hpp"

namespace meganeura::hub {

namespace {

// Python's urllib.parse.quote: letters, digits and "_.-~" stay, and the characters in `safe`.
std::string quote(const std::string& s, const char* safe) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '_' || c == '.' || c == '-' || c == '~' || (c && std::strchr(safe, c))) {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// ETags come quoted, sometimes weak (W/"..."); the blob's name is what is inside the quotes.
std::string unquote_etag(std::string etag) {
  if (etag.rfind("W/", 0) == 0) etag = etag.substr(2);
  if (etag.size() >= 2 && etag.front() == '"' && etag.back() == '"') etag = etag.substr(1, etag.size() - 2);
  return etag;
}

int64_t size_header(const std::string& value) {
  if (value.empty() || value.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::strtoll(value.c_str(), nullptr, 10);
}

std::string hub_message(const HttpResponse& r) {
  const std::string m = r.header("x-error-message");
  return m.empty() ? "" : " (the Hub says: " + m + ")";
}

}  // namespace

std::string FileRef::describe() const { return filename + " of " + repo_id + " (revision " + revision + ")"; }

std::string resolve_url(const Settings& settings, const FileRef& file) {
  return settings.endpoint + "/" + file.repo_id + "/resolve/" + quote(file.revision, "") + "/" +
         quote(file.filename, "/");
}

std::vector<std::string> hub_headers(const Settings& settings) {
  if (settings.token.empty()) return {};
  return {"Authorization: Bearer " + settings.token};
}

void throw_http_error(const HttpResponse& r, const std::string& url, const FileRef& file, bool sent_token) {
  const std::string code = r.header("x-error-code");
  const std::string status = "HTTP " + std::to_string(r.status) + " for " + url;
  if (r.status == 401 || r.status == 403) {
    // The Hub answers 401 alike for private, gated and missing repositories when no token is sent.
    std::string what = code == "GatedRepo"
                           ? file.repo_id + " is a gated repository: accept its conditions on the Hub, then"
                           : file.repo_id + " is private or gated, or does not exist:";
    what += sent_token ? " the token sent (HF_TOKEN, or $HF_HOME/token) has no access to it"
                       : " set HF_TOKEN to an access token of an account that can read it";
    throw HubAuthError("hub: " + what + " (" + status + ")" + hub_message(r));
  }
  if (r.status == 404 && code == "RepoNotFound")
    throw HubNotFoundError("hub: repository " + file.repo_id + " not found (" + status + ")" + hub_message(r));
  if (r.status == 404 && code == "RevisionNotFound")
    throw HubNotFoundError("hub: revision " + file.revision + " not found in repository " + file.repo_id + " (" +
                           status + ")");
  if (r.status == 404) {
    const std::string also = code.empty() ? ", or no such repository or revision" : "";
    throw MissingEntry("hub: no file " + file.filename + " in " + file.repo_id + " at revision " + file.revision +
                           also + " (" + status + ")",
                       is_commit_hash(r.header("x-repo-commit")) ? r.header("x-repo-commit") : "");
  }
  throw HubError("hub: cannot download " + file.describe() + ": " + status + hub_message(r));
}

FileMetadata fetch_metadata(const Settings& settings, const FileRef& file) {
  HttpRequest request{.url = resolve_url(settings, file),
                      .headers = hub_headers(settings),
                      .connect_timeout_s = settings.connect_timeout_s,
                      .stall_timeout_s = settings.stall_timeout_s};
  HttpResponse r;
  for (int hops = 0;; ++hops) {
    r = http_head(request);
    if (r.status >= 400) throw_http_error(r, request.url, file, !settings.token.empty());
    const std::string location = r.header("location");
    // A relative redirect stays on the Hub (a renamed repository): follow it. An absolute one
    // leads to the CDN that holds an LFS file: that is where the GET will go.
    const bool relative =
        r.status >= 300 && r.status < 400 && location.rfind("/", 0) == 0 && location.rfind("//", 0) != 0;
    if (!relative) break;
    if (hops == 10) throw HubError("hub: too many redirects for " + file.describe() + " (last: " + request.url + ")");
    request.url = url_origin(request.url) + location;
  }
  return metadata_from_answer(r, request.url, settings, file);
}

FileMetadata metadata_from_answer(const HttpResponse& r, const std::string& url, const Settings& settings,
                                  const FileRef& file) {
  const bool redirect = r.status >= 300 && r.status < 400;
  FileMetadata m;
  m.commit = r.header("x-repo-commit");
  m.etag = unquote_etag(!r.header("x-linked-etag").empty() ? r.header("x-linked-etag") : r.header("etag"));
  m.size = size_header(!r.header("x-linked-size").empty() ? r.header("x-linked-size")
                       : redirect                         ? ""
                                                          : r.header("content-length"));
  m.location = redirect && !r.header("location").empty() ? r.header("location") : url;
  const std::string where = " (HEAD " + url + "): is HF_ENDPOINT (" + settings.endpoint + ") a Hugging Face Hub?";
  if (!is_commit_hash(m.commit))
    throw HubError("hub: no commit hash (X-Repo-Commit) in the answer for " + file.describe() + where);
  if (m.etag.empty() || m.etag.find('/') != std::string::npos || m.etag.find("..") != std::string::npos)
    throw HubError("hub: no usable ETag in the answer for " + file.describe() + where);
  if (m.size < 0)
    throw HubError("hub: no size (X-Linked-Size or Content-Length) in the answer for " + file.describe() + where);
  return m;
}

}  // namespace meganeura::hub
