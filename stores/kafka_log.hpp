// kafka_log: the event_log on an Apache Kafka topic (librdkafka), named
// kafka://host:port/topic[?option=value&...]. Design and guarantees: docs/subscribing.md.
//
// Total order = ONE ordering partition. The topic has exactly one partition (partition 0);
// the log's offset IS the Kafka offset of partition 0. Kafka orders records only within a
// partition, so a single partition is the one layout where the contract's gap-free total
// order holds without a second index. Per-entity parallelism is obtained downstream by
// routing (docs/subscribing.md, "Partitioning"), not by spreading the source of truth.
//
// Append = one Kafka record batch. The producer is idempotent (enable.idempotence=true,
// acks=all, max.in.flight 5, unbounded retries within delivery_timeout_ms). A batch is
// enqueued onto partition 0 while nothing else is queued and linger.ms is at its maximum, so
// nothing leaves until rd_kafka_flush(); batch.num.messages / batch.size / message.max.bytes
// are larger than any batch accepted (max_batch_records, max_batch_bytes), so librdkafka sends
// it as ONE RecordBatch in one ProduceRequest; the broker appends a record batch as a unit, and the
// idempotent producer's sequence numbers make a retried batch land exactly once. Offsets come from
// the delivery reports and must equal the ones written into the envelopes (patch_offset) before
// producing; anything else means a second writer and is reported.
// What this does NOT give (Kafka's transactions would, at the price of a commit marker that
// takes an offset per append and so breaks "offsets without gaps"): an append that fails
// with `unavailable` (delivery timeout, fatal producer error) may or may not have landed;
// the caller re-reads end_offset(). And Kafka does not fence a second writer: one appender
// per topic is the operator's job (the RocksDB log enforces it with a file lock).
//
// Topics are created through the admin API with explicit configuration (one partition,
// replication factor `replication` (default 1), min.insync.replicas, retention.ms=-1,
// retention.bytes=-1, cleanup.policy=delete, unclean.leader.election.enable=false,
// max.message.bytes, and flush.messages=1 when log_options::sync is set). Opening an
// existing topic checks the properties the contract depends on (one partition, nothing
// deleted or compacted) and refuses a topic that lacks them.
//
// Reads: every record is verified with messages::decode naming "kafka TOPIC/0@OFFSET", and
// its envelope offset must equal its Kafka offset. Readers assign partition 0 at an offset
// (assign + seek; they never subscribe, so reads never join or disturb a consumer group).
// end_offset() is partition 0's high watermark. wait_for() long-polls a consumer assigned at
// the end.
//
// Options in the name's query string (all optional):
//   connect_timeout_ms   bounded wait for the broker at open (Default: 10000)
//   delivery_timeout_ms  how long an append keeps retrying through broker outages
//                        (message.timeout.ms; Default: 300000)
//   replication          replication factor of a topic this creates (Default: 1)
//   partitions           number of partitions (Default: 1, the ordering partition above)
//
// Partitioned mode (partitions=N > 1; docs/cluster.md). Records are keyed by the envelope's
// entity key and placed with librdkafka's murmur2_random partitioner (murmur2(key) & 0x7fffffff)
// % N, the Java client's default, so external producers agree; keyless (cluster-scoped) events
// go to partition 0. An event that touches a second entity in another partition (routes():
// PodScheduled keyed by the node also binds the pod) is written once more, as a MIRROR, into
// that entity's partition with that entity's key: every event an entity sees is then in the
// entity's own partition, in the writer's append order, so one partition's records suffice to
// rebuild its entities. A mirror is the same envelope; its Kafka key differs from the
// envelope's entity key. The envelope's `offset` is the EVENT SEQUENCE (the position in the
// writer's append order, the offset a one-partition topic would give; mirrors repeat it);
// the Kafka offset is the record's position in its partition. end_offset() is the next
// sequence, append() returns the first one, read() merges the partitions by sequence and skips
// mirrors, so the event_log interface still sees one total order (and `colony log generate`,
// `replay` work unchanged). Errors name "kafka TOPIC/P@KAFKA_OFFSET". An append is atomic per
// partition (one record batch each), not across partitions. follow() and the group commit of
// partition 0 refuse a partitioned topic: use consume_group().
//
// Thread-safety: as event_log (appends serialised; concurrent readers each use a pooled
// consumer).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "stores/event_log.hpp"

namespace colony::stores {

// Largest append accepted as one atomic Kafka record batch.
inline constexpr std::size_t kafka_max_batch_records = 100000;
inline constexpr std::size_t kafka_max_batch_bytes = 48u * 1024 * 1024;

struct kafka_address {
  std::string bootstrap;  // host:port[,host:port...]
  std::string topic;
  std::chrono::milliseconds connect_timeout{10000};    // Default: 10 s
  std::chrono::milliseconds delivery_timeout{300000};  // Default: 5 min
  int replication = 1;                                 // Default: 1 (single test broker)
  std::int32_t partitions = 1;                         // Default: 1 (one ordering partition)
};

// The partition of an entity key in an N-partition topic: librdkafka's murmur2 partitioner,
// identical to the Java client's default (Utils.toPositive(Utils.murmur2(key)) % N). Empty
// keys (cluster-scoped events) map to partition 0.
[[nodiscard]] std::int32_t kafka_partition_of(std::string_view key, std::int32_t partitions);

// What a consumer-group member does with its partitions (kafka_log::consume_group). Every call
// comes from the thread running consume_group.
class group_handler {
 public:
  virtual ~group_handler() = default;
  // The partition is now ours: load its state; return the Kafka offset to continue from.
  [[nodiscard]] virtual result<log_offset> assigned(std::int32_t partition) = 0;
  // The partition is taken away. lost=false: we still own it until this returns (make the
  // state durable and commit); lost=true: another member may own it already (drop only).
  [[nodiscard]] virtual result<void> revoked(std::int32_t partition, bool lost) = 0;
  // One verified record of an owned partition, in Kafka offset order without gaps.
  [[nodiscard]] virtual result<void> record(std::int32_t partition, log_offset kafka_offset,
                                            bytes_view bytes) = 0;
  // Called about every 100 ms (periodic snapshots of idle partitions).
  [[nodiscard]] virtual result<void> tick() = 0;
};

// Parses kafka://host:port/topic[?k=v&...]; errors name the offending part.
[[nodiscard]] result<kafka_address> parse_kafka_name(std::string_view name);

// Deletes the topic of a kafka:// name through the admin API (benchmarks drop what they wrote:
// a broker that kept every benchmark's ~250 MB topics ran the same replay ~30% slower).
// A topic that does not exist is not an error.
[[nodiscard]] result<void> delete_kafka_topic(std::string_view name);

class kafka_log final : public event_log {
 public:
  [[nodiscard]] static result<std::unique_ptr<kafka_log>> open(std::string_view name,
                                                               const log_options& opts);
  ~kafka_log() override;

  [[nodiscard]] result<log_offset> append(std::span<const bytes_view> records) override;
  [[nodiscard]] result<std::uint64_t> read(log_offset from, log_offset to,
                                           const record_sink& sink) override;
  [[nodiscard]] result<log_offset> end_offset() override;
  [[nodiscard]] result<log_offset> wait_for(log_offset offset,
                                            std::chrono::milliseconds timeout) override;
  [[nodiscard]] std::string describe() const override;

  // Streams records from `from` on, following appends as they arrive, with one consumer kept
  // assigned (lower latency than read + wait_for). Stops when the sink returns false or
  // keep_going() returns false (checked at least every 100 ms). Returns records delivered.
  [[nodiscard]] result<std::uint64_t> follow(log_offset from, const record_sink& sink,
                                             const std::function<bool()>& keep_going);

  // Consumer-group position of partition 0 (what Kafka's tools show as the group's lag).
  // Colony consumers keep their real position in their snapshot and commit here only after
  // the snapshot is durable, so this is informational and never ahead of durable state.
  [[nodiscard]] result<void> commit_group(const std::string& group, log_offset next);
  [[nodiscard]] result<std::optional<log_offset>> committed(const std::string& group);

  [[nodiscard]] const kafka_address& address() const;

  // Partitioned mode: each partition's high watermark (its next Kafka offset).
  [[nodiscard]] result<std::vector<log_offset>> partition_ends();

  // Joins consumer group `group` (subscribe, cooperative-sticky assignment) and feeds the
  // handler until keep_going() returns false (checked at least every 100 ms) or a handler
  // call fails; leaving the group revokes every partition (handler.revoked(p, false)).
  [[nodiscard]] result<void> consume_group(const std::string& group, group_handler& handler,
                                           const std::function<bool()>& keep_going);
  // Commits `next` for one partition as this group member; only inside consume_group.
  [[nodiscard]] result<void> commit_member(std::int32_t partition, log_offset next);

 private:
  struct impl;
  explicit kafka_log(std::unique_ptr<impl> i);
  std::unique_ptr<impl> impl_;
};

}  // namespace colony::stores
