#include "stores/kafka_leader.hpp"

#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include <librdkafka/rdkafka.h>

#include "messages/aligned.hpp"
#include "stores/kafka_client.hpp"
#include "stores/kafka_log.hpp"

namespace colony::stores {

namespace {

using namespace kafka_client;  // handles, settings, error mapping (stores/kafka_client.hpp)
using std::chrono::milliseconds;

// Creates a one-partition topic with the explicit configuration kafka_log gives a log topic
// (nothing deleted or compacted), if missing, and waits until partition 0 has a leader.
result<void> ensure_topic(rd_kafka_t* rk, const kafka_address& a, const std::string& topic,
                          const std::string& where) {
  const auto deadline = clock_type::now() + std::max(a.connect_timeout, milliseconds(1000));
  bool created = false;
  for (;;) {
    const rd_kafka_metadata_t* md = nullptr;
    auto* t = rd_kafka_topic_new(rk, topic.c_str(), nullptr);
    auto e = rd_kafka_metadata(rk, 0, t, &md, std::max(ms_left(deadline), 1));
    rd_kafka_topic_destroy(t);
    bool exists = false, leader = false;
    int partitions = 0;
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
      for (int i = 0; i < md->topic_cnt; ++i) {
        if (topic != md->topics[i].topic) continue;
        if (md->topics[i].err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) break;
        exists = true;
        partitions = md->topics[i].partition_cnt;
        leader = partitions > 0 && md->topics[i].partitions[0].leader >= 0 &&
                 md->topics[i].partitions[0].err == RD_KAFKA_RESP_ERR_NO_ERROR;
      }
      rd_kafka_metadata_destroy(md);
    }
    if (exists && partitions != 1)
      return fail(errc::failed_precondition,
                  "topic " + topic + " has " + std::to_string(partitions) +
                      " partitions; an election topic has exactly one",
                  where);
    if (exists && leader) return {};
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR && !exists && !created) {
      if (auto c = create_topic(rk, topic, 1, a.replication, {}, std::max(ms_left(deadline), 5000),
                                where);
          !c)
        return c;
      created = true;
    }
    if (ms_left(deadline) == 0)
      return fail(errc::unavailable,
                  "topic " + topic + " not ready within " +
                      std::to_string(a.connect_timeout.count()) + " ms" +
                      (e != RD_KAFKA_RESP_ERR_NO_ERROR ? " (" + err_text(e) + ")" : ""),
                  where);
    std::this_thread::sleep_for(milliseconds(50));
  }
}

// The group generation of a member. librdkafka 2.0 has no accessor; its serialized group
// metadata ("CGMDv2:" then the native int32 generation id, rdkafka_cgrp.c) carries it.
std::int32_t generation_of(rd_kafka_t* consumer) {
  auto* md = rd_kafka_consumer_group_metadata(consumer);
  if (!md) return -1;
  void* buf = nullptr;
  std::size_t size = 0;
  std::int32_t gen = -1;
  if (auto* e = rd_kafka_consumer_group_metadata_write(md, &buf, &size)) {
    rd_kafka_error_destroy(e);
  } else {
    constexpr std::string_view magic = "CGMDv2:";
    if (size >= magic.size() + 4 && std::memcmp(buf, magic.data(), magic.size()) == 0)
      std::memcpy(&gen, static_cast<const char*>(buf) + magic.size(), 4);
    rd_kafka_mem_free(nullptr, buf);
  }
  rd_kafka_consumer_group_metadata_destroy(md);
  return gen;
}

std::string default_id() {
  char host[256] = {};
  if (gethostname(host, sizeof(host) - 1) != 0) std::strcpy(host, "host");
  return std::string(host) + "-" + std::to_string(getpid());
}

}  // namespace

struct kafka_leader_elector::impl {
  kafka_address addr;
  std::string name;  // kafka://bootstrap/topic leader NAME, for messages
  std::string singleton;
  leader_options opts;
  leader_callbacks cbs;
  std::string control;    // T.leader.NAME: topic, group id and transactional.id
  std::string decisions;  // T.decisions.NAME
  handle_ptr consumer;
  bool closed = false;

  std::atomic<bool> leading{false};
  error fatal;  // an election that could not raise its fence

  // The current term's fenced producer. append_mu serialises appends against term changes:
  // a clean revoke waits for the append in flight, so nothing of ours commits after handover.
  std::mutex append_mu;
  handle_ptr producer;  // null: no term open
  leader_term term;
  std::uint64_t terms = 0;
  bool fenced = false;  // the last term ended fenced
  std::int64_t first_offset = -1;

  static void on_delivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = static_cast<impl*>(opaque);
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR &&
        (self->first_offset < 0 || m->offset < self->first_offset))
      self->first_offset = m->offset;
  }

  // Raises the fence for a new term: a new transactional producer and init_transactions,
  // which bumps the epoch of transactional.id `control` and so fences every older producer.
  result<void> open_term() {
    auto c = base_conf(
        addr, {
                  {"client.id", opts.id},
                  {"transactional.id", control},
                  {"enable.idempotence", "true"},
                  {"acks", "all"},
                  {"transaction.timeout.ms", std::to_string(opts.transaction_timeout.count())},
                  {"message.timeout.ms", std::to_string(opts.transaction_timeout.count())},
                  {"linger.ms", "0"},
                  {"retry.backoff.ms", "50"},
              });
    if (!c) return tl::unexpected(c.error());
    rd_kafka_conf_set_dr_msg_cb(c->get(), &impl::on_delivery);
    rd_kafka_conf_set_opaque(c->get(), this);
    char err[512];
    rd_kafka_t* p = rd_kafka_new(RD_KAFKA_PRODUCER, c->get(), err, sizeof(err));
    if (!p) return fail(errc::internal, std::string("producer: ") + err, name);
    (void)c->release();
    handle_ptr h(p);
    // The coordinator may still be aborting the old leader's transaction: retry retriable
    // errors within the connect budget.
    const auto deadline = clock_type::now() + std::max(addr.connect_timeout, milliseconds(10000));
    for (;;) {
      error_ptr e(rd_kafka_init_transactions(p, std::max(ms_left(deadline), 1)));
      if (!e) break;
      if (rd_kafka_error_is_retriable(e.get()) && ms_left(deadline) > 0) continue;
      return fail(
          rd_kafka_error_is_fatal(e.get()) ? errc::failed_precondition : errc::unavailable,
          std::string("init_transactions (raising the fence): ") + rd_kafka_error_string(e.get()),
          name);
    }
    // Learn the decision partition's leader now, not in the term's first append.
    if (auto* t = rd_kafka_topic_new(p, decisions.c_str(), nullptr)) {
      const rd_kafka_metadata_t* md = nullptr;
      if (rd_kafka_metadata(p, 0, t, &md, std::max(ms_left(deadline), 1)) ==
          RD_KAFKA_RESP_ERR_NO_ERROR)
        rd_kafka_metadata_destroy(md);
      rd_kafka_topic_destroy(t);
    }
    std::lock_guard<std::mutex> lk(append_mu);
    producer = std::move(h);
    fenced = false;
    term = leader_term{singleton, opts.id, {}, generation_of(consumer.get()), ++terms};
    if (char* m = rd_kafka_memberid(consumer.get())) {
      term.member_id = m;
      rd_kafka_mem_free(nullptr, m);
    }
    return {};
  }

  static bool has_control(const rd_kafka_topic_partition_list_t* parts) {
    for (int i = 0; i < parts->cnt; ++i)
      if (parts->elems[i].partition == 0) return true;
    return false;
  }

  static void on_rebalance(rd_kafka_t* rk, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t* parts, void* opaque) {
    auto* self = static_cast<impl*>(opaque);
    const bool cooperative = std::string_view(rd_kafka_rebalance_protocol(rk)) == "COOPERATIVE";
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      // Nothing is ever read from the control topic: start at its end, and pause it.
      for (int i = 0; i < parts->cnt; ++i) parts->elems[i].offset = RD_KAFKA_OFFSET_END;
      if (cooperative) {
        if (auto* e = rd_kafka_incremental_assign(rk, parts)) rd_kafka_error_destroy(e);
      } else
        rd_kafka_assign(rk, parts);
      (void)rd_kafka_pause_partitions(rk, parts);
      if (!has_control(parts) || self->leading) return;
      if (auto t = self->open_term(); !t) {
        self->fatal = t.error();
        return;
      }
      self->leading = true;
      if (self->cbs.on_elected) self->cbs.on_elected(self->term);
      return;
    }
    const bool lost = err != RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS || rd_kafka_assignment_lost(rk);
    if (has_control(parts) && self->leading.exchange(false)) {
      leader_term t;
      {
        std::lock_guard<std::mutex> lk(self->append_mu);
        t = self->term;
        // Handed over cleanly: close the term now (appends of it fail from here on). Lost: a
        // successor may lead already; a decision in flight is left to the fence.
        if (!lost) self->producer.reset();
      }
      if (self->cbs.on_revoked) self->cbs.on_revoked(t, lost);
    }
    if (cooperative) {
      if (auto* e = rd_kafka_incremental_unassign(rk, parts)) rd_kafka_error_destroy(e);
    } else
      rd_kafka_assign(rk, nullptr);
  }
};

kafka_leader_elector::kafka_leader_elector(std::unique_ptr<impl> i) : impl_(std::move(i)) {}

kafka_leader_elector::~kafka_leader_elector() { leave(); }

result<std::unique_ptr<kafka_leader_elector>> kafka_leader_elector::open(std::string_view log_name,
                                                                         std::string_view singleton,
                                                                         leader_options opts,
                                                                         leader_callbacks cbs) {
  auto a = parse_kafka_name(log_name);
  if (!a) return tl::unexpected(a.error());
  const std::string sname(singleton);
  auto valid = !sname.empty();
  for (char ch : sname)
    valid = valid && (std::isalnum(static_cast<unsigned char>(ch)) || ch == '-' || ch == '_');
  if (!valid)
    return fail(errc::invalid_input, "singleton names use letters, digits, '-' and '_'", sname);
  auto im = std::make_unique<impl>();
  im->addr = *a;
  im->singleton = sname;
  im->opts = std::move(opts);
  if (im->opts.id.empty()) im->opts.id = default_id();
  im->cbs = std::move(cbs);
  im->control = a->topic + ".leader." + sname;
  im->decisions = a->topic + ".decisions." + sname;
  im->name = "kafka://" + a->bootstrap + "/" + a->topic + " leader " + sname;
  {
    auto c = base_conf(*a, {{"client.id", im->opts.id}});
    if (!c) return tl::unexpected(c.error());
    char err[512];
    handle_ptr admin(rd_kafka_new(RD_KAFKA_PRODUCER, c->get(), err, sizeof(err)));
    if (!admin) return fail(errc::internal, std::string("admin client: ") + err, im->name);
    (void)c->release();
    for (const auto* t : {&im->control, &im->decisions})
      if (auto r = ensure_topic(admin.get(), *a, *t, im->name); !r)
        return tl::unexpected(r.error());
  }
  auto c = base_conf(
      *a, {
              {"client.id", im->opts.id},
              {"group.id", im->control},
              {"enable.auto.commit", "false"},
              {"enable.auto.offset.store", "false"},
              {"enable.partition.eof", "false"},
              {"auto.offset.reset", "latest"},
              // A joining candidate does not move the lead (KIP-429).
              {"partition.assignment.strategy", "cooperative-sticky"},
              {"session.timeout.ms", std::to_string(im->opts.session_timeout.count())},
              {"heartbeat.interval.ms", std::to_string(im->opts.heartbeat_interval.count())},
              {"max.poll.interval.ms", "300000"},
          });
  if (!c) return tl::unexpected(c.error());
  rd_kafka_conf_set_rebalance_cb(c->get(), &impl::on_rebalance);
  rd_kafka_conf_set_opaque(c->get(), im.get());
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(RD_KAFKA_CONSUMER, c->get(), err, sizeof(err));
  if (!rk) return fail(errc::internal, std::string("group consumer: ") + err, im->name);
  (void)c->release();
  im->consumer.reset(rk);
  rd_kafka_poll_set_consumer(rk);
  tpl_ptr sub(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(sub.get(), im->control.c_str(), RD_KAFKA_PARTITION_UA);
  if (auto e = rd_kafka_subscribe(rk, sub.get()); e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(code_of(e), "subscribe: " + err_text(e), im->name);
  return std::unique_ptr<kafka_leader_elector>(new kafka_leader_elector(std::move(im)));
}

result<void> kafka_leader_elector::poll(std::chrono::milliseconds timeout) {
  auto& im = *impl_;
  if (im.closed) return fail(errc::failed_precondition, "left the election", im.name);
  message_ptr m(rd_kafka_consumer_poll(im.consumer.get(), static_cast<int>(timeout.count())));
  if (!im.fatal.message.empty()) return tl::unexpected(im.fatal);
  if (m && m->err != RD_KAFKA_RESP_ERR_NO_ERROR && m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF &&
      code_of(m->err) != errc::unavailable)
    return fail(code_of(m->err), "group: " + err_text(m->err), im.name);
  return {};
}

void kafka_leader_elector::leave() {
  auto& im = *impl_;
  if (im.closed || !im.consumer) return;
  im.closed = true;
  // Revokes the lead (on_revoked lost=false) and sends LeaveGroup: the group rebalances now
  // instead of after session.timeout.ms.
  rd_kafka_consumer_close(im.consumer.get());
  std::lock_guard<std::mutex> lk(im.append_mu);
  im.producer.reset();
}

bool kafka_leader_elector::leading() const { return impl_->leading; }
const std::string& kafka_leader_elector::id() const { return impl_->opts.id; }
const std::string& kafka_leader_elector::control_topic() const { return impl_->control; }
const std::string& kafka_leader_elector::decision_topic() const { return impl_->decisions; }

result<log_offset> kafka_leader_elector::append_fenced(std::uint64_t term,
                                                       std::span<const bytes_view> events) {
  auto& im = *impl_;
  std::lock_guard<std::mutex> lk(im.append_mu);
  const std::string where = im.name + " term " + std::to_string(term);
  if (!im.producer || im.term.term != term)
    return fail(
        errc::failed_precondition,
        im.fenced && im.term.term == term
            ? "fenced by a newer leader of " + im.singleton
            : "term " + std::to_string(term) + " is over (not the leader of " + im.singleton + ")",
        where);
  rd_kafka_t* p = im.producer.get();
  // A fatal error is the fence (or a broken producer): the term is over, step down.
  auto end_term = [&](const std::string& what) -> result<log_offset> {
    char reason[512] = {};
    auto fe = rd_kafka_fatal_error(p, reason, sizeof(reason));
    im.producer.reset();
    im.fenced = true;
    im.leading = false;
    if (is_fenced(fe) || fe == RD_KAFKA_RESP_ERR_NO_ERROR)
      return fail(errc::failed_precondition,
                  "fenced by a newer leader of " + im.singleton + " (" + what + ")", where);
    return fail(errc::failed_precondition,
                "producer failed (" + err_text(fe) + ": " + reason + "); term over", where);
  };
  auto failed = [&](rd_kafka_error_t* raw, const char* step) -> result<log_offset> {
    error_ptr e(raw);
    const std::string what = std::string(step) + ": " + rd_kafka_error_string(e.get());
    if (rd_kafka_error_is_fatal(e.get()) || is_fenced(rd_kafka_error_code(e.get())))
      return end_term(what);
    if (rd_kafka_error_txn_requires_abort(e.get()) || std::string_view(step) != "begin") {
      error_ptr a(
          rd_kafka_abort_transaction(p, static_cast<int>(im.opts.transaction_timeout.count())));
      if (a && (rd_kafka_error_is_fatal(a.get()) || is_fenced(rd_kafka_error_code(a.get()))))
        return end_term(what);
    }
    return fail(errc::unavailable, what + " (aborted: nothing of it is visible)", where);
  };
  if (auto* e = rd_kafka_begin_transaction(p)) return failed(e, "begin");
  im.first_offset = -1;
  for (const auto& ev : events) {
    auto pe = rd_kafka_producev(p, RD_KAFKA_V_TOPIC(im.decisions.c_str()), RD_KAFKA_V_PARTITION(0),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_VALUE(const_cast<std::uint8_t*>(ev.data()), ev.size()),
                                RD_KAFKA_V_END);
    if (pe != RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (is_fenced(pe) || pe == RD_KAFKA_RESP_ERR__FATAL)
        return end_term("produce: " + err_text(pe));
      error_ptr a(
          rd_kafka_abort_transaction(p, static_cast<int>(im.opts.transaction_timeout.count())));
      return fail(code_of(pe), "produce: " + err_text(pe) + " (aborted)", where);
    }
  }
  if (auto* e =
          rd_kafka_commit_transaction(p, static_cast<int>(im.opts.transaction_timeout.count())))
    return failed(e, "commit");
  rd_kafka_poll(p, 0);  // delivery reports not yet served by the commit's flush
  return static_cast<log_offset>(std::max<std::int64_t>(im.first_offset, 0));
}

result<std::uint64_t> read_decisions(
    std::string_view log_name, std::string_view singleton, bool committed_only,
    const std::function<void(log_offset kafka_offset, bytes_view record)>& sink) {
  auto a = parse_kafka_name(log_name);
  if (!a) return tl::unexpected(a.error());
  const std::string topic = a->topic + ".decisions." + std::string(singleton);
  const std::string where = "kafka " + topic + "/0";
  auto c =
      base_conf(*a, {
                        {"group.id", "colony-reader"},
                        {"enable.auto.commit", "false"},
                        {"enable.partition.eof", "true"},
                        {"auto.offset.reset", "error"},
                        {"isolation.level", committed_only ? "read_committed" : "read_uncommitted"},
                        {"fetch.wait.max.ms", "10"},
                    });
  if (!c) return tl::unexpected(c.error());
  char err[512];
  handle_ptr rk(rd_kafka_new(RD_KAFKA_CONSUMER, c->get(), err, sizeof(err)));
  if (!rk) return fail(errc::internal, std::string("consumer: ") + err, where);
  (void)c->release();
  const int op_ms = static_cast<int>(std::max<std::int64_t>(a->connect_timeout.count(), 1000));
  std::int64_t lo = 0, hi = 0;
  if (auto e = rd_kafka_query_watermark_offsets(rk.get(), topic.c_str(), 0, &lo, &hi, op_ms);
      e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(code_of(e), "watermarks: " + err_text(e), where);
  if (hi == 0) return std::uint64_t{0};
  tpl_ptr l(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_list_add(l.get(), topic.c_str(), 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  if (auto e = rd_kafka_assign(rk.get(), l.get()); e != RD_KAFKA_RESP_ERR_NO_ERROR)
    return fail(code_of(e), "assign: " + err_text(e), where);
  std::uint64_t n = 0;
  messages::byte_buffer scratch;
  auto deadline = clock_type::now() + milliseconds(op_ms);
  for (;;) {
    message_ptr m(rd_kafka_consumer_poll(rk.get(), 100));
    if (!m) {
      if (clock_type::now() > deadline)
        return fail(errc::unavailable,
                    "no end of the decision topic within " + std::to_string(op_ms) + " ms", where);
      continue;
    }
    deadline = clock_type::now() + milliseconds(op_ms);
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) break;
    if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
      if (code_of(m->err) == errc::unavailable) continue;
      return fail(code_of(m->err), "consume: " + err_text(m->err), where);
    }
    const auto at = where + "@" + std::to_string(m->offset);
    auto view = messages::realign(bytes_view(static_cast<const std::uint8_t*>(m->payload), m->len),
                                  scratch);
    auto d = messages::decode(view, at);
    if (!d) return tl::unexpected(d.error());
    sink(static_cast<log_offset>(m->offset), view);
    ++n;
  }
  rd_kafka_consumer_close(rk.get());
  return n;
}

}  // namespace colony::stores
