// resource_list: the plain-struct form of a Kubernetes ResourceList, as policies use it.
//
// One int64 per resource Colony's policies read, in Kubernetes units: CPU resources in
// milli-cores, memory resources in bytes, GPU counts x100 (koordinator.sh/gpu semantics:
// 100 = one whole device), gpu-core and gpu-memory-ratio in percent of one device.
// Absent = 0. Arithmetic is per field; comparisons for "fits" are per field (fits_in).
#pragma once

#include <cstdint>

namespace colony {

struct resource_list {
  std::int64_t cpu_milli = 0;
  std::int64_t memory_bytes = 0;
  std::int64_t batch_cpu_milli = 0;     // kubernetes.io/batch-cpu
  std::int64_t batch_memory_bytes = 0;  // kubernetes.io/batch-memory
  std::int64_t mid_cpu_milli = 0;       // kubernetes.io/mid-cpu
  std::int64_t mid_memory_bytes = 0;    // kubernetes.io/mid-memory
  std::int64_t gpu = 0;                 // nvidia.com/gpu | koordinator.sh/gpu, x100
  std::int64_t gpu_core = 0;            // koordinator.sh/gpu-core
  std::int64_t gpu_memory_bytes = 0;    // koordinator.sh/gpu-memory
  std::int64_t gpu_memory_ratio = 0;    // koordinator.sh/gpu-memory-ratio
  std::int64_t pods = 0;

  bool operator==(const resource_list&) const = default;

  // Applies f(field_of_this, field_of_other) to every field, in declaration order.
  template <class F>
  constexpr void zip(const resource_list& o, F&& f) {
    f(cpu_milli, o.cpu_milli);
    f(memory_bytes, o.memory_bytes);
    f(batch_cpu_milli, o.batch_cpu_milli);
    f(batch_memory_bytes, o.batch_memory_bytes);
    f(mid_cpu_milli, o.mid_cpu_milli);
    f(mid_memory_bytes, o.mid_memory_bytes);
    f(gpu, o.gpu);
    f(gpu_core, o.gpu_core);
    f(gpu_memory_bytes, o.gpu_memory_bytes);
    f(gpu_memory_ratio, o.gpu_memory_ratio);
    f(pods, o.pods);
  }
  template <class F>
  constexpr void for_each(F&& f) const {
    f(cpu_milli);
    f(memory_bytes);
    f(batch_cpu_milli);
    f(batch_memory_bytes);
    f(mid_cpu_milli);
    f(mid_memory_bytes);
    f(gpu);
    f(gpu_core);
    f(gpu_memory_bytes);
    f(gpu_memory_ratio);
    f(pods);
  }

  constexpr resource_list& operator+=(const resource_list& o) {
    zip(o, [](std::int64_t& a, std::int64_t b) { a += b; });
    return *this;
  }
  constexpr resource_list& operator-=(const resource_list& o) {
    zip(o, [](std::int64_t& a, std::int64_t b) { a -= b; });
    return *this;
  }
  friend constexpr resource_list operator+(resource_list a, const resource_list& b) {
    return a += b;
  }
  friend constexpr resource_list operator-(resource_list a, const resource_list& b) {
    return a -= b;
  }

  // True if every field of *this is <= the same field of cap.
  [[nodiscard]] constexpr bool fits_in(const resource_list& cap) const {
    bool ok = true;
    resource_list me = *this;
    me.zip(cap, [&](std::int64_t& a, std::int64_t b) { ok = ok && a <= b; });
    return ok;
  }
  [[nodiscard]] constexpr bool is_zero() const { return *this == resource_list{}; }
};

}  // namespace colony
