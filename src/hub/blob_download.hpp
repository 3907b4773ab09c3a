// Bringing one blob into the cache. The bytes go to blobs/<etag>.incomplete — resumed from its
// size with a Range request when an earlier download broke off, restarted when the server ignores
// the Range — and only once their size (and, for LFS files, sha256) is right are they renamed to
// blobs/<etag>. A lock file keeps two processes from writing the same .incomplete.
#pragma once
#include "hub/cache_layout.hpp"
#include "hub/metadata.hpp"
#include "hub/settings.hpp"

namespace meganeura::hub {

// Leaves blobs/<meta.etag> complete and checked, or throws: HubError naming the file and URL (a
// transfer that broke off more often than settings.retries keeps its .incomplete for the next
// call; a size or sha256 mismatch deletes it).
void fetch_blob(const Settings& settings, const RepoCache& cache, const FileRef& file, const FileMetadata& meta);

}  // namespace meganeura::hub
