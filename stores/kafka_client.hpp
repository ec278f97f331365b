// kafka_client: the librdkafka plumbing every Colony Kafka client shares (the event log in
// kafka_log.cpp, the singleton elector in kafka_leader.cpp): owning handles, the client
// settings tuned for a broker on loopback, the mapping of librdkafka errors to colony::errc,
// and topic creation with the explicit configuration a log topic needs. Internal to
// colony::stores; the public contract is kafka_log.hpp and kafka_leader.hpp.
#pragma once

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <librdkafka/rdkafka.h>

#include "messages/result.hpp"
#include "stores/kafka_log.hpp"

namespace colony::stores::kafka_client {

using clock_type = std::chrono::steady_clock;

// Milliseconds until deadline, never negative.
[[nodiscard]] int ms_left(clock_type::time_point deadline);

template <class T, void (*Destroy)(T*)>
struct destroy_with {
  void operator()(T* p) const { Destroy(p); }
};
using conf_ptr =
    std::unique_ptr<rd_kafka_conf_t, destroy_with<rd_kafka_conf_t, rd_kafka_conf_destroy>>;
using handle_ptr = std::unique_ptr<rd_kafka_t, destroy_with<rd_kafka_t, rd_kafka_destroy>>;
using topic_ptr =
    std::unique_ptr<rd_kafka_topic_t, destroy_with<rd_kafka_topic_t, rd_kafka_topic_destroy>>;
using event_ptr =
    std::unique_ptr<rd_kafka_event_t, destroy_with<rd_kafka_event_t, rd_kafka_event_destroy>>;
using queue_ptr =
    std::unique_ptr<rd_kafka_queue_t, destroy_with<rd_kafka_queue_t, rd_kafka_queue_destroy>>;
using tpl_ptr = std::unique_ptr<
    rd_kafka_topic_partition_list_t,
    destroy_with<rd_kafka_topic_partition_list_t, rd_kafka_topic_partition_list_destroy>>;
using message_ptr =
    std::unique_ptr<rd_kafka_message_t, destroy_with<rd_kafka_message_t, rd_kafka_message_destroy>>;
using error_ptr =
    std::unique_ptr<rd_kafka_error_t, destroy_with<rd_kafka_error_t, rd_kafka_error_destroy>>;
using admin_options_ptr =
    std::unique_ptr<rd_kafka_AdminOptions_t,
                    destroy_with<rd_kafka_AdminOptions_t, rd_kafka_AdminOptions_destroy>>;

using settings = std::initializer_list<std::pair<const char*, std::string>>;

// One librdkafka setting; errc::internal naming key and value if librdkafka refuses it.
[[nodiscard]] result<void> set(rd_kafka_conf_t* c, const char* key, const std::string& value);

// A configuration with the common client settings (bootstrap, client.id "colony", fast
// reconnects, Nagle off, logs to stderr only with COLONY_KAFKA_DEBUG set), then `extra` (which
// may override any of them).
[[nodiscard]] result<conf_ptr> base_conf(const kafka_address& a, settings extra);

// "NAME: description" of a librdkafka error code.
[[nodiscard]] std::string err_text(rd_kafka_resp_err_t e);
// The producer was fenced by a newer one with the same transactional.id (or epoch).
[[nodiscard]] bool is_fenced(rd_kafka_resp_err_t e);
// colony's error code for a librdkafka one: transport, timeouts, leader and coordinator moves
// are `unavailable` (retry); a fence or a refused authorisation `failed_precondition`.
[[nodiscard]] errc code_of(rd_kafka_resp_err_t e);

// One admin request: its options (request and operation timeout) and its answer queue.
struct admin_call {
  admin_options_ptr options;
  queue_ptr queue;
};
[[nodiscard]] admin_call admin_begin(rd_kafka_t* rk, rd_kafka_admin_op_t op, int timeout_ms);
// The answer of the request submitted on call.queue; unavailable when none came within
// timeout_ms (+2 s), the request's own error otherwise. Errors read "WHAT: ..." and name where.
[[nodiscard]] result<event_ptr> admin_wait(const admin_call& call, int timeout_ms,
                                           const std::string& what, const std::string& where);

// Creates `topic` through the admin API of `rk` with the configuration the log contract needs
// (nothing deleted or compacted: cleanup.policy=delete, retention.ms/bytes=-1,
// min.insync.replicas, unclean.leader.election.enable=false) plus `extra`. A topic that
// already exists is not an error. Errors name `where`.
[[nodiscard]] result<void> create_topic(
    rd_kafka_t* rk, const std::string& topic, int partitions, int replication,
    const std::vector<std::pair<const char*, std::string>>& extra, int timeout_ms,
    const std::string& where);

// Deletes `topic` through the admin API of `rk`; a missing topic is not an error.
[[nodiscard]] result<void> delete_topic(rd_kafka_t* rk, const std::string& topic, int timeout_ms,
                                        const std::string& where);

}  // namespace colony::stores::kafka_client
