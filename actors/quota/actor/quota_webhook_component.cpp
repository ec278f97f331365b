#include "actors/quota/actor/quota_webhook_component.hpp"

#include <utility>

#include "actors/quota/actor/quota_events.hpp"
#include "messages/names.hpp"

namespace colony::quota {

namespace {
using messages::to_string_view;
}  // namespace

quota_webhook_component::quota_webhook_component(quota_webhook_options opts)
    : opts_(std::move(opts)) {
  topology_.set_features(opts_.features);
}

bool quota_webhook_component::wants(wire::Payload type) const {
  switch (type) {
    case wire::Payload::QuotaUpserted:
    case wire::Payload::QuotaDeleted:
    case wire::Payload::PodSubmitted:
    case wire::Payload::PodScheduled:
    case wire::Payload::PodFinished:
    case wire::Payload::PodEvicted:
      return true;
    default:
      return false;
  }
}

void quota_webhook_component::on_event(const wire::Envelope& env,
                                       std::vector<messages::byte_buffer>& /*out*/) {
  switch (env.payload_type()) {
    case wire::Payload::QuotaUpserted:
      // Only what the apiserver stored (an observation): a component's QuotaUpserted (the
      // profile controller's tree root) is a write this webhook has yet to review.
      if (env.causation() < 0) topology_.on_quota_update(spec_of(*env.payload_as_QuotaUpserted()));
      break;
    case wire::Payload::QuotaDeleted:
      topology_.on_quota_delete(to_string_view(env.payload_as_QuotaDeleted()->name()));
      break;
    case wire::Payload::PodSubmitted: {
      const auto* e = env.payload_as_PodSubmitted();
      auto& p = pods_[std::string(to_string_view(e->name()))];
      p.quota = std::string(find_key(e->labels(), names::label_quota_name).value_or(""));
      break;
    }
    case wire::Payload::PodScheduled:
      if (auto it = pods_.find(to_string_view(env.payload_as_PodScheduled()->pod()));
          it != pods_.end())
        it->second.bound = true;
      break;
    case wire::Payload::PodFinished:
      if (auto it = pods_.find(to_string_view(env.payload_as_PodFinished()->pod()));
          it != pods_.end())
        pods_.erase(it);
      break;
    case wire::Payload::PodEvicted:
      if (auto it = pods_.find(to_string_view(env.payload_as_PodEvicted()->pod()));
          it != pods_.end())
        pods_.erase(it);
      break;
    default:
      break;
  }
}

std::size_t quota_webhook_component::pods_of(std::string_view quota, bool bound_only) const {
  std::size_t n = 0;
  for (const auto& [key, p] : pods_)
    if (p.quota == quota && (!bound_only || p.bound)) ++n;
  return n;
}

result<void> quota_webhook_component::review(quota_operation op, const wire::QuotaUpserted* object,
                                             const wire::QuotaUpserted* old_object) const {
  // A copy: Valid*Quota record what they admit, and this state follows the log only.
  quota_topology t = topology_;
  switch (op) {
    case quota_operation::create: {
      if (object == nullptr) return fail(errc::invalid_input, "no object to create", "object");
      auto q = spec_of(*object);
      if (auto r = t.fill_quota_default_information(q); !r) return r;
      return t.valid_add_quota(q);
    }
    case quota_operation::update: {
      if (object == nullptr || old_object == nullptr)
        return fail(errc::invalid_input, "an update needs the object and the old object",
                    "oldObject");
      const auto old_q = spec_of(*old_object);
      return t.valid_update_quota(old_q, spec_of(*object), pods_of(old_q.name, true) > 0);
    }
    case quota_operation::del: {
      if (old_object == nullptr)
        return fail(errc::invalid_input, "a delete needs the old object", "oldObject");
      const auto old_q = spec_of(*old_object);
      return t.valid_delete_quota(old_q, pods_of(old_q.name, false));
    }
  }
  return fail(errc::internal, "unknown operation", "operation");
}

}  // namespace colony::quota
