// What the descheduler benchmarks time with: this thread's CPU time, and the median of runs.
#pragma once

#include <time.h>

#include <algorithm>
#include <vector>

namespace colony::bench::descheduler {

inline double thread_cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// The upper median (the middle of an odd count); 0 for none.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace colony::bench::descheduler
