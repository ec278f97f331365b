#include "stores/kafka_log.hpp"

#include <cctype>
#include <charconv>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <thread>
#include <vector>

#include <librdkafka/rdkafka.h>

namespace colony::stores {

namespace {

using clock_type = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr std::int32_t partition = 0;                  // the ordering partition
constexpr const char* max_message_bytes = "67108864";  // > kafka_max_batch_bytes + overhead

int ms_left(clock_type::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - clock_type::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

// librdkafka logs reconnect attempts at error level; they are expected during broker
// outages, and failures reach callers as values, so logs go to stderr only on request.
void log_cb(const rd_kafka_t*, int level, const char* fac, const char* buf) {
  static const bool on = std::getenv("COLONY_KAFKA_DEBUG") != nullptr;
  if (on) std::fprintf(stderr, "rdkafka %d %s: %s\n", level, fac, buf);
}

struct conf_deleter {
  void operator()(rd_kafka_conf_t* c) const { rd_kafka_conf_destroy(c); }
};
using conf_ptr = std::unique_ptr<rd_kafka_conf_t, conf_deleter>;

result<void> set(rd_kafka_conf_t* c, const char* k, const std::string& v) {
  char err[512];
  if (rd_kafka_conf_set(c, k, v.c_str(), err, sizeof(err)) != RD_KAFKA_CONF_OK)
    return fail(errc::internal, std::string("librdkafka config ") + k + "=" + v + ": " + err);
  return {};
}

result<conf_ptr> base_conf(const kafka_address& a,
                           std::initializer_list<std::pair<const char*, std::string>> extra) {
  conf_ptr c(rd_kafka_conf_new());
  std::initializer_list<std::pair<const char*, std::string>> common = {
      {"bootstrap.servers", a.bootstrap},
      {"client.id", "colony"},
      // Come back quickly after a broker restart (defaults back off to 10 s).
      {"reconnect.backoff.ms", "50"},
      {"reconnect.backoff.max.ms", "1000"},
      {"topic.metadata.refresh.interval.ms", "10000"},
  };
  for (const auto& [k, v] : common)
    if (auto s = set(c.get(), k, v); !s) return tl::unexpected(s.error());
  for (const auto& [k, v] : extra)
    if (auto s = set(c.get(), k, v); !s) return tl::unexpected(s.error());
  rd_kafka_conf_set_log_cb(c.get(), log_cb);
  return c;
}

errc code_of(rd_kafka_resp_err_t e) {
  switch (e) {
    case RD_KAFKA_RESP_ERR__TRANSPORT:
    case RD_KAFKA_RESP_ERR__TIMED_OUT:
    case RD_KAFKA_RESP_ERR__MSG_TIMED_OUT:
    case RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN:
    case RD_KAFKA_RESP_ERR__RESOLVE:
    case RD_KAFKA_RESP_ERR_REQUEST_TIMED_OUT:
    case RD_KAFKA_RESP_ERR_NOT_LEADER_FOR_PARTITION:
    case RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS:
    case RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS_AFTER_APPEND:
    case RD_KAFKA_RESP_ERR__WAIT_COORD:
    case RD_KAFKA_RESP_ERR_COORDINATOR_NOT_AVAILABLE:
    case RD_KAFKA_RESP_ERR_NOT_COORDINATOR:
    case RD_KAFKA_RESP_ERR_COORDINATOR_LOAD_IN_PROGRESS:
      return errc::unavailable;
    case RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART:
    case RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC:
    case RD_KAFKA_RESP_ERR__UNKNOWN_PARTITION:
      return errc::not_found;
    case RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_RECORD_LIST_TOO_LARGE:
    case RD_KAFKA_RESP_ERR_INVALID_RECORD:
    case RD_KAFKA_RESP_ERR_INVALID_MSG:
      return errc::invalid_input;
    case RD_KAFKA_RESP_ERR_OFFSET_OUT_OF_RANGE:
      return errc::out_of_range;
    case RD_KAFKA_RESP_ERR__FENCED:
    case RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH:
    case RD_KAFKA_RESP_ERR_PRODUCER_FENCED:
    case RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED:
    case RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED:
      return errc::failed_precondition;
    default:
      return errc::unavailable;
  }
}

std::string err_text(rd_kafka_resp_err_t e) {
  return std::string(rd_kafka_err2name(e)) + ": " + rd_kafka_err2str(e);
}

struct handle_deleter {
  void operator()(rd_kafka_t* rk) const { rd_kafka_destroy(rk); }
};
using handle_ptr = std::unique_ptr<rd_kafka_t, handle_deleter>;

struct topic_deleter {
  void operator()(rd_kafka_topic_t* t) const { rd_kafka_topic_destroy(t); }
};
using topic_ptr = std::unique_ptr<rd_kafka_topic_t, topic_deleter>;

struct event_deleter {
  void operator()(rd_kafka_event_t* e) const { rd_kafka_event_destroy(e); }
};
using event_ptr = std::unique_ptr<rd_kafka_event_t, event_deleter>;

struct queue_deleter {
  void operator()(rd_kafka_queue_t* q) const { rd_kafka_queue_destroy(q); }
};
using queue_ptr = std::unique_ptr<rd_kafka_queue_t, queue_deleter>;

struct tpl_deleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const {
    rd_kafka_topic_partition_list_destroy(l);
  }
};
using tpl_ptr = std::unique_ptr<rd_kafka_topic_partition_list_t, tpl_deleter>;

struct message_deleter {
  void operator()(rd_kafka_message_t* m) const { rd_kafka_message_destroy(m); }
};
using message_ptr = std::unique_ptr<rd_kafka_message_t, message_deleter>;

struct admin_options_deleter {
  void operator()(rd_kafka_AdminOptions_t* o) const { rd_kafka_AdminOptions_destroy(o); }
};

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
  bool leader_known = false;
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
    else
      return fail(
          errc::invalid_input,
          "unknown option '" + std::string(k) +
              "' or value (connect_timeout_ms, delivery_timeout_ms >= 1000, replication 1..16)",
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

  // Reader consumers, reused across reads.
  std::mutex pool_mu;
  std::vector<rd_kafka_t*> pool;

  // Group committers by group id.
  std::mutex groups_mu;
  std::vector<std::pair<std::string, handle_ptr>> groups;

  ~impl() {
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
      for (int p = 0; p < t.partition_cnt; ++p)
        if (t.partitions[p].id == partition && t.partitions[p].leader >= 0 &&
            t.partitions[p].err == RD_KAFKA_RESP_ERR_NO_ERROR)
          ti.leader_known = true;
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

  result<void> admin_wait(rd_kafka_queue_t* q, event_ptr& ev, int timeout_ms) {
    ev.reset(rd_kafka_queue_poll(q, timeout_ms + 2000));
    if (!ev) return fail(errc::unavailable, "admin request timed out", name);
    if (auto e = rd_kafka_event_error(ev.get()); e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return fail(code_of(e),
                  std::string("admin request: ") + rd_kafka_event_error_string(ev.get()), name);
    return {};
  }

  result<void> create_topic(int timeout_ms) {
    char err[512];
    rd_kafka_NewTopic_t* nt =
        rd_kafka_NewTopic_new(addr.topic.c_str(), 1, addr.replication, err, sizeof(err));
    if (!nt) return fail(errc::invalid_input, std::string("new topic: ") + err, name);
    const std::string min_isr = addr.replication > 1 ? "2" : "1";
    std::vector<std::pair<const char*, std::string>> cfg = {
        {"cleanup.policy", "delete"},
        {"retention.ms", "-1"},
        {"retention.bytes", "-1"},
        {"min.insync.replicas", min_isr},
        {"unclean.leader.election.enable", "false"},
        {"max.message.bytes", max_message_bytes},
        {"message.timestamp.type", "CreateTime"},
    };
    // An acknowledged append reaches the disk before the acknowledgement, as the embedded
    // log's synced WAL does: with one replica, replication cannot stand in for fsync.
    if (opts.sync) cfg.emplace_back("flush.messages", "1");
    for (const auto& [k, v] : cfg) {
      if (auto e = rd_kafka_NewTopic_set_config(nt, k, v.c_str());
          e != RD_KAFKA_RESP_ERR_NO_ERROR) {
        rd_kafka_NewTopic_destroy(nt);
        return fail(errc::internal, std::string("topic config ") + k + ": " + err_text(e), name);
      }
    }
    std::unique_ptr<rd_kafka_AdminOptions_t, admin_options_deleter> ao(
        rd_kafka_AdminOptions_new(control.get(), RD_KAFKA_ADMIN_OP_CREATETOPICS));
    rd_kafka_AdminOptions_set_operation_timeout(ao.get(), timeout_ms, err, sizeof(err));
    rd_kafka_AdminOptions_set_request_timeout(ao.get(), timeout_ms, err, sizeof(err));
    queue_ptr q(rd_kafka_queue_new(control.get()));
    rd_kafka_CreateTopics(control.get(), &nt, 1, ao.get(), q.get());
    rd_kafka_NewTopic_destroy(nt);
    event_ptr ev;
    if (auto w = admin_wait(q.get(), ev, timeout_ms); !w) return w;
    const auto* res = rd_kafka_event_CreateTopics_result(ev.get());
    std::size_t n = 0;
    const auto** topics = rd_kafka_CreateTopics_result_topics(res, &n);
    for (std::size_t i = 0; i < n; ++i) {
      auto e = rd_kafka_topic_result_error(topics[i]);
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR || e == RD_KAFKA_RESP_ERR_TOPIC_ALREADY_EXISTS) continue;
      const char* msg = rd_kafka_topic_result_error_string(topics[i]);
      return fail(code_of(e),
                  "cannot create the topic: " + err_text(e) + (msg ? std::string(" ") + msg : ""),
                  name);
    }
    return {};
  }

  // The topic settings the contract relies on: nothing is ever deleted or compacted away.
  result<void> check_config(int timeout_ms) {
    char err[512];
    auto* res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_TOPIC, addr.topic.c_str());
    std::unique_ptr<rd_kafka_AdminOptions_t, admin_options_deleter> ao(
        rd_kafka_AdminOptions_new(control.get(), RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS));
    rd_kafka_AdminOptions_set_request_timeout(ao.get(), timeout_ms, err, sizeof(err));
    queue_ptr q(rd_kafka_queue_new(control.get()));
    rd_kafka_DescribeConfigs(control.get(), &res, 1, ao.get(), q.get());
    rd_kafka_ConfigResource_destroy(res);
    event_ptr ev;
    if (auto w = admin_wait(q.get(), ev, timeout_ms); !w) return w;
    const auto* dres = rd_kafka_event_DescribeConfigs_result(ev.get());
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

  result<std::pair<log_offset, log_offset>> watermarks(rd_kafka_t* rk, int timeout_ms) {
    std::int64_t lo = 0, hi = 0;
    auto e =
        rd_kafka_query_watermark_offsets(rk, addr.topic.c_str(), partition, &lo, &hi, timeout_ms);
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR)
      return fail(code_of(e), "watermarks of partition 0: " + err_text(e), name);
    return std::pair<log_offset, log_offset>{static_cast<log_offset>(lo),
                                             static_cast<log_offset>(hi)};
  }

  int op_timeout_ms() const {
    return static_cast<int>(std::max<std::int64_t>(addr.connect_timeout.count(), 1000));
  }

  result<log_offset> high_watermark() {
    auto w = watermarks(control.get(), op_timeout_ms());
    if (!w) return tl::unexpected(w.error());
    return w->second;
  }

  result<rd_kafka_t*> new_consumer(const std::string& group) {
    auto c = base_conf(addr, {
                                 {"group.id", group},
                                 {"enable.auto.commit", "false"},
                                 {"enable.auto.offset.store", "false"},
                                 {"enable.partition.eof", "false"},
                                 // Never jump to another position silently.
                                 {"auto.offset.reset", "error"},
                                 {"isolation.level", "read_uncommitted"},
                                 {"fetch.wait.max.ms", "100"},
                                 {"fetch.error.backoff.ms", "50"},
                                 {"max.partition.fetch.bytes", "8388608"},
                                 {"queued.max.messages.kbytes", "32768"},
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

  result<rd_kafka_t*> acquire() {
    {
      std::lock_guard<std::mutex> lk(pool_mu);
      if (!pool.empty()) {
        auto* c = pool.back();
        pool.pop_back();
        return c;
      }
    }
    return new_consumer("colony-reader");
  }
  void release(rd_kafka_t* c) {
    // Unassign: an idle pooled consumer must not keep prefetching the topic.
    rd_kafka_assign(c, nullptr);
    std::lock_guard<std::mutex> lk(pool_mu);
    pool.push_back(c);
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

  // One consumed message, verified. ok=false: stale (from before the last assign), skip.
  result<bool> check(const rd_kafka_message_t* m, log_offset expect) {
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
    bytes_view bytes(static_cast<const std::uint8_t*>(m->payload), m->len);
    auto d = messages::decode(bytes, where_at(off));
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
          "partition 0 of the topic has no leader after " + std::to_string(budget.count()) + " ms",
          im->name);
    std::this_thread::sleep_for(milliseconds(50));
  }
  if (md->partitions != 1)
    return fail(errc::failed_precondition,
                "topic has " + std::to_string(md->partitions) +
                    " partitions; a Colony log is one ordering partition (docs/subscribing.md)",
                im->name);
  if (auto c = im->check_config(im->op_timeout_ms()); !c) return tl::unexpected(c.error());
  auto w = im->watermarks(im->control.get(), im->op_timeout_ms());
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
  auto hw = im.high_watermark();
  if (!hw) return tl::unexpected(hw.error());
  const log_offset stop = std::min(to, *hw);
  if (from >= stop) return std::uint64_t{0};
  auto c = im.acquire();
  if (!c) return tl::unexpected(c.error());
  struct releaser {
    impl& im;
    rd_kafka_t* c;
    ~releaser() { im.release(c); }
  } rel{im, *c};
  if (auto a = im.assign(*c, from); !a) return tl::unexpected(a.error());
  std::uint64_t n = 0;
  log_offset expect = from;
  // No progress for this long while records are known to exist means the broker is gone.
  const auto stall = std::max<milliseconds>(im.addr.connect_timeout, milliseconds(1000));
  auto last_progress = clock_type::now();
  while (expect < stop) {
    message_ptr m(rd_kafka_consumer_poll(*c, 100));
    if (!m) {
      if (clock_type::now() - last_progress > stall)
        return fail(errc::unavailable,
                    "no records from the broker for " + std::to_string(stall.count()) + " ms",
                    im.where_at(expect));
      continue;
    }
    auto ok = im.check(m.get(), expect);
    if (!ok) return tl::unexpected(ok.error());
    if (!*ok) continue;
    last_progress = clock_type::now();
    ++n;
    ++expect;
    if (!sink(expect - 1, bytes_view(static_cast<const std::uint8_t*>(m->payload), m->len))) break;
  }
  return n;
}

result<log_offset> kafka_log::end_offset() { return impl_->high_watermark(); }

result<log_offset> kafka_log::wait_for(log_offset offset, std::chrono::milliseconds timeout) {
  auto& im = *impl_;
  const auto deadline = clock_type::now() + timeout;
  auto hw = im.high_watermark();
  if (!hw || *hw > offset) return hw;
  auto c = im.acquire();
  if (!c) return tl::unexpected(c.error());
  struct releaser {
    impl& im;
    rd_kafka_t* c;
    ~releaser() { im.release(c); }
  } rel{im, *c};
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
  auto c = im.acquire();
  if (!c) return tl::unexpected(c.error());
  struct releaser {
    impl& im;
    rd_kafka_t* c;
    ~releaser() { im.release(c); }
  } rel{im, *c};
  auto hw = im.high_watermark();
  if (!hw) return tl::unexpected(hw.error());
  if (from > *hw) from = *hw;  // following from the future = following from the end
  if (auto a = im.assign(*c, from); !a) return tl::unexpected(a.error());
  std::uint64_t n = 0;
  log_offset expect = from;
  while (keep_going()) {
    message_ptr m(rd_kafka_consumer_poll(*c, 100));
    if (!m) continue;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR && code_of(m->err) == errc::unavailable)
      continue;  // the consumer reconnects by itself; a follower waits for the broker
    auto ok = im.check(m.get(), expect);
    if (!ok) return tl::unexpected(ok.error());
    if (!*ok) continue;
    ++n;
    ++expect;
    if (!sink(expect - 1, bytes_view(static_cast<const std::uint8_t*>(m->payload), m->len))) break;
  }
  return n;
}

result<void> kafka_log::commit_group(const std::string& group, log_offset next) {
  auto& im = *impl_;
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
