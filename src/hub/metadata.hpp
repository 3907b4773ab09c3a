// What the Hub says about one file before it is downloaded: a HEAD on its resolve URL, as
// huggingface_hub's get_hf_file_metadata does. The answer carries the commit the revision
// resolves to (X-Repo-Commit), the ETag that names the blob (X-Linked-Etag for LFS files: their
// sha256; else ETag: the git blob sha1), the size (X-Linked-Size, else Content-Length) and, for
// LFS files, a redirect to the CDN that holds the bytes. HTTP errors become HubError subclasses.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hub/http.hpp"
#include "hub/settings.hpp"

namespace meganeura::hub {

// The file a request is about: builds its URL and names it in errors.
struct FileRef {
  std::string repo_id, revision, filename;
  std::string describe() const;  // "config.json of org/name (revision main)"
};

// {endpoint}/{repo_id}/resolve/{revision}/{filename}, the revision and filename percent-encoded
// (a '/' in the revision too, as in refs/pr/1; not in the filename's path).
std::string resolve_url(const Settings& settings, const FileRef& file);

// The headers every request to the endpoint carries: the token, if there is one.
std::vector<std::string> hub_headers(const Settings& settings);

struct FileMetadata {
  std::string commit;  // 40 hex digits
  std::string etag;    // unquoted
  int64_t size = -1;
  std::string location;  // where to GET the bytes: the CDN's URL for LFS files, else the resolve URL
};

// One HEAD (following only relative redirects: a renamed repository, not the CDN). Throws
// NetworkError when the endpoint cannot be reached, the classes of throw_http_error for an
// error status, and HubError when the answer lacks the commit, ETag or size.
FileMetadata fetch_metadata(const Settings& settings, const FileRef& file);

// The metadata in `answer`, the final (non-error, not relatively redirected) answer to a HEAD on
// `url`: what fetch_metadata returns, or the HubError it throws. Separate from the request so
// that the fuzz target (fuzz/hub_metadata.cpp) reaches it without a network.
FileMetadata metadata_from_answer(const HttpResponse& answer, const std::string& url, const Settings& settings,
                                  const FileRef& file);

// A 404 for the file alone, with the commit the Hub looked in (X-Repo-Commit; may be empty) so
// the cache can remember that the file does not exist there.
struct MissingEntry : HubFileNotFoundError {
  MissingEntry(const std::string& what, std::string commit_hash)
      : HubFileNotFoundError(what), commit(std::move(commit_hash)) {}
  std::string commit;
};

// Throws the HubError subclass for an HTTP error status (>= 400) answering `url`.
[[noreturn]] void throw_http_error(const HttpResponse& response, const std::string& url, const FileRef& file,
                                   bool sent_token);

}  // namespace meganeura::hub
