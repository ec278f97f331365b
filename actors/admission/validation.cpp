#include "actors/admission/validation.hpp"

#include <algorithm>

#include "actors/admission/priority.hpp"
#include "actors/admission/qos.hpp"
#include "messages/names.hpp"
#include "messages/quantity.hpp"

namespace colony::admission {

namespace {

// Go's %q for the plain strings that reach here (label values, class names, quantities).
std::string go_quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

const std::string qos_label_field = "labels." + std::string(names::label_qos_class);
const std::string priority_label_field = "labels." + std::string(names::label_priority);

// validation.ValidateImmutableField.
void immutable(std::vector<field_error>& errs, std::string_view new_value,
               std::string_view old_value, const std::string& field) {
  if (new_value == old_value) return;
  errs.push_back({field_error_type::invalid, field, std::string(new_value), "field is immutable"});
}

std::string_view label_or_empty(const string_map& labels, std::string_view key) {
  const std::string* v = find_value(labels, key);
  return v != nullptr ? std::string_view(*v) : std::string_view();
}

// forbidSpecialQoSClassAndPriorityClass, given the pod's raw QoS and raw priority class.
void forbid_qos_and_priority(std::vector<field_error>& errs, qos_class pod_qos, priority_class pc,
                             qos_class qos, std::initializer_list<priority_class> forbidden) {
  if (pod_qos != qos) return;
  if (std::find(forbidden.begin(), forbidden.end(), pc) == forbidden.end()) return;
  errs.push_back({field_error_type::forbidden, "Pod", "",
                  std::string(names::label_qos_class) + "=" + std::string(to_string(qos)) +
                      " and priorityClass=" + std::string(to_string(pc)) +
                      " cannot be used in combination"});
}

}  // namespace

std::string field_error::message() const {
  switch (type) {
    case field_error_type::required:
      return field + ": Required value: " + detail;
    case field_error_type::forbidden:
      return field + ": Forbidden: " + detail;
    case field_error_type::invalid:
      return field + ": Invalid value: " + go_quote(bad_value) + ": " + detail;
  }
  return field + ": " + detail;
}

std::string validation_result::reason() const {
  std::vector<std::string> msgs;
  for (const auto& e : errors) {
    std::string m = e.message();
    if (std::find(msgs.begin(), msgs.end(), m) == msgs.end()) msgs.push_back(std::move(m));
  }
  if (msgs.empty()) return {};
  if (msgs.size() == 1) return msgs.front();
  std::string out = "[";
  for (std::size_t i = 0; i < msgs.size(); ++i) {
    if (i) out += ", ";
    out += msgs[i];
  }
  return out + "]";
}

validation_result validate_cluster_colocation_profile_pod(admission_operation op,
                                                          const pod_spec& new_pod,
                                                          const pod_spec* old_pod,
                                                          const validating_options& options) {
  validation_result r;
  auto& errs = r.errors;
  if (op == admission_operation::update && old_pod != nullptr) {
    immutable(errs, to_string(get_pod_qos_class_raw(new_pod)),
              to_string(get_pod_qos_class_raw(*old_pod)), qos_label_field);
    immutable(errs, to_string(get_pod_priority_class_raw(new_pod)),
              to_string(get_pod_priority_class_raw(*old_pod)), "spec.priority");
    if (!options.skip_validating_priority)
      immutable(errs, label_or_empty(new_pod.labels, names::label_priority),
                label_or_empty(old_pod->labels, names::label_priority), priority_label_field);
  }

  const resource_list request = get_pod_request(new_pod);
  const qos_class q = get_pod_qos_class_raw(new_pod);
  const priority_class pc = get_pod_priority_class_raw(new_pod);
  // validateRequiredQoSClass
  if ((request.batch_cpu_milli != 0 || request.batch_memory_bytes != 0) && q != qos_class::be)
    errs.push_back({field_error_type::required, qos_label_field, "",
                    "must specify koordinator QoS BE with koordinator colocation resources"});

  forbid_qos_and_priority(errs, q, pc, qos_class::be, {priority_class::none, priority_class::prod});
  forbid_qos_and_priority(
      errs, q, pc, qos_class::lsr,
      {priority_class::none, priority_class::mid, priority_class::batch, priority_class::free});

  // validateResources
  if (q == qos_class::lsr || q == qos_class::lse) {
    const std::string field = "pod.spec.containers[*].resources.requests";
    if (request.cpu_milli == 0) {
      errs.push_back(
          {field_error_type::required, field, "", "LSR Pod must declare the requested CPUs"});
    } else if (request.cpu_milli % 1000 != 0) {
      errs.push_back({field_error_type::invalid, field, k8s::format_milli(request.cpu_milli),
                      "the requested CPUs of LSR Pod must be integer"});
    }
  }
  return r;
}

}  // namespace colony::admission
