#include "actors/koordlet/group_identity.hpp"

namespace colony::koordlet {

bvt_rule parse_bvt_rule(const resource_qos_cpu_strategy& s) noexcept {
  const bool gi = !s.cpu_policy || *s.cpu_policy == cpu_qos_policy::group_identity;
  const bool lsr_on = gi && s.lsr_class.enable;
  const bool ls_on = gi && s.ls_class.enable;
  const bool be_on = gi && s.be_class.enable;
  bvt_rule r;
  r.enable = lsr_on || ls_on || be_on;
  r.lsr = lsr_on ? s.lsr_class.group_identity : 0;
  r.ls = ls_on ? s.ls_class.group_identity : 0;
  r.be = be_on ? s.be_class.group_identity : 0;
  r.dir_guaranteed = 0;  // guaranteed root dir stays 0 until the kernel supports it
  r.dir_burstable = r.ls;
  r.dir_besteffort = r.be;
  r.pod_guaranteed = lsr_on ? r.lsr : ls_on ? r.ls : 0;
  r.pod_burstable = r.ls;
  r.pod_besteffort = r.be;
  return r;
}

std::int64_t pod_bvt_value(const bvt_rule& r, qos_class raw, kube_qos kq) noexcept {
  switch (raw) {
    case qos_class::lse:
    case qos_class::lsr:
      return r.lsr;
    case qos_class::ls:
      return r.ls;
    case qos_class::be:
      return r.be;
    default:
      break;
  }
  switch (kq) {
    case kube_qos::guaranteed:
      return r.pod_guaranteed;
    case kube_qos::burstable:
      return r.pod_burstable;
    case kube_qos::best_effort:
      return r.pod_besteffort;
    case kube_qos::unset:
      break;
  }
  return 0;
}

std::int64_t kube_qos_dir_bvt_value(const bvt_rule& r, kube_qos kq) noexcept {
  switch (kq) {
    case kube_qos::guaranteed:
      return r.dir_guaranteed;
    case kube_qos::burstable:
      return r.dir_burstable;
    case kube_qos::best_effort:
      return r.dir_besteffort;
    case kube_qos::unset:
      break;
  }
  return 0;
}

}  // namespace colony::koordlet
