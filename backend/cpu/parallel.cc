#include "parallel.h"

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace cltrain {
namespace cpu {

int cpu_threads() {
  static const int threads = [] {
    if (const char* env = std::getenv("CLTRAIN_CPU_THREADS")) {
      const int n = std::atoi(env);
      if (n >= 1) return std::min(n, 256);
    }
    return static_cast<int>(std::max(1u, std::min(std::thread::hardware_concurrency(), 64u)));
  }();
  return threads;
}

int64_t items_per_thread(int64_t work) { return std::max<int64_t>(1, 100000 / std::max<int64_t>(1, work)); }

void parallel_for(int64_t count, int64_t min_items, const std::function<void(int64_t, int64_t)>& body) {
  if (count <= 0) return;
  const int64_t by_size = count / std::max<int64_t>(1, min_items);
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(cpu_threads(), by_size));
  if (threads == 1) return body(0, count);
  std::exception_ptr error;
  std::mutex error_mutex;
  auto run = [&](int64_t b, int64_t e) {
    try {
      body(b, e);
    } catch (...) {
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<size_t>(threads - 1));
  const int64_t chunk = count / threads, extra = count % threads;
  int64_t begin = 0;
  for (int64_t t = 0; t < threads; ++t) {
    const int64_t end = begin + chunk + (t < extra ? 1 : 0);
    bool started = false;
    if (t + 1 < threads) {
      try {
        pool.emplace_back(run, begin, end);
        started = true;
      } catch (...) {  // no thread to be had: this one does the work
      }
    }
    if (!started) run(begin, end);
    begin = end;
  }
  for (std::thread& th : pool) th.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace cpu
}  // namespace cltrain
