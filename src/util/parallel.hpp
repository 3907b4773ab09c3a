// Splitting plain CPU work over threads (weight conversion while loading): no pool, threads
// live for one call, which is cheap next to the megabytes each converts.
#pragma once
#include <cstddef>
#include <functional>

namespace meganeura::util {

// Threads worth starting for memory-bound work: the hardware's, at most 8 (more only contend
// for the same memory bandwidth), at least 1.
size_t worker_count();

// Runs fn(0) .. fn(n - 1), each on a thread of its own (fn(0) on the caller's); returns when all
// have, rethrowing the first exception one threw.
void parallel_for(size_t n, const std::function<void(size_t)>& fn);

}  // namespace meganeura::util
