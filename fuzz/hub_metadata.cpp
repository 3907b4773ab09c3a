// The Hub's answer to a HEAD on a file (what fetch_metadata reads, without a network): the input
// is the header block as curl hands it over, one line each; read_header_line parses the lines,
// then an error status goes to throw_http_error and anything else to metadata_from_answer, as in
// fetch_metadata. Both must end in the metadata or a HubError.
#include <string>
#include <string_view>

#include "hub/metadata.hpp"
#include "input_file.hpp"

namespace hub = meganeura::hub;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  hub::HttpResponse answer;
  for (size_t start = 0; start < input.size();) {
    const size_t end = std::min(input.find('\n', start), input.size() - 1) + 1;  // the line with its '\n'
    hub::read_header_line(answer, std::string(input.substr(start, end - start)));
    start = end;
  }
  const hub::Settings settings{.endpoint = "https://huggingface.co"};
  const hub::FileRef file{"org/model", "main", "config.json"};
  const std::string url = hub::resolve_url(settings, file);
  meganeura::fuzz::reads([&] {
    if (answer.status >= 400) hub::throw_http_error(answer, url, file, false);
    const hub::FileMetadata m = hub::metadata_from_answer(answer, url, settings, file);
    if (m.commit.size() != 40 || m.etag.empty() || m.size < 0 || m.location.empty())
      meganeura::fuzz::fail("metadata_from_answer accepted an answer without commit, ETag, size or location");
  });
  return 0;
}
