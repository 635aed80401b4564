// Splitting a step's independent outputs over threads. Each output is computed whole by one
// thread, in its defined order, so the result does not depend on the number of threads.
#pragma once

#include <cstdint>
#include <functional>

namespace cltrain {
namespace cpu {

// The threads a step may use: CLTRAIN_CPU_THREADS if set (>= 1), else the hardware's.
int cpu_threads();

// Calls body(begin, end) on disjoint ranges covering [0, count), on up to cpu_threads()
// threads, each range at least min_items long (ranges of cheap items are not worth a thread).
// Waits for all; an exception thrown by a body is rethrown here.
void parallel_for(int64_t count, int64_t min_items, const std::function<void(int64_t, int64_t)>& body);

// min_items for items that each cost about `work` multiply-adds: enough to give a thread
// some 100k of them.
int64_t items_per_thread(int64_t work);

}  // namespace cpu
}  // namespace cltrain
