#include "util/parallel.hpp"

#include <algorithm>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace meganeura::util {

size_t worker_count() { return std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 8); }

void parallel_for(size_t n, const std::function<void(size_t)>& fn) {
  std::exception_ptr first;
  std::mutex mutex;
  auto run = [&](size_t i) {
    try {
      fn(i);
    } catch (...) {
      std::lock_guard lock(mutex);
      if (!first) first = std::current_exception();
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(n > 0 ? n - 1 : 0);
  for (size_t i = 1; i < n; ++i) threads.emplace_back(run, i);
  if (n > 0) run(0);
  for (std::thread& t : threads) t.join();
  if (first) std::rethrow_exception(first);
}

}  // namespace meganeura::util
