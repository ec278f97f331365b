#include "stores/kafka_log.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include <librdkafka/rdkafka.h>

#include "messages/aligned.hpp"
#include "messages/routes.hpp"
#include "stores/kafka_client.hpp"

namespace colony::stores {

namespace {

// librdkafka hands payloads at any address inside its fetch buffers, and FlatBuffers reads
// scalars in place (messages/aligned.hpp): every read of a payload goes through an aligned
// view. payload_of copies into the caller's scratch only when the address is misaligned.
bytes_view payload_of(const rd_kafka_message_t* m, messages::byte_buffer& scratch) {
  return messages::realign(bytes_view(static_cast<const std::uint8_t*>(m->payload), m->len),
                           scratch);
}

// messages::decode naming the record's place only when it fails: building "kafka T/P@O" for
// every record would allocate per record on the read path.
template <class Where>
result<messages::decoded> verify(bytes_view bytes, const Where& where) {
  auto d = messages::decode(bytes, {});
  if (!d) return messages::decode(bytes, where());
  return d;
}

// Local queue bounds of reader consumers (queued.min.messages, queued.max.messages.kbytes):
// about 20 MB of ~200-byte events, enough to cover a fetch round trip at 2M events/s.
constexpr int reader_queued_min_messages = 100000;  // Default: 100000 (librdkafka)
constexpr int reader_queued_max_kbytes = 32768;     // Default: 65536 (librdkafka 2.0)

// A consumer's messages in batches (readers, and the consumer-group member of consume_group):
// waits up to the timeout for the first one, then takes what else is already queued without
// waiting, so a busy read pays one queue lock per batch instead of one per message, and a
// follower still gets a lone message at once.
//
// It also wakes the fetcher when a slow sink has let the queue fill. librdkafka stops fetching
// a partition while its local queue holds queued.min.messages or queued.max.messages.kbytes,
// and its broker thread then sleeps until an op, a socket event or 1 s (rd_kafka_max_block_ms)
// wakes it; draining the queue wakes nothing (fetch.queue.backoff.ms, which bounds this sleep,
// came in librdkafka 2.2; Debian 12 ships 2.0.2). A sink slower than the fetch therefore
// drained ~100k records, then waited out the rest of the second: kafka.replay folded 200k
// events/s into the world with 4 s of 5 s spent waiting in poll. So once the queue has been
// near its bound and is half drained, a ListOffsets request to the partitions' leaders puts an
// op on their broker threads, which then find the queue below its bound and fetch again while
// half the queue is still left to the sink. The request goes out through
// rd_kafka_offsets_for_times with a zero timeout: it returns at once and librdkafka drops the
// late answer (its callback is told the caller has gone), so the reader never waits for the
// broker (a blocking query cost ~12 ms per wake-up on a loaded box). Nothing else about the
// consumer changes: no pause, no seek, same records in the same order.
//
// A consumer-group member takes one message per poll instead (take::one_by_one, same wake-up):
// librdkafka 2.0.2's rd_kafka_consume_batch_queue moves a partition's application position
// past each message as it takes it, and when a version barrier (a pause: every rebalance of a
// subscribed consumer pauses the whole assignment first) arrives within the same call, it
// drops that partition's messages from the batch without moving the position back, so after
// the resume the partition continues past records the application never saw (fixed in 2.1.0,
// "consume_batch_queue intermittently skipping offsets when pause or resume was being used").
// Readers assign and never pause, so they take batches.
class message_batches {
 public:
  enum class take { batches, one_by_one };
  message_batches(rd_kafka_t* c, const std::string& topic, std::span<const std::int32_t> partitions,
                  take how = take::batches)
      : c_(c),
        how_(how),
        q_(rd_kafka_queue_get_consumer(c)),
        leaders_(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size()))) {
    for (auto p : partitions)
      rd_kafka_topic_partition_list_add(leaders_, topic.c_str(), p)->offset = RD_KAFKA_OFFSET_END;
  }
  message_batches(const message_batches&) = delete;
  message_batches& operator=(const message_batches&) = delete;
  ~message_batches() {
    for (; at_ < end_; ++at_) rd_kafka_message_destroy(buf_[at_]);
    rd_kafka_queue_destroy(q_);
    rd_kafka_topic_partition_list_destroy(leaders_);
  }
  // The next message (the caller owns it), or null when none came within timeout_ms.
  [[nodiscard]] rd_kafka_message_t* next(int timeout_ms) {
    if (at_ < end_) return buf_[at_++];
    rd_kafka_message_t* first = rd_kafka_consumer_poll(c_, timeout_ms);
    if (!first) return nullptr;
    if (how_ == take::one_by_one) {
      // The queue is looked at (one lock) every 256 messages.
      ++seen_;
      seen_bytes_ += first->len;
      if (seen_ % 256 == 0) {
        const double f = fill();
        if (f >= 0.75)
          near_full_ = true;
        else if (near_full_ && f < 0.5) {
          near_full_ = false;
          wake_fetcher();
        }
      }
      return first;
    }
    // The queue holds this batch now: its fill before the batch is taken is what the fetcher
    // saw (a batch may take all of a queue of large records).
    if (fill() >= 0.75) near_full_ = true;
    const auto got = rd_kafka_consume_batch_queue(q_, 0, buf_.data(), buf_.size());
    at_ = 0;
    end_ = got > 0 ? static_cast<std::size_t>(got) : 0;
    ++seen_;
    seen_bytes_ += first->len;
    for (std::size_t i = 0; i < end_; ++i) seen_bytes_ += buf_[i]->len;
    seen_ += end_;
    if (near_full_ && fill() < 0.5) {
      near_full_ = false;
      wake_fetcher();
    }
    return first;
  }

 private:
  // The queue's fill against the tighter of its two bounds; bytes are estimated from the mean
  // size of the records taken so far (librdkafka does not expose the queued bytes).
  double fill() const {
    const auto len = static_cast<double>(rd_kafka_queue_length(q_));
    const double mean = seen_ > 0 ? static_cast<double>(seen_bytes_) / seen_ : 0;
    return std::max(len / reader_queued_min_messages,
                    len * mean / (reader_queued_max_kbytes * 1024.0));
  }
  void wake_fetcher() {
    // Only the request matters: the call times out at once by design (__TIMED_OUT), and any
    // other failure (a broker that is gone) is the read's stall timeout's business.
    for (int i = 0; i < leaders_->cnt; ++i) leaders_->elems[i].offset = RD_KAFKA_OFFSET_END;
    (void)rd_kafka_offsets_for_times(c_, leaders_, 0);
  }

  rd_kafka_t* c_;
  take how_;
  rd_kafka_queue_t* q_;
  rd_kafka_topic_partition_list_t* leaders_;  // the partitions read, offsets for times
  std::array<rd_kafka_message_t*, 1024> buf_{};
  std::size_t at_ = 0;
  std::size_t end_ = 0;
  std::uint64_t seen_ = 0;
  std::uint64_t seen_bytes_ = 0;
  bool near_full_ = false;
};

// What the merge read needs of a record, from one aligned view: its event sequence (the
// envelope's offset) and whether it is a mirror (Kafka key differs from the envelope's entity
// key). REQUIRES: the payload passed decode().
struct record_facts {
  log_offset sequence = 0;
  bool mirror = false;
};
record_facts facts_of(const rd_kafka_message_t* m, messages::byte_buffer& scratch) {
  const auto* env = wire::GetEnvelope(payload_of(m, scratch).data());
  const auto* k = env->entity_key();
  const std::string_view ek = k ? std::string_view(k->c_str(), k->size()) : std::string_view{};
  const std::string_view mk(static_cast<const char*>(m->key), m->key ? m->key_len : 0);
  return {env->offset(), ek != mk};
}

using namespace kafka_client;  // handles, settings, error mapping (stores/kafka_client.hpp)
using std::chrono::milliseconds;

constexpr std::int32_t partition = 0;                  // the ordering partition
constexpr const char* max_message_bytes = "67108864";  // > kafka_max_batch_bytes + overhead

result<std::uint64_t> parse_u64(std::string_view s, std::string_view what) {
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || s.empty())
    return fail(errc::invalid_input,
                "expected a non-negative integer, got '" + std::string(s) + "'", std::string(what));
  return v;
}

// What the topic looks like in metadata.
struct topic_info {
  bool exists = false;
  int partitions = 0;
  bool leader_known = false;  // every partition has a leader
};

}  // namespace

result<kafka_address> parse_kafka_name(std::string_view name) {
  const std::string whole(name);
  constexpr std::string_view scheme = "kafka://";
  if (!name.starts_with(scheme))
    return fail(errc::invalid_input, "expected kafka://host:port/topic", whole);
  name.remove_prefix(scheme.size());
  std::string_view query;
  if (auto q = name.find('?'); q != std::string_view::npos) {
    query = name.substr(q + 1);
    name = name.substr(0, q);
  }
  auto slash = name.find('/');
  if (slash == std::string_view::npos || slash == 0 || slash + 1 == name.size())
    return fail(errc::invalid_input, "expected kafka://host:port/topic (bootstrap and topic)",
                whole);
  kafka_address a;
  a.bootstrap = std::string(name.substr(0, slash));
  a.topic = std::string(name.substr(slash + 1));
  for (char c : a.topic)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-'))
      return fail(errc::invalid_input,
                  "topic names use letters, digits, '.', '_' and '-' only (Kafka's rule)", whole);
  if (a.topic.size() > 249) return fail(errc::invalid_input, "topic name longer than 249", whole);
  for (std::string_view bs = a.bootstrap; !bs.empty();) {
    auto comma = bs.find(',');
    auto one = bs.substr(0, comma);
    auto colon = one.rfind(':');
    if (colon == std::string_view::npos || colon == 0 || !parse_u64(one.substr(colon + 1), whole))
      return fail(errc::invalid_input, "bootstrap '" + std::string(one) + "' is not host:port",
                  whole);
    bs = comma == std::string_view::npos ? std::string_view{} : bs.substr(comma + 1);
  }
  while (!query.empty()) {
    auto amp = query.find('&');
    auto kv = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos)
      return fail(errc::invalid_input, "option '" + std::string(kv) + "' needs =value", whole);
    auto k = kv.substr(0, eq);
    auto v = parse_u64(kv.substr(eq + 1), std::string(k) + " in " + whole);
    if (!v) return tl::unexpected(v.error());
    if (k == "connect_timeout_ms")
      a.connect_timeout = milliseconds(*v);
    else if (k == "delivery_timeout_ms" && *v >= 1000)
      a.delivery_timeout = milliseconds(*v);
    else if (k == "replication" && *v >= 1 && *v <= 16)
      a.replication = static_cast<int>(*v);
    else if (k == "partitions" && *v >= 1 && *v <= 1024)
      a.partitions = static_cast<std::int32_t>(*v);
    else
      return fail(errc::invalid_input,
                  "unknown option '" + std::string(k) +
                      "' or value (connect_timeout_ms, delivery_timeout_ms >= 1000, replication "
                      "1..16, partitions 1..1024)",
                  whole);
  }
  return a;
}

struct kafka_log::impl {
  kafka_address addr;
  log_options opts;
  std::string name;    // kafka://bootstrap/topic, for messages
  handle_ptr control;  // producer (writers) or a plain client: metadata, admin, watermarks
  topic_ptr control_topic;

  // Appends (serialised).
  std::mutex append_mu;
  bool next_known = false;
  log_offset next = 0;
  std::vector<std::vector<std::uint8_t>> bufs;  // patched copies, alive until delivered

  // Delivery reports of the append in flight (written by the dr callback, which runs on the
  // appending thread inside rd_kafka_poll).
  struct delivery {
    std::size_t pending = 0;
    std::vector<std::int64_t> offsets;
    std::vector<rd_kafka_resp_err_t> errors;
  } dr;

  std::mutex errors_mu;
  std::string last_client_error;

  // Reader consumers, reused across reads; one pool per fetch_use.
  std::mutex pool_mu;
  std::array<std::vector<rd_kafka_t*>, 2> pools;

  // Group committers by group id.
  std::mutex groups_mu;
  std::vector<std::pair<std::string, handle_ptr>> groups;

  ~impl() {
    for (auto& pool : pools)
      for (auto* c : pool) {
        rd_kafka_consumer_close(c);
        rd_kafka_destroy(c);
      }
    for (auto& [g, h] : groups) rd_kafka_consumer_close(h.get());
  }

  std::string where_at(log_offset off) const {
    return "kafka " + addr.topic + "/" + std::to_string(partition) + "@" + std::to_string(off);
  }
  std::string unreachable(std::chrono::milliseconds waited, rd_kafka_resp_err_t e) {
    std::string last;
    {
      std::lock_guard<std::mutex> lk(errors_mu);
      last = last_client_error;
    }
    return "cannot reach the Kafka broker at " + addr.bootstrap + " within " +
           std::to_string(waited.count()) + " ms (" + err_text(e) +
           (last.empty() ? "" : "; last client error: " + last) + ")";
  }

  static void on_error(rd_kafka_t*, int err, const char* reason, void* opaque) {
    auto* self = static_cast<impl*>(opaque);
    std::lock_guard<std::mutex> lk(self->errors_mu);
    self->last_client_error =
        std::string(rd_kafka_err2name(static_cast<rd_kafka_resp_err_t>(err))) + ": " + reason;
  }

  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<impl*>(opaque);
    auto i = reinterpret_cast<std::uintptr_t>(m->_private);
    if (i < self->dr.offsets.size()) {
      self->dr.offsets[i] = m->offset;
      self->dr.errors[i] = m->err;
    }
    if (self->dr.pending > 0) --self->dr.pending;
  }

  result<topic_info> metadata(int timeout_ms) {
    const rd_kafka_metadata_t* md = nullptr;
    auto e = rd_kafka_metadata(control.get(), 0, control_topic.get(), &md, timeout_ms);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR) return fail(code_of(e), err_text(e), name);
    topic_info ti;
    for (int i = 0; i < md->topic_cnt; ++i) {
      const auto& t = md->topics[i];
      if (addr.topic != t.topic) continue;
      if (t.err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) break;
      if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR && t.err != RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE) {
        auto err = t.err;
        rd_kafka_metadata_destroy(md);
        return fail(code_of(err), "topic metadata: " + err_text(err), name);
      }
      ti.exists = true;
      ti.partitions = t.partition_cnt;
      int leaders = 0;
      for (int p = 0; p < t.partition_cnt; ++p)
        if (t.partitions[p].leader >= 0 && t.partitions[p].err == RD_KAFKA_RESP_ERR_NO_ERROR)
          ++leaders;
      ti.leader_known = t.partition_cnt > 0 && leaders == t.partition_cnt;
    }
    rd_kafka_metadata_destroy(md);
    return ti;
  }

  // Metadata, retried until the deadline: a broker that is still starting refuses
  // connections for a moment, which is not yet "unreachable".
  result<topic_info> metadata_until(clock_type::time_point deadline,
                                    std::chrono::milliseconds budget) {
    for (;;) {
      auto m = metadata(std::max(ms_left(deadline), 1));
      if (m || m.error().code != errc::unavailable) return m;
      if (ms_left(deadline) == 0)
        return fail(errc::unavailable,
                    unreachable(budget, RD_KAFKA_RESP_ERR__TRANSPORT) + ": " + m.error().message,
                    name);
      std::this_thread::sleep_for(milliseconds(100));
    }
  }

  result<void> create_topic(int timeout_ms) {
    std::vector<std::pair<const char*, std::string>> extra = {
        {"max.message.bytes", max_message_bytes},
        {"message.timestamp.type", "CreateTime"},
    };
    // An acknowledged append reaches the disk before the acknowledgement, as the embedded
    // log's synced WAL does: with one replica, replication cannot stand in for fsync.
    if (opts.sync) extra.emplace_back("flush.messages", "1");
    return kafka_client::create_topic(control.get(), addr.topic, addr.partitions, addr.replication,
                                      extra, timeout_ms, name);
  }

  // The topic settings the contract relies on: nothing is ever deleted or compacted away.
  result<void> check_config(int timeout_ms) {
    auto* res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, addr.topic.c_str());
    auto call = admin_begin(control.get(), RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS, timeout_ms);
    rd_kafka_DescribeConfigs(control.get(), &res, 1, call.options.get(), call.queue.get());
    rd_kafka_ConfigResource_destroy(res);
    auto ev = admin_wait(call, timeout_ms, "admin request", name);
    if (!ev) return tl::unexpected(ev.error());
    const auto* dres = rd_kafka_event_DescribeConfigs_result(ev->get());
    std::size_t nres = 0;
    const auto** rs = rd_kafka_DescribeConfigs_result_resources(dres, &nres);
    for (std::size_t i = 0; i < nres; ++i) {
      if (auto e = rd_kafka_ConfigResource_error(rs[i]); e != RD_KAFKA_RESP_ERR_NO_ERROR)
        return fail(code_of(e), "describe topic config: " + err_text(e), name);
      std::size_t ncfg = 0;
      const auto** entries = rd_kafka_ConfigResource_configs(rs[i], &ncfg);
      for (std::size_t j = 0; j < ncfg; ++j) {
        std::string_view k = rd_kafka_ConfigEntry_name(entries[j]);
        const char* vp = rd_kafka_ConfigEntry_value(entries[j]);
        std::string_view v = vp ? vp : "";
        if (k == "cleanup.policy" && v.find("compact") != std::string_view::npos)
          return fail(errc::failed_precondition,
                      "topic has cleanup.policy=" + std::string(v) +
                          ": compaction removes records, a Colony log needs every one",
                      name);
        if ((k == "retention.ms" || k == "retention.bytes") && v != "-1")
          return fail(errc::failed_precondition,
                      "topic has " + std::string(k) + "=" + std::string(v) +
                          ": records would be deleted; a Colony log needs -1 (keep forever)",
                      name);
      }
    }
    return {};
  }

  result<std::pair<log_offset, log_offset>> watermarks(rd_kafka_t* rk, int timeout_ms,
                                                       std::int32_t p = partition) {
    std::int64_t lo = 0, hi = 0;
    auto e = rd_kafka_query_watermark_offsets(rk, addr.topic.c_str(), p, &lo, &hi, timeout_ms);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return fail(code_of(e), "watermarks of partition " + std::to_string(p) + ": " + err_text(e),
                  name);
    return std::pair<log_offset, log_offset>{static_cast<log_offset>(lo),
                                             static_cast<log_offset>(hi)};
  }

  // Watermarks at open, retried until the deadline: a just-created partition's leader may
  // refuse offsets for a moment after metadata already names it (seen under load:
  // NOT_LEADER_FOR_PARTITION on a one-partition topic a few ms after its creation).
  result<std::pair<log_offset, log_offset>> watermarks_until(clock_type::time_point deadline,
                                                             std::int32_t p = partition) {
    auto w = watermarks(control.get(), op_timeout_ms(), p);
    while (!w && w.error().code == errc::unavailable && ms_left(deadline) > 0) {
      std::this_thread::sleep_for(milliseconds(50));
      w = watermarks(control.get(), op_timeout_ms(), p);
    }
    return w;
  }

  int op_timeout_ms() const {
    return static_cast<int>(std::max<std::int64_t>(addr.connect_timeout.count(), 1000));
  }

  result<log_offset> high_watermark() {
    auto w = watermarks(control.get(), op_timeout_ms());
    if (!w) return tl::unexpected(w.error());
    return w->second;
  }

  // What a reader consumer is for; it decides how long the broker may hold a fetch that finds
  // nothing new (fetch.wait.max.ms). librdkafka keeps one fetch per broker in flight and a
  // consumer's next fetch (after unassign and assign) waits for the previous one, so the fetch
  // a read leaves long-polling at its end delayed the next read on that consumer by up to the
  // whole wait: 100 ms before the first record, measured, at every read but the first.
  //   bulk:   reads of records that exist (read, the merge read, the last records):
  //           the broker answers at once while there are records, so a short wait only
  //           bounds that tail.
  //   follow: waits for records to arrive (follow, wait_for): a longer wait means fewer
  //           empty fetches while idle; the broker still answers as soon as a record lands.
  enum class fetch_use : std::size_t { bulk = 0, follow = 1 };

  result<rd_kafka_t*> new_consumer(const std::string& group, fetch_use use = fetch_use::follow) {
    auto c = base_conf(addr,
                       {
                           {"group.id", group},
                           {"enable.auto.commit", "false"},
                           {"enable.auto.offset.store", "false"},
                           {"enable.partition.eof", "false"},
                           // Never jump to another position silently.
                           {"auto.offset.reset", "error"},
                           {"isolation.level", "read_uncommitted"},
                           {"fetch.wait.max.ms", use == fetch_use::bulk ? "5" : "100"},
                           {"fetch.error.backoff.ms", "50"},
                           {"max.partition.fetch.bytes", "8388608"},
                           {"queued.min.messages", std::to_string(reader_queued_min_messages)},
                           {"queued.max.messages.kbytes", std::to_string(reader_queued_max_kbytes)},
                           {"receive.message.max.bytes", "100000000"},
                       });
    if (!c) return tl::unexpected(c.error());
    rd_kafka_conf_set_error_cb(c->get(), &impl::on_error);
    rd_kafka_conf_set_opaque(c->get(), this);
    char err[512];
    rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, c->get(), err, sizeof(err));
    if (!rk) return fail(errc::internal, std::string("consumer: ") + err, name);
    (void)c->release();  // owned by rk now
    rd_kafka_poll_set_consumer(rk);
    return rk;
  }

  result<rd_kafka_t*> acquire(fetch_use use) {
    {
      std::lock_guard<std::mutex> lk(pool_mu);
      auto& pool = pools[static_cast<std::size_t>(use)];
      if (!pool.empty()) {
        auto* c = pool.back();
        pool.pop_back();
        return c;
      }
    }
    return new_consumer("colony-reader", use);
  }
  // A pooled reader consumer, given back when it goes out of scope.
  struct lease {
    impl& im;
    rd_kafka_t* c;
    fetch_use use;
    ~lease() { im.release(c, use); }
  };
  void release(rd_kafka_t* c, fetch_use use) {
    // Unassign: an idle pooled consumer must not keep prefetching the topic.
    rd_kafka_assign(c, nullptr);
    std::lock_guard<std::mutex> lk(pool_mu);
    pools[static_cast<std::size_t>(use)].push_back(c);
  }

  result<void> assign(rd_kafka_t* c, log_offset from) {
    tpl_ptr l(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(l.get(), addr.topic.c_str(), partition)->offset =
        static_cast<std::int64_t>(from);
    if (auto e = rd_kafka_assign(c, l.get()); e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return fail(code_of(e), "assign partition 0 at " + std::to_string(from) + ": " + err_text(e),
                  name);
    return {};
  }

  // ---- partitioned mode (docs/cluster.md) -------------------------------------------

  bool partitioned() const { return addr.partitions > 1; }
  std::vector<log_offset> pnext;  // writer: next Kafka offset of each partition

  std::string where_p(std::int32_t p, log_offset off) const {
    return "kafka " + addr.topic + "/" + std::to_string(p) + "@" + std::to_string(off);
  }

  result<std::vector<log_offset>> all_ends() {
    std::vector<log_offset> out;
    for (std::int32_t p = 0; p < addr.partitions; ++p) {
      auto w = watermarks(control.get(), op_timeout_ms(), p);
      if (!w) return tl::unexpected(w.error());
      out.push_back(w->second);
    }
    return out;
  }

  // One consumed message of partition p, verified; ok=false: stale, skip. Unlike check(), the
  // envelope's offset is the event sequence, not the Kafka offset.
  result<bool> check_part(const rd_kafka_message_t* m, log_offset expect,
                          messages::byte_buffer& scratch) {
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return false;
      return fail(
          code_of(m->err), "consume: " + err_text(m->err),
          where_p(m->partition, static_cast<log_offset>(std::max<std::int64_t>(0, m->offset))));
    }
    const auto off = static_cast<log_offset>(m->offset);
    if (off < expect) return false;
    if (off > expect)
      return fail(errc::corrupt, "gap in partition: expected offset " + std::to_string(expect),
                  where_p(m->partition, off));
    auto d = verify(payload_of(m, scratch), [&] { return where_p(m->partition, off); });
    if (!d) return tl::unexpected(d.error());
    return true;
  }

  // The next event sequence: one past the largest envelope offset among the last records of
  // the partitions (a mirror repeats its event's sequence, so any partition's last record may
  // hold the largest).
  result<log_offset> next_sequence() {
    auto ends = all_ends();
    if (!ends) return tl::unexpected(ends.error());
    tpl_ptr l(rd_kafka_topic_partition_list_new(addr.partitions));
    int want = 0;
    for (std::int32_t p = 0; p < addr.partitions; ++p)
      if ((*ends)[p] > 0) {
        rd_kafka_topic_partition_list_add(l.get(), addr.topic.c_str(), p)->offset =
            static_cast<std::int64_t>((*ends)[p] - 1);
        ++want;
      }
    if (want == 0) return log_offset{0};
    auto c = acquire(fetch_use::bulk);
    if (!c) return tl::unexpected(c.error());
    lease rel{*this, *c, fetch_use::bulk};
    if (auto e = rd_kafka_assign(*c, l.get()); e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return fail(code_of(e), "assign the last records: " + err_text(e), name);
    std::vector<bool> seen(static_cast<std::size_t>(addr.partitions), false);
    log_offset best = 0;
    messages::byte_buffer scratch;
    const auto stall = std::max<milliseconds>(addr.connect_timeout, milliseconds(1000));
    const auto deadline = clock_type::now() + stall;
    while (want > 0) {
      message_ptr m(rd_kafka_consumer_poll(*c, 100));
      if (!m) {
        if (clock_type::now() > deadline)
          return fail(errc::unavailable,
                      "no last records within " + std::to_string(stall.count()) + " ms", name);
        continue;
      }
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (code_of(m->err) == errc::unavailable) continue;
        return fail(code_of(m->err), "read the last records: " + err_text(m->err), name);
      }
      const auto p = m->partition;
      if (p < 0 || p >= addr.partitions || seen[static_cast<std::size_t>(p)] ||
          static_cast<log_offset>(m->offset) + 1 != (*ends)[static_cast<std::size_t>(p)])
        continue;
      auto ok = check_part(m.get(), static_cast<log_offset>(m->offset), scratch);
      if (!ok) return tl::unexpected(ok.error());
      seen[static_cast<std::size_t>(p)] = true;
      --want;
      best = std::max<log_offset>(best, facts_of(m.get(), scratch).sequence + 1);
    }
    return best;
  }

  // Group membership (consume_group); callbacks run on the consuming thread.
  rd_kafka_t* member = nullptr;
  group_handler* handler = nullptr;
  std::vector<log_offset> member_expect;  // next Kafka offset of owned partitions, else no_offset
  error member_err;

  void member_fail(const error& e) {
    if (member_err.message.empty()) member_err = e;
  }

  static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* parts, void* opaque) {
    auto* self = static_cast<impl*>(opaque);
    const bool cooperative = std::string_view(rd_kafka_rebalance_protocol(rk)) == "COOPERATIVE";
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      for (int i = 0; i < parts->cnt; ++i) {
        auto& tp = parts->elems[i];
        auto at = self->handler ? self->handler->assigned(tp.partition)
                                : result<log_offset>(log_offset{0});
        if (!at) {
          // Without its state the partition cannot be served; start it nowhere (the member
          // stops and leaves the group, which hands the partition to someone else).
          self->member_fail(at.error());
          tp.offset = RD_KAFKA_OFFSET_END;
          continue;
        }
        tp.offset = static_cast<std::int64_t>(*at);
        if (tp.partition >= 0 && tp.partition < self->addr.partitions)
          self->member_expect[static_cast<std::size_t>(tp.partition)] = *at;
      }
      if (cooperative) {
        if (auto* e = rd_kafka_incremental_assign(rk, parts)) {
          self->member_fail(error{errc::unavailable,
                                  std::string("incremental assign: ") + rd_kafka_error_string(e),
                                  self->name});
          rd_kafka_error_destroy(e);
        }
      } else
        rd_kafka_assign(rk, parts);
      return;
    }
    // Revoke (or an error: treat as losing everything we were given).
    const bool lost = err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS || rd_kafka_assignment_lost(rk);
    for (int i = 0; i < parts->cnt; ++i) {
      const auto p = parts->elems[i].partition;
      if (p < 0 || p >= self->addr.partitions ||
          self->member_expect[static_cast<std::size_t>(p)] == no_offset)
        continue;
      if (self->handler)
        if (auto r = self->handler->revoked(p, lost); !r) self->member_fail(r.error());
      self->member_expect[static_cast<std::size_t>(p)] = no_offset;
    }
    if (cooperative) {
      if (auto* e = rd_kafka_incremental_unassign(rk, parts)) rd_kafka_error_destroy(e);
    } else
      rd_kafka_assign(rk, nullptr);
  }

  // Partitioned append (append_mu held, records verified): each record goes to its entity
  // key's partition and, as a mirror, to the partition of every other entity it touches.
  // One produce_batch per partition, so each partition's share is one record batch.
  result<log_offset> append_partitioned(std::span<const bytes_view> records) {
    if (!next_known) {
      // After a failed append any partition's share may or may not have landed: ask.
      auto ends = all_ends();
      if (!ends) return tl::unexpected(ends.error());
      auto seq = next_sequence();
      if (!seq) return tl::unexpected(seq.error());
      pnext = *ends;
      next = *seq;
      next_known = true;
    }
    const log_offset first = next;
    const std::size_t n = records.size();
    bufs.resize(n);
    struct out_msg {
      std::size_t record;
      std::string_view key;
    };
    std::vector<std::vector<out_msg>> per(static_cast<std::size_t>(addr.partitions));
    std::vector<std::string_view> keys;
    std::vector<std::int32_t> used;
    std::size_t total = 0;
    for (std::size_t i = 0; i < n; ++i) {
      auto& b = bufs[i];
      b.assign(records[i].begin(), records[i].end());
      if (!messages::patch_offset(b, first + i))
        return fail(errc::invalid_input, "envelope has no offset field (not made by event_builder)",
                    name + " append #" + std::to_string(i));
      const auto* env = wire::GetEnvelope(b.data());
      const auto* k = env->entity_key();
      const std::string_view own = k ? std::string_view(k->c_str(), k->size()) : std::string_view{};
      keys.clear();
      used.clear();
      keys.push_back(own);
      // Every other entity it touches (messages/routes.hpp) gets a mirror.
      const auto rl = messages::routes(*env);
      for (std::uint8_t r = 0; r < rl.size; ++r) keys.push_back(rl.refs[r].key);
      for (auto key : keys) {
        const auto p = kafka_partition_of(key, addr.partitions);
        if (std::find(used.begin(), used.end(), p) != used.end()) continue;
        used.push_back(p);
        per[static_cast<std::size_t>(p)].push_back({i, key});
        ++total;
      }
    }
    std::vector<rd_kafka_message_t> msgs(total);
    std::vector<std::int64_t> expect(total);
    std::size_t j = 0;
    std::vector<std::pair<std::size_t, std::size_t>> ranges;  // per partition [begin, end) in msgs
    for (std::int32_t p = 0; p < addr.partitions; ++p) {
      const std::size_t begin = j;
      for (const auto& om : per[static_cast<std::size_t>(p)]) {
        auto& m = msgs[j];
        m = rd_kafka_message_t{};
        m.payload = bufs[om.record].data();
        m.len = bufs[om.record].size();
        if (!om.key.empty()) {
          m.key = const_cast<char*>(om.key.data());
          m.key_len = om.key.size();
        }
        m._private = reinterpret_cast<void*>(static_cast<std::uintptr_t>(j));
        expect[j] = static_cast<std::int64_t>(pnext[static_cast<std::size_t>(p)] + (j - begin));
        ++j;
      }
      ranges.emplace_back(begin, j);
    }
    dr.offsets.assign(total, -1);
    dr.errors.assign(total, RD_KAFKA_RESP_ERR__IN_PROGRESS);
    dr.pending = total;
    std::size_t queued_all = 0;
    for (std::int32_t p = 0; p < addr.partitions; ++p) {
      const auto [b, e] = ranges[static_cast<std::size_t>(p)];
      if (b == e) continue;
      const int queued = rd_kafka_produce_batch(control_topic.get(), p, 0, msgs.data() + b,
                                                static_cast<int>(e - b));
      queued_all += static_cast<std::size_t>(std::max(queued, 0));
      if (queued != static_cast<int>(e - b)) {
        rd_kafka_purge(control.get(), RD_KAFKA_PURGE_F_QUEUE);
        dr.pending = queued_all;  // only queued messages get (purge) reports
        while (dr.pending > 0) rd_kafka_poll(control.get(), 100);
        next_known = false;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        for (std::size_t x = b; x < e; ++x)
          if (msgs[x].err != RD_KAFKA_RESP_ERR_NO_ERROR) err = msgs[x].err;
        return fail(code_of(err), "cannot queue the batch: " + err_text(err), where_p(p, 0));
      }
    }
    const auto deadline = clock_type::now() + addr.delivery_timeout + std::chrono::seconds(30);
    while (dr.pending > 0) {
      rd_kafka_flush(control.get(), 50);
      if (auto fe = rd_kafka_fatal_error(control.get(), nullptr, 0);
          fe != RD_KAFKA_RESP_ERR_NO_ERROR || clock_type::now() > deadline) {
        rd_kafka_purge(control.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        while (dr.pending > 0) rd_kafka_poll(control.get(), 100);
        next_known = false;
        return fail(errc::unavailable,
                    "append not acknowledged in time or fatal producer error; each partition's "
                    "share may or may not be in the log",
                    name);
      }
    }
    for (std::size_t x = 0; x < total; ++x) {
      if (dr.errors[x] != RD_KAFKA_RESP_ERR_NO_ERROR) {
        next_known = false;
        return fail(code_of(dr.errors[x]),
                    "append not acknowledged (" + err_text(dr.errors[x]) +
                        "); each partition's share may or may not be in the log",
                    name);
      }
      if (dr.offsets[x] != expect[x]) {
        next_known = false;
        return fail(errc::failed_precondition,
                    "a record landed at Kafka offset " + std::to_string(dr.offsets[x]) +
                        ", expected " + std::to_string(expect[x]) +
                        ": another writer appends to this topic",
                    name);
      }
    }
    for (std::int32_t p = 0; p < addr.partitions; ++p) {
      const auto [b, e] = ranges[static_cast<std::size_t>(p)];
      pnext[static_cast<std::size_t>(p)] += e - b;
    }
    next = first + n;
    return first;
  }

  // Partitioned read: every partition from its start, merged by event sequence, mirrors
  // skipped. A partition's records are in sequence order, so the smallest head is next.
  result<std::uint64_t> read_partitioned(log_offset from, log_offset to, const record_sink& sink) {
    auto ends = all_ends();
    if (!ends) return tl::unexpected(ends.error());
    const auto np = static_cast<std::size_t>(addr.partitions);
    tpl_ptr l(rd_kafka_topic_partition_list_new(addr.partitions));
    std::vector<log_offset> pos(np, 0);
    std::vector<std::int32_t> assigned;
    for (std::int32_t p = 0; p < addr.partitions; ++p)
      if ((*ends)[static_cast<std::size_t>(p)] > 0) {
        rd_kafka_topic_partition_list_add(l.get(), addr.topic.c_str(), p)->offset = 0;
        assigned.push_back(p);
      }
    if (l->cnt == 0) return std::uint64_t{0};
    auto c = acquire(fetch_use::bulk);
    if (!c) return tl::unexpected(c.error());
    lease rel{*this, *c, fetch_use::bulk};
    if (auto e = rd_kafka_assign(*c, l.get()); e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return fail(code_of(e), "assign: " + err_text(e), name);
    // Queued records per partition, with their event sequence (read once, when queued).
    struct head {
      log_offset seq = 0;
      message_ptr m;
    };
    std::vector<std::deque<head>> heads(np);
    std::vector<log_offset> last_seq(np, no_offset);
    std::uint64_t n = 0;
    log_offset expect_seq = no_offset;
    const auto stall = std::max<milliseconds>(addr.connect_timeout, milliseconds(1000));
    auto last_progress = clock_type::now();
    auto done = [&](std::size_t p) { return pos[p] >= (*ends)[p]; };
    messages::byte_buffer payload_scratch;
    message_batches batches(*c, addr.topic, assigned);
    for (;;) {
      // Deliver while every partition either has a head or is finished.
      for (;;) {
        std::size_t best = np;
        bool blocked = false;
        for (std::size_t p = 0; p < np; ++p) {
          if (heads[p].empty()) {
            if (!done(p)) blocked = true;
            continue;
          }
          if (best == np || heads[p].front().seq < heads[best].front().seq) best = p;
        }
        if (blocked || best == np) {
          if (!blocked && best == np) return n;  // everything consumed
          break;
        }
        message_ptr m = std::move(heads[best].front().m);
        const log_offset seq = heads[best].front().seq;
        heads[best].pop_front();
        if (seq >= to) return n;
        if (expect_seq != no_offset && seq != expect_seq)
          return fail(errc::corrupt,
                      "event sequence jumps from " + std::to_string(expect_seq - 1) + " to " +
                          std::to_string(seq) + " (a partial append across partitions?)",
                      where_p(m->partition, static_cast<log_offset>(m->offset)));
        expect_seq = seq + 1;
        if (seq < from) continue;
        ++n;
        if (!sink(seq, payload_of(m.get(), payload_scratch))) return n;
      }
      message_ptr m(batches.next(100));
      if (!m) {
        if (clock_type::now() - last_progress > stall)
          return fail(errc::unavailable,
                      "no records from the broker for " + std::to_string(stall.count()) + " ms",
                      name);
        continue;
      }
      const auto p = m->partition;
      if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR && (p < 0 || p >= addr.partitions)) continue;
      auto ok = check_part(
          m.get(), m->err == RD_KAFKA_RESP_ERR_NO_ERROR ? pos[static_cast<std::size_t>(p)] : 0,
          payload_scratch);
      if (!ok) return tl::unexpected(ok.error());
      if (!*ok) continue;
      last_progress = clock_type::now();
      const auto up = static_cast<std::size_t>(p);
      if (pos[up] >= (*ends)[up]) continue;  // past the end we read to
      ++pos[up];
      const auto facts = facts_of(m.get(), payload_scratch);
      const log_offset seq = facts.sequence;
      if (last_seq[up] != no_offset && seq <= last_seq[up])
        return fail(errc::corrupt,
                    "event sequence " + std::to_string(seq) + " after " +
                        std::to_string(last_seq[up]) + " in one partition",
                    where_p(p, static_cast<log_offset>(m->offset)));
      last_seq[up] = seq;
      if (facts.mirror) continue;
      heads[up].push_back(head{seq, std::move(m)});
    }
  }

  // One consumed message, verified; `view` is its payload, aligned (in `scratch` when
  // librdkafka's copy is not). ok=false: stale (from before the last assign), skip.
  result<bool> check(const rd_kafka_message_t* m, log_offset expect, messages::byte_buffer& scratch,
                     bytes_view& view) {
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return false;
      return fail(code_of(m->err), "consume: " + err_text(m->err), where_at(expect));
    }
    if (m->partition != partition) return false;
    const auto off = static_cast<log_offset>(m->offset);
    if (off < expect) return false;
    if (off > expect)
      return fail(errc::corrupt, "gap in the log: expected offset " + std::to_string(expect),
                  where_at(off));
    view = payload_of(m, scratch);
    auto d = verify(view, [&] { return where_at(off); });
    if (!d) return tl::unexpected(d.error());
    if (d->envelope->offset() != off)
      return fail(errc::corrupt,
                  "envelope says offset " + std::to_string(d->envelope->offset()) +
                      " but Kafka stores it at " + std::to_string(off) +
                      " (a second writer appended to this topic?)",
                  where_at(off));
    return true;
  }
};

kafka_log::kafka_log(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

kafka_log::~kafka_log() {
  if (impl_ && impl_->control && !impl_->opts.read_only)
    rd_kafka_flush(impl_->control.get(), 5000);  // nothing is queued between appends
}

const kafka_address& kafka_log::address() const { return impl_->addr; }

std::string kafka_log::describe() const { return impl_->name; }

result<std::unique_ptr<kafka_log>> kafka_log::open(std::string_view name, const log_options& opts) {
  auto a = parse_kafka_name(name);
  if (!a) return tl::unexpected(a.error());
  auto im = std::make_unique<impl>();
  im->addr = *a;
  im->opts = opts;
  im->name = "kafka://" + a->bootstrap + "/" + a->topic;
  const bool writer = !opts.read_only;
  const auto delivery_ms = std::to_string(a->delivery_timeout.count());
  // librdkafka wants message.timeout.ms > linger.ms, and caps linger.ms at 900000.
  const auto linger_ms =
      std::to_string(std::min<std::int64_t>(900000, a->delivery_timeout.count() - 1));
  auto conf =
      writer ? base_conf(*a,
                         {
                             {"enable.idempotence", "true"},
                             {"acks", "all"},
                             {"max.in.flight.requests.per.connection", "5"},
                             {"message.timeout.ms", delivery_ms},
                             // One append = one record batch (see the header):
                             // nothing leaves before rd_kafka_flush() in append,
                             // which ignores linger.ms. With a short linger the
                             // broker thread takes the first messages while
                             // produce_batch is still enqueuing the rest (seen
                             // with DumpLogSegments: a 64-record append became
                             // 6 batches).
                             {"linger.ms", linger_ms},
                             {"batch.num.messages", std::to_string(kafka_max_batch_records)},
                             {"batch.size", std::to_string(kafka_max_batch_bytes + (8u << 20))},
                             {"message.max.bytes", max_message_bytes},
                             {"queue.buffering.max.messages", "1000000"},
                             {"queue.buffering.max.kbytes", "1048576"},
                             {"compression.type", "none"},
                             {"retry.backoff.ms", "50"},
                         })
             : base_conf(*a, {});
  if (!conf) return tl::unexpected(conf.error());
  rd_kafka_conf_set_error_cb(conf->get(), &impl::on_error);
  rd_kafka_conf_set_dr_msg_cb(conf->get(), &impl::on_delivery);
  rd_kafka_conf_set_opaque(conf->get(), im.get());
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf->get(), err, sizeof(err));
  if (!rk) return fail(errc::internal, std::string("producer: ") + err, im->name);
  (void)conf->release();
  im->control.reset(rk);
  im->control_topic.reset(rd_kafka_topic_new(rk, a->topic.c_str(), nullptr));

  const auto budget = a->connect_timeout;
  const auto deadline = clock_type::now() + budget;
  auto md = im->metadata_until(deadline, budget);
  if (!md) return tl::unexpected(md.error());
  if (!md->exists) {
    if (!opts.create_if_missing || opts.read_only)
      return fail(errc::not_found, "no such topic", im->name);
    if (auto c = im->create_topic(std::max(ms_left(deadline), 5000)); !c)
      return tl::unexpected(c.error());
  }
  // Wait until partition 0 has a leader (a just-created topic takes a moment).
  for (;;) {
    md = im->metadata_until(deadline, budget);
    if (!md) return tl::unexpected(md.error());
    if (md->exists && md->leader_known) break;
    if (ms_left(deadline) == 0)
      return fail(
          errc::unavailable,
          "a partition of the topic has no leader after " + std::to_string(budget.count()) + " ms",
          im->name);
    std::this_thread::sleep_for(milliseconds(50));
  }
  if (md->partitions != a->partitions)
    return fail(
        errc::failed_precondition,
        "topic has " + std::to_string(md->partitions) + " partitions but the name says " +
            std::to_string(a->partitions) +
            (a->partitions == 1 ? "; a Colony log is one ordering partition unless opened with "
                                  "?partitions=" +
                                      std::to_string(md->partitions) + " (docs/cluster.md)"
                                : " (docs/cluster.md)"),
        im->name);
  if (auto c = im->check_config(im->op_timeout_ms()); !c) return tl::unexpected(c.error());
  if (im->partitioned()) {
    for (std::int32_t p = 0; p < a->partitions; ++p) {
      auto pw = im->watermarks_until(deadline, p);
      if (!pw) return tl::unexpected(pw.error());
      if (pw->first != 0)
        return fail(errc::failed_precondition,
                    "partition " + std::to_string(p) + "'s first offset is " +
                        std::to_string(pw->first) + ", not 0: records were deleted",
                    im->name);
      im->pnext.push_back(pw->second);
    }
    if (writer) {
      auto seq = im->next_sequence();
      if (!seq) return tl::unexpected(seq.error());
      im->next = *seq;
      im->next_known = true;
    }
    im->member_expect.assign(static_cast<std::size_t>(a->partitions), no_offset);
    return std::unique_ptr<kafka_log>(new kafka_log(std::move(im)));
  }
  auto w = im->watermarks_until(deadline);
  if (!w) return tl::unexpected(w.error());
  if (w->first != 0)
    return fail(errc::failed_precondition,
                "the topic's first offset is " + std::to_string(w->first) +
                    ", not 0: records were deleted, and a Colony log needs its whole history",
                im->name);
  if (writer) {
    im->next = w->second;
    im->next_known = true;
  }
  return std::unique_ptr<kafka_log>(new kafka_log(std::move(im)));
}

result<log_offset> kafka_log::append(std::span<const bytes_view> records) {
  auto& im = *impl_;
  if (im.opts.read_only) return fail(errc::failed_precondition, "log opened read-only", im.name);
  if (records.empty()) return fail(errc::invalid_input, "empty append", im.name);
  if (records.size() > kafka_max_batch_records)
    return fail(errc::invalid_input,
                "batch of " + std::to_string(records.size()) + " records exceeds " +
                    std::to_string(kafka_max_batch_records) +
                    " (one append must fit one Kafka record batch to be atomic)",
                im.name);
  std::size_t total = 0;
  for (std::size_t i = 0; i < records.size(); ++i) {
    if (auto d = messages::decode(records[i], im.name + " append #" + std::to_string(i)); !d)
      return tl::unexpected(d.error());
    total += records[i].size() + 64;  // record overhead in a v2 batch, generously
  }
  if (total > kafka_max_batch_bytes)
    return fail(errc::invalid_input,
                "batch of " + std::to_string(total) + " bytes exceeds " +
                    std::to_string(kafka_max_batch_bytes) +
                    " (one append must fit one Kafka record batch to be atomic)",
                im.name);

  std::lock_guard<std::mutex> lk(im.append_mu);
  if (auto fe = rd_kafka_fatal_error(im.control.get(), nullptr, 0);
      fe != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(errc::failed_precondition,
                "the idempotent producer hit a fatal error (" + err_text(fe) + "); reopen the log",
                im.name);
  if (im.partitioned()) return im.append_partitioned(records);
  if (!im.next_known) {
    // After a failed append its batch may or may not have landed: ask the broker.
    auto hw = im.high_watermark();
    if (!hw) return tl::unexpected(hw.error());
    im.next = *hw;
    im.next_known = true;
  }
  const log_offset first = im.next;
  const std::size_t n = records.size();
  im.bufs.resize(n);
  std::vector<rd_kafka_message_t> msgs(n);
  for (std::size_t i = 0; i < n; ++i) {
    auto& b = im.bufs[i];
    b.assign(records[i].begin(), records[i].end());
    if (!messages::patch_offset(b, first + i))
      return fail(errc::invalid_input, "envelope has no offset field (not made by event_builder)",
                  im.name + " append #" + std::to_string(i));
    const auto* env = wire::GetEnvelope(b.data());
    auto& m = msgs[i];
    m = rd_kafka_message_t{};
    m.payload = b.data();
    m.len = b.size();
    // The entity key as the Kafka key: subscribers and re-keying routers see it directly.
    if (const auto* k = env->entity_key(); k && k->size() > 0) {
      m.key = const_cast<char*>(k->c_str());
      m.key_len = k->size();
    }
    m._private = reinterpret_cast<void*>(static_cast<std::uintptr_t>(i));
  }
  im.dr.offsets.assign(n, -1);
  im.dr.errors.assign(n, RD_KAFKA_RESP_ERR__IN_PROGRESS);
  im.dr.pending = n;
  // All n messages go onto partition 0's queue; with linger.ms at its maximum none of them
  // leaves until the flush below, which sends them as one record batch.
  const int queued = rd_kafka_produce_batch(im.control_topic.get(), partition, 0, msgs.data(),
                                            static_cast<int>(n));
  if (queued != static_cast<int>(n)) {
    // Nothing partial may reach the broker: purge what was queued, then wait for its reports.
    rd_kafka_purge(im.control.get(), RD_KAFKA_PURGE_F_QUEUE);
    im.dr.pending = static_cast<std::size_t>(queued);
    while (im.dr.pending > 0) rd_kafka_poll(im.control.get(), 100);
    im.next_known = false;
    rd_kafka_resp_err_t e = RD_KAFKA_RESP_ERR__FAIL;
    for (const auto& m : msgs)
      if (m.err != RD_KAFKA_RESP_ERR_NO_ERROR) e = m.err;
    return fail(code_of(e), "cannot queue the batch: " + err_text(e), im.name);
  }
  const auto deadline = clock_type::now() + im.addr.delivery_timeout + std::chrono::seconds(30);
  while (im.dr.pending > 0) {
    // flush sends everything queued now, as one batch, and serves the delivery reports.
    rd_kafka_flush(im.control.get(), 50);
    if (auto fe = rd_kafka_fatal_error(im.control.get(), nullptr, 0);
        fe != RD_KAFKA_RESP_ERR_NO_ERROR) {
      rd_kafka_purge(im.control.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      while (im.dr.pending > 0) rd_kafka_poll(im.control.get(), 100);
      im.next_known = false;
      return fail(
          errc::unavailable,
          "fatal producer error (" + err_text(fe) + "); the batch may or may not be in the log",
          im.name);
    }
    if (clock_type::now() > deadline) {
      // librdkafka times messages out itself at message.timeout.ms; this is a safety net.
      rd_kafka_purge(im.control.get(), RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
      while (im.dr.pending > 0) rd_kafka_poll(im.control.get(), 100);
      im.next_known = false;
      return fail(errc::unavailable, "no delivery reports within the delivery timeout", im.name);
    }
  }
  std::size_t ok = 0;
  rd_kafka_resp_err_t first_err = RD_KAFKA_RESP_ERR_NO_ERROR;
  for (std::size_t i = 0; i < n; ++i) {
    if (im.dr.errors[i] == RD_KAFKA_RESP_ERR_NO_ERROR)
      ++ok;
    else if (first_err == RD_KAFKA_RESP_ERR_NO_ERROR)
      first_err = im.dr.errors[i];
  }
  if (ok != n) {
    im.next_known = false;
    if (ok == 0)
      return fail(code_of(first_err),
                  "append not acknowledged (" + err_text(first_err) +
                      "); it may or may not be in the log: check end_offset()",
                  im.name);
    return fail(errc::corrupt,
                std::to_string(ok) + " of " + std::to_string(n) +
                    " records acknowledged: the batch was split (" + err_text(first_err) + ")",
                im.name);
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (im.dr.offsets[i] != static_cast<std::int64_t>(first + i)) {
      im.next_known = false;
      return fail(errc::failed_precondition,
                  "record #" + std::to_string(i) + " landed at offset " +
                      std::to_string(im.dr.offsets[i]) + ", expected " + std::to_string(first + i) +
                      ": another writer appends to this topic",
                  im.name);
    }
  }
  im.next = first + n;
  return first;
}

result<std::uint64_t> kafka_log::read(log_offset from, log_offset to, const record_sink& sink) {
  auto& im = *impl_;
  if (from >= to) return std::uint64_t{0};
  if (im.partitioned()) return im.read_partitioned(from, to, sink);
  auto hw = im.high_watermark();
  if (!hw) return tl::unexpected(hw.error());
  const log_offset stop = std::min(to, *hw);
  if (from >= stop) return std::uint64_t{0};
  auto c = im.acquire(impl::fetch_use::bulk);
  if (!c) return tl::unexpected(c.error());
  impl::lease rel{im, *c, impl::fetch_use::bulk};
  if (auto a = im.assign(*c, from); !a) return tl::unexpected(a.error());
  std::uint64_t n = 0;
  log_offset expect = from;
  // No progress for this long while records are known to exist means the broker is gone.
  const auto stall = std::max<milliseconds>(im.addr.connect_timeout, milliseconds(1000));
  auto last_progress = clock_type::now();
  messages::byte_buffer payload_scratch;
  bytes_view view;
  const std::int32_t read_partitions[] = {partition};
  message_batches batches(*c, im.addr.topic, read_partitions);
  bool progressed = false;  // since last_progress was taken (no clock read per record)
  while (expect < stop) {
    message_ptr m(batches.next(100));
    if (!m) {
      if (progressed) {
        progressed = false;
        last_progress = clock_type::now();
      } else if (clock_type::now() - last_progress > stall)
        return fail(errc::unavailable,
                    "no records from the broker for " + std::to_string(stall.count()) + " ms",
                    im.where_at(expect));
      continue;
    }
    auto ok = im.check(m.get(), expect, payload_scratch, view);
    if (!ok) return tl::unexpected(ok.error());
    if (!*ok) continue;
    progressed = true;
    ++n;
    ++expect;
    if (!sink(expect - 1, view)) break;
  }
  return n;
}

result<log_offset> kafka_log::end_offset() {
  if (impl_->partitioned()) return impl_->next_sequence();
  return impl_->high_watermark();
}

result<log_offset> kafka_log::wait_for(log_offset offset, std::chrono::milliseconds timeout) {
  auto& im = *impl_;
  const auto deadline = clock_type::now() + timeout;
  if (im.partitioned()) {
    for (;;) {
      auto e = im.next_sequence();
      if (!e || *e > offset || ms_left(deadline) == 0) return e;
      std::this_thread::sleep_for(milliseconds(std::min(ms_left(deadline), 50)));
    }
  }
  auto hw = im.high_watermark();
  if (!hw || *hw > offset) return hw;
  auto c = im.acquire(impl::fetch_use::follow);
  if (!c) return tl::unexpected(c.error());
  impl::lease rel{im, *c, impl::fetch_use::follow};
  // Long-poll from the current end: the first record to arrive means the log grew.
  if (auto a = im.assign(*c, *hw); !a) return tl::unexpected(a.error());
  while (ms_left(deadline) > 0) {
    message_ptr m(rd_kafka_consumer_poll(*c, std::min(ms_left(deadline), 100)));
    if (m && m->err == RD_KAFKA_RESP_ERR_NO_ERROR && static_cast<log_offset>(m->offset) >= *hw) {
      auto now = im.high_watermark();
      if (!now || *now > offset) return now;
    }
  }
  return im.high_watermark();
}

result<std::uint64_t> kafka_log::follow(log_offset from, const record_sink& sink,
                                        const std::function<bool()>& keep_going) {
  auto& im = *impl_;
  if (im.partitioned())
    return fail(errc::failed_precondition,
                "follow() reads one ordering partition; a partitioned topic is consumed per "
                "partition (colony consume --group, docs/cluster.md)",
                im.name);
  auto c = im.acquire(impl::fetch_use::follow);
  if (!c) return tl::unexpected(c.error());
  impl::lease rel{im, *c, impl::fetch_use::follow};
  auto hw = im.high_watermark();
  if (!hw) return tl::unexpected(hw.error());
  if (from > *hw) from = *hw;  // following from the future = following from the end
  if (auto a = im.assign(*c, from); !a) return tl::unexpected(a.error());
  std::uint64_t n = 0;
  log_offset expect = from;
  messages::byte_buffer payload_scratch;
  bytes_view view;
  const std::int32_t read_partitions[] = {partition};
  message_batches batches(*c, im.addr.topic, read_partitions);
  while (keep_going()) {
    message_ptr m(batches.next(100));
    if (!m) continue;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR && code_of(m->err) == errc::unavailable)
      continue;  // the consumer reconnects by itself; a follower waits for the broker
    auto ok = im.check(m.get(), expect, payload_scratch, view);
    if (!ok) return tl::unexpected(ok.error());
    if (!*ok) continue;
    ++n;
    ++expect;
    if (!sink(expect - 1, view)) break;
  }
  return n;
}

result<void> kafka_log::commit_group(const std::string& group, log_offset next) {
  auto& im = *impl_;
  if (im.partitioned())
    return fail(errc::failed_precondition, "commit_group is for one-partition topics", im.name);
  std::lock_guard<std::mutex> lk(im.groups_mu);
  rd_kafka_t* h = nullptr;
  for (auto& [g, p] : im.groups)
    if (g == group) h = p.get();
  if (!h) {
    auto c = im.new_consumer(group);
    if (!c) return tl::unexpected(c.error());
    im.groups.emplace_back(group, handle_ptr(*c));
    h = *c;
  }
  tpl_ptr l(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(l.get(), im.addr.topic.c_str(), partition)->offset =
      static_cast<std::int64_t>(next);
  if (auto e = rd_kafka_commit(h, l.get(), 0); e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(code_of(e), "commit of group '" + group + "': " + err_text(e), im.name);
  if (auto e = l->elems[0].err; e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(code_of(e), "commit of group '" + group + "': " + err_text(e), im.name);
  return {};
}

result<std::optional<log_offset>> kafka_log::committed(const std::string& group) {
  auto& im = *impl_;
  auto c = im.new_consumer(group);
  if (!c) return tl::unexpected(c.error());
  handle_ptr h(*c);
  tpl_ptr l(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(l.get(), im.addr.topic.c_str(), partition);
  auto e = rd_kafka_committed(h.get(), l.get(), im.op_timeout_ms());
  rd_kafka_consumer_close(h.get());
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(code_of(e), "committed offset of group '" + group + "': " + err_text(e), im.name);
  if (l->elems[0].err != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(code_of(l->elems[0].err),
                "committed offset of group '" + group + "': " + err_text(l->elems[0].err), im.name);
  if (l->elems[0].offset < 0) return std::optional<log_offset>{};
  return std::optional<log_offset>{static_cast<log_offset>(l->elems[0].offset)};
}

}  // namespace colony::stores

namespace colony::stores {

result<void> delete_kafka_topic(std::string_view name) {
  auto a = parse_kafka_name(name);
  if (!a) return tl::unexpected(a.error());
  auto c = base_conf(*a, {});
  if (!c) return tl::unexpected(c.error());
  char err[512];
  handle_ptr rk(rd_kafka_new(RD_KAFKA_PRODUCER, c->get(), err, sizeof(err)));
  if (!rk) return fail(errc::internal, std::string("librdkafka: ") + err, std::string(name));
  (void)c->release();  // owned by rk now
  const int timeout_ms = static_cast<int>(std::max<std::int64_t>(a->connect_timeout.count(), 1000));
  return delete_topic(rk.get(), a->topic, timeout_ms, std::string(name));
}

std::int32_t kafka_partition_of(std::string_view key, std::int32_t partitions) {
  if (key.empty() || partitions <= 1) return 0;
  // librdkafka's own murmur2 partitioner (Java-compatible); it does not use the topic handle.
  return rd_kafka_msg_partitioner_murmur2(nullptr, key.data(), key.size(), partitions, nullptr,
                                          nullptr);
}

result<std::vector<log_offset>> kafka_log::partition_ends() { return impl_->all_ends(); }

result<void> kafka_log::commit_member(std::int32_t p, log_offset next) {
  auto& im = *impl_;
  if (!im.member) return fail(errc::failed_precondition, "not in a consumer group", im.name);
  tpl_ptr l(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(l.get(), im.addr.topic.c_str(), p)->offset =
      static_cast<std::int64_t>(next);
  if (auto e = rd_kafka_commit(im.member, l.get(), 0); e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(code_of(e), "group commit: " + err_text(e), im.where_p(p, next));
  if (auto e = l->elems[0].err; e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(code_of(e), "group commit: " + err_text(e), im.where_p(p, next));
  return {};
}

result<void> kafka_log::consume_group(const std::string& group, group_handler& handler,
                                      const std::function<bool()>& keep_going) {
  auto& im = *impl_;
  if (im.member) return fail(errc::failed_precondition, "already in a consumer group", im.name);
  auto c = base_conf(im.addr,
                     {
                         {"group.id", group},
                         {"enable.auto.commit", "false"},
                         {"enable.auto.offset.store", "false"},
                         {"enable.partition.eof", "false"},
                         {"auto.offset.reset", "error"},
                         // Only moved partitions are revoked (KIP-429).
                         {"partition.assignment.strategy", "cooperative-sticky"},
                         // A dead member's partitions move after this long (the
                         // broker's group.min.session.timeout.ms is 6000).
                         {"session.timeout.ms", "6000"},
                         {"heartbeat.interval.ms", "1000"},
                         {"max.poll.interval.ms", "300000"},
                         {"fetch.wait.max.ms", "100"},
                         {"fetch.error.backoff.ms", "50"},
                         {"max.partition.fetch.bytes", "8388608"},
                         // The bounds message_batches wakes the fetcher against.
                         {"queued.min.messages", std::to_string(reader_queued_min_messages)},
                         {"queued.max.messages.kbytes", std::to_string(reader_queued_max_kbytes)},
                         {"receive.message.max.bytes", "100000000"},
                     });
  if (!c) return tl::unexpected(c.error());
  rd_kafka_conf_set_error_cb(c->get(), &impl::on_error);
  rd_kafka_conf_set_rebalance_cb(c->get(), &impl::on_rebalance);
  rd_kafka_conf_set_opaque(c->get(), &im);
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, c->get(), err, sizeof(err));
  if (!rk) return fail(errc::internal, std::string("group consumer: ") + err, im.name);
  (void)c->release();
  handle_ptr h(rk);
  rd_kafka_poll_set_consumer(rk);
  im.member = rk;
  im.handler = &handler;
  im.member_err = error{};
  // Sized here, not at open: a one-partition topic can be consumed by a group too.
  im.member_expect.assign(static_cast<std::size_t>(std::max(im.addr.partitions, 1)), no_offset);
  struct leave {
    impl& im;
    ~leave() {
      im.member = nullptr;
      im.handler = nullptr;
    }
  } on_exit{im};
  tpl_ptr sub(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(sub.get(), im.addr.topic.c_str(), RD_KAFKA_PARTITION_UA);
  if (auto e = rd_kafka_subscribe(rk, sub.get()); e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(code_of(e), "subscribe: " + err_text(e), im.name);
  error loop_err;
  auto last_tick = clock_type::now();
  messages::byte_buffer payload_scratch;
  // One record per poll, with the readers' fetcher wake-up (message_batches says why not
  // batches here). Before librdkafka queues a rebalance it pauses the assignment: records
  // still queued then are stale and rd_kafka_consumer_poll skips them, and fetching resumes
  // after the last record the poll returned. So no record of a revoked partition reaches the
  // handler after revoked(); should one, member_expect is no_offset and it is dropped (the
  // next owner starts at the snapshot).
  std::vector<std::int32_t> all_partitions;
  for (std::int32_t p = 0; p < std::max(im.addr.partitions, 1); ++p) all_partitions.push_back(p);
  std::optional<message_batches> batches(std::in_place, rk, im.addr.topic, all_partitions,
                                         message_batches::take::one_by_one);
  while (keep_going() && im.member_err.message.empty() && loop_err.message.empty()) {
    message_ptr m(batches->next(100));
    if (m) {
      if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (code_of(m->err) != errc::unavailable)
          loop_err = error{code_of(m->err), "consume: " + err_text(m->err), im.name};
      } else if (m->partition >= 0 &&
                 static_cast<std::size_t>(m->partition) < im.member_expect.size()) {
        auto& expect = im.member_expect[static_cast<std::size_t>(m->partition)];
        if (expect != no_offset) {
          auto ok = im.check_part(m.get(), expect, payload_scratch);
          if (!ok)
            loop_err = ok.error();
          else if (*ok) {
            ++expect;
            auto r = handler.record(m->partition, static_cast<log_offset>(m->offset),
                                    payload_of(m.get(), payload_scratch));
            if (!r) loop_err = r.error();
          }
        }
      }
    }
    if (clock_type::now() - last_tick >= milliseconds(100)) {
      last_tick = clock_type::now();
      if (auto t = handler.tick(); !t) loop_err = t.error();
    }
  }
  // Its consumer queue reference goes before the consumer.
  batches.reset();
  // Leaving the group revokes what we own: the handler makes it durable and commits.
  rd_kafka_consumer_close(rk);
  if (!loop_err.message.empty()) return tl::unexpected(loop_err);
  if (!im.member_err.message.empty()) return tl::unexpected(im.member_err);
  return {};
}

}  // namespace colony::stores
