#include "actors/quota/actor/quota_component.hpp"

#include <algorithm>
#include <utility>

namespace colony::quota {

quota_component::quota_component(quota_component_options opts)
    : opts_(std::move(opts)), book_(std::make_shared<quota_tree>(opts_.args)) {}

bool quota_component::wants(wire::Payload type) const {
  return quota_book::wants(type) || type == wire::Payload::ClockTicked;
}

void quota_component::on_event(const wire::Envelope& env,
                               std::vector<messages::byte_buffer>& /*out*/) {
  now_ = event_time{std::max(now_.value, env.event_time_ms())};
  if (book_.apply(env)) {
    dirty_ = true;
    cause_ = static_cast<std::int64_t>(env.offset());
  }
}

void quota_component::on_batch_end(std::vector<messages::byte_buffer>& out) {
  if (!dirty_) return;
  dirty_ = false;
  book_.flush();
  auto& tree = *book_.tree();
  for (const auto& st : tree.refresh()) {
    const auto p = quota_runtime_updated(b_, st);
    out.push_back(b_.finish(
        messages::header{now_, wire::EntityKind::ElasticQuota, st.name, cause_, opts_.name}, p));
  }
}

}  // namespace colony::quota
