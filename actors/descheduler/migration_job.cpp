#include "actors/descheduler/migration_job.hpp"

namespace colony::descheduler {

std::string_view to_string(job_phase p) noexcept {
  switch (p) {
    case job_phase::pending:
      return "Pending";
    case job_phase::running:
      return "Running";
    case job_phase::succeeded:
      return "Succeeded";
    case job_phase::failed:
      return "Failed";
    case job_phase::aborted:
      return "Aborted";
  }
  return "Pending";
}

std::optional<job_phase> parse_job_phase(std::string_view s) noexcept {
  if (s.empty() || s == "Pending") return job_phase::pending;
  if (s == "Running") return job_phase::running;
  if (s == "Succeeded") return job_phase::succeeded;
  if (s == "Failed") return job_phase::failed;
  if (s == "Aborted") return job_phase::aborted;
  return std::nullopt;
}

const pod_info* migration_view::pod(std::string_view key) const {
  if (pod_index != nullptr) {
    const auto it = pod_index->find(key);
    return it == pod_index->end() ? nullptr : it->second;
  }
  if (pods == nullptr) return nullptr;
  const auto it = pods->find(key);
  return it == pods->end() ? nullptr : &it->second;
}

}  // namespace colony::descheduler
