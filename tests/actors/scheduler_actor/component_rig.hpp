// One scheduler_component fed batches as its actor would feed them (tests/support/
// component_feed.hpp), with the event builders and the log offsets the tests share.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "actors/scheduler/actor/scheduler_component.hpp"
#include "tests/actors/scheduler_actor/test_events.hpp"
#include "tests/support/component_feed.hpp"

namespace colony::testing {

struct component_rig {
  std::unique_ptr<scheduler::scheduler_component> s;
  event_factory f;
  offset_stamper stamp;
  std::vector<messages::byte_buffer> kept;  // envelopes must outlive on_event

  // The component is named "koord-scheduler/a".
  explicit component_rig(scheduler::scheduler_component_options o = {}) {
    o.id = "a";
    auto c = scheduler::scheduler_component::create(std::move(o));
    EXPECT_TRUE(c.has_value()) << (c ? "" : c.error().message);
    if (c) s = std::move(*c);
  }
  // One delivered batch; returns what the component emitted.
  std::vector<messages::byte_buffer> batch(std::vector<messages::byte_buffer> recs) {
    return feed_batch(*s, stamp, kept, std::move(recs));
  }
};

// The PodBindProposed for `pod` among a batch's output; nullptr when there is none.
inline const wire::PodBindProposed* proposal_for(const std::vector<messages::byte_buffer>& out,
                                                 std::string_view pod) {
  for (const auto& b : out)
    if (const auto* p = env_of(b).payload_as_PodBindProposed())
      if (messages::to_string_view(p->pod()) == pod) return p;
  return nullptr;
}

}  // namespace colony::testing
