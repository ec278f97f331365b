// colony::kube::observation_source (source.hpp).
#include "bridges/kubernetes/source.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <spdlog/spdlog.h>
#include <nlohmann/json.hpp>

#include "bridges/kubernetes/api_client.hpp"
#include "messages/codec.hpp"

namespace colony::kube {

namespace {

using json = nlohmann::json;
constexpr std::string_view checkpoint_format = "colony-kube-source/1";

// The record without what differs between two appends of the same observation (offset, time):
// how a re-derived event is recognised as an orphan's twin.
result<std::string> canonical(messages::bytes_view bytes) {
  auto j = messages::to_json(bytes);
  if (!j) return tl::make_unexpected(j.error());
  json v = json::parse(*j, nullptr, false);
  if (v.is_discarded() || !v.is_object()) return fail(errc::internal, "to_json is not JSON");
  v.erase("offset");
  v.erase("time_ms");
  return v.dump();
}

// managedFields is large and nothing translate reads; the checkpoint keeps the rest.
json stripped(const json& object) {
  json o = object;
  if (auto m = o.find("metadata"); m != o.end() && m->is_object()) m->erase("managedFields");
  return o;
}

std::string rv_of(const json& object) {
  const auto p = json::json_pointer("/metadata/resourceVersion");
  if (!object.contains(p) || !object.at(p).is_string()) return {};
  return object.at(p).get<std::string>();
}

result<void> write_all(int fd, const std::string& data, const std::string& where) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(errc::unavailable, std::strerror(errno), where);
    }
    done += static_cast<std::size_t>(n);
  }
  return {};
}

// Write temp, fsync, rename over, fsync the folder: a crash leaves the old file or the new one.
result<void> replace_file(const std::string& path, const std::string& data) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(errc::unavailable, std::strerror(errno), tmp);
  auto w = write_all(fd, data, tmp);
  if (w && ::fsync(fd) != 0) w = fail(errc::unavailable, std::strerror(errno), tmp);
  ::close(fd);
  if (!w) return w;
  if (::rename(tmp.c_str(), path.c_str()) != 0)
    return fail(errc::unavailable, std::strerror(errno), "rename " + tmp);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

}  // namespace

std::vector<source_kind> default_source_kinds(const translate_options& t) {
  std::vector<source_kind> kinds = {
      {object_kind::node, "nodes", "/api/v1/nodes", ""},
      {object_kind::pod, "pods", "/api/v1/pods", ""},
      {object_kind::priority_class, "priorityclasses", "/apis/scheduling.k8s.io/v1/priorityclasses",
       ""},
      {object_kind::config_map, "slo-controller-config",
       "/api/v1/namespaces/" + t.slo_config_namespace + "/configmaps",
       "metadata.name=" + t.slo_config_name},
      {object_kind::cluster_colocation_profile, "clustercolocationprofiles",
       "/apis/config.koordinator.sh/v1alpha1/clustercolocationprofiles", ""},
      {object_kind::elastic_quota, "elasticquotas",
       "/apis/scheduling.sigs.k8s.io/v1alpha1/elasticquotas", ""},
      {object_kind::node_metric, "nodemetrics", "/apis/slo.koordinator.sh/v1alpha1/nodemetrics",
       ""},
      // NodeNUMAResource reads the v1alpha1 API, as Koordinator's informer does.
      {object_kind::node_resource_topology, "noderesourcetopologies",
       "/apis/topology.node.k8s.io/v1alpha1/noderesourcetopologies", ""},
  };
  // The recorded kinds (ObjectObserved), listed across namespaces where namespaced; the
  // plural names the informer and its checkpoint entry.
  for (const auto k :
       {object_kind::elastic_quota_profile, object_kind::reservation,
        object_kind::pod_migration_job, object_kind::pod_group, object_kind::device}) {
    const auto info = recorded_kind(k);
    kinds.push_back({k, std::string(info->plural),
                     "/apis/" + std::string(info->api_version) + "/" + std::string(info->plural),
                     ""});
  }
  return kinds;
}

struct observation_source::impl {
  // One informer and what the source holds for it.
  struct watched {
    source_kind kind;
    std::unique_ptr<informer> inf;
    std::thread thread;
    // Committed: what the log and the checkpoint agree on (guarded by mu).
    std::string rv;
    object_store store;
    // Pending since the last on_resource_version (the informer's thread only).
    std::vector<std::pair<std::string, std::optional<stored_object>>> ops;
    std::vector<messages::byte_buffer> events;
    bool first_commit_done = false;  // the informer's thread only
  };

  enum counter : std::size_t {
    c_informers,
    c_skipped,
    c_adds,
    c_updates,
    c_deletes,
    c_unchanged,
    c_bad,
    c_refusals,
    c_untranslated,
    c_events,
    c_batches,
    c_checkpoints,
    c_orphans_found,
    c_orphans_matched,
    c_count
  };

  connection conn;
  stores::event_log* log = nullptr;
  source_options opt;
  std::array<std::atomic<std::uint64_t>, c_count> n{};

  mutable std::mutex mu;  // appends, committed state, checkpoint, failure
  std::vector<std::unique_ptr<watched>> informers;
  std::map<std::string, std::pair<std::string, object_store>> loaded;  // name -> (rv, store)
  std::multiset<std::string> orphans;  // canonical forms (see canonical())
  log_offset end = 0;                  // just past this source's last batch
  bool dirty = false;
  std::chrono::steady_clock::time_point last_write{};
  std::chrono::steady_clock::duration last_cost{};  // of the last checkpoint write
  std::size_t checkpoint_size_hint = 0;             // the last one's size, and some
  std::optional<error> failed;
  std::vector<std::string> skipped;
  mutable std::mutex refused_mu;
  std::vector<error> refused;  // the latest 64
  bool started = false;
  bool stopped = false;
  std::atomic<bool> closing{false};  // stop() began: a waiting first list gives up

  void bump(counter c, std::uint64_t by = 1) { n[c].fetch_add(by, std::memory_order_relaxed); }

  result<void> load_checkpoint() {
    std::ifstream in(opt.checkpoint_path, std::ios::binary);
    if (!in) return {};  // first start
    std::stringstream ss;
    ss << in.rdbuf();
    const json j = json::parse(ss.str(), nullptr, false);
    const auto bad = [&](const std::string& why) {
      return fail(errc::corrupt, why, "checkpoint " + opt.checkpoint_path);
    };
    if (j.is_discarded() || !j.is_object()) return bad("not JSON");
    if (j.value("format", std::string{}) != checkpoint_format)
      return bad("format is not " + std::string(checkpoint_format));
    try {
      end = j.at("end_offset").get<log_offset>();
      for (const auto& o : j.at("orphans")) orphans.insert(o.get<std::string>());
      for (const auto& [name, inf] : j.at("informers").items()) {
        object_store store;
        for (const auto& [key, so] : inf.at("objects").items())
          store[key] = stored_object{so.at("rv").get<std::string>(), so.at("object")};
        loaded[name] = {inf.at("rv").get<std::string>(), std::move(store)};
      }
    } catch (const std::exception& e) {
      return bad(e.what());
    }
    return {};
  }

  // REQUIRES: mu held.
  result<void> write_checkpoint() {
    // The checkpoint vouches for every observation appended before it: on a log that syncs in
    // groups (colony run), those must be on disk before the checkpoint is.
    if (auto s = log->sync_appended(); !s) return s;
    const auto t0 = std::chrono::steady_clock::now();
    // Written as text straight from the stores (the same JSON document load_checkpoint reads):
    // building a json tree first would copy every object once more.
    std::string out;
    out.reserve(checkpoint_size_hint);
    out += "{\"format\":";
    out += json(checkpoint_format).dump();
    out += ",\"end_offset\":" + std::to_string(end) + ",\"orphans\":";
    out += json(orphans).dump();
    out += ",\"informers\":{";
    bool first_informer = true;
    const auto put_informer = [&](const std::string& name, const std::string& rv,
                                  const object_store& store) {
      if (!first_informer) out += ',';
      first_informer = false;
      out += json(name).dump();
      out += ":{\"rv\":";
      out += json(rv).dump();
      out += ",\"objects\":{";
      bool first_object = true;
      for (const auto& [k, so] : store) {
        if (!first_object) out += ',';
        first_object = false;
        out += json(k).dump();
        out += ":{\"rv\":";
        out += json(so.resource_version).dump();
        out += ",\"object\":";
        out += so.object.dump();
        out += '}';
      }
      out += "}}";
    };
    // Informers not started this time (a kind skipped) keep what they had.
    for (const auto& [name, st] : loaded) put_informer(name, st.first, st.second);
    for (const auto& w : informers) put_informer(w->kind.name, w->rv, w->store);
    out += "}}";
    checkpoint_size_hint = out.size() + out.size() / 8;
    auto r = replace_file(opt.checkpoint_path, out);
    if (!r) return r;
    bump(c_checkpoints);
    dirty = false;
    last_write = std::chrono::steady_clock::now();
    last_cost = last_write - t0;
    return {};
  }

  result<void> scan_orphans() {
    auto log_end = log->end_offset();
    if (!log_end) return tl::make_unexpected(log_end.error());
    if (*log_end < end)
      return fail(errc::corrupt,
                  "the log ends at " + std::to_string(*log_end) + " but the checkpoint covers " +
                      std::to_string(end) + ": another log, or records were lost",
                  "checkpoint " + opt.checkpoint_path);
    std::optional<error> bad;
    auto r = log->read(end, no_offset, [&](log_offset off, messages::bytes_view b) {
      auto d = messages::decode(b, "orphan scan");
      if (!d) {
        bad = d.error();
        return false;
      }
      if (messages::to_string_view(d->envelope->source()) != opt.translate.source) return true;
      auto c = canonical(b);
      if (!c) {
        bad = c.error();
        return false;
      }
      orphans.insert(std::move(*c));
      bump(c_orphans_found);
      (void)off;
      return true;
    });
    if (!r) return tl::make_unexpected(r.error());
    if (bad) return tl::make_unexpected(*bad);
    if (!orphans.empty())
      spdlog::warn(
          "kube source: {} orphan observation(s) after the checkpoint (offset {}): "
          "a crash between append and checkpoint; their re-derived twins are dropped",
          orphans.size(), end);
    return {};
  }

  std::int64_t now_ms() const {
    if (opt.clock) return opt.clock();
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
  }

  // A callback's translation: its events, or for a refused object its ObjectRefused record.
  // A DELETED of a refused object appends nothing: the informer's store held that object,
  // refused (and recorded) when it arrived; a relist's DELETED carries the same version again.
  void take(watched& w, result<event_list> r, const json& obj, bool deleted) {
    if (r) {
      for (auto& e : *r) w.events.push_back(std::move(e));
      return;
    }
    const error& e = r.error();
    if (e.code == errc::invalid_input) {
      bump(c_bad);
      {
        std::lock_guard lk(refused_mu);
        if (refused.size() == 64) refused.erase(refused.begin());
        refused.push_back(e);
      }
      if (deleted) {
        spdlog::warn("kube source {}: deleted object refused, nothing appended: {}", w.kind.name,
                     e.describe());
        return;
      }
      // Nothing else of the object is appended, so what the log held for it stays. The record
      // carries no time, so an orphan scan recognises it (canonical()) as any other record.
      w.events.push_back(
          translate_refused(w.kind.kind, obj, e, event_time{now_ms()}, opt.translate));
      bump(c_refusals);
      spdlog::warn("kube source {}: object refused, ObjectRefused appended: {}", w.kind.name,
                   e.describe());
    } else if (e.code == errc::failed_precondition) {
      bump(c_untranslated);
      spdlog::debug("kube source {}: {}", w.kind.name, e.describe());
    } else {
      bump(c_bad);
      spdlog::warn("kube source {}: {}", w.kind.name, e.describe());
    }
  }

  informer_handlers handlers(watched& w) {
    informer_handlers h;
    h.on_add = [this, &w](const std::string& key, const json& obj) {
      bump(c_adds);
      w.ops.emplace_back(key, stored_object{rv_of(obj), stripped(obj)});
      take(w, translate_added(w.kind.kind, obj, event_time{now_ms()}, opt.translate), obj, false);
    };
    h.on_update = [this, &w](const std::string& key, const json& old_obj, const json& obj) {
      bump(c_updates);
      w.ops.emplace_back(key, stored_object{rv_of(obj), stripped(obj)});
      if (change_kind(w.kind.kind, old_obj, obj, opt.translate) == change::none) {
        bump(c_unchanged);
        return;
      }
      take(w, translate_modified(w.kind.kind, old_obj, obj, event_time{now_ms()}, opt.translate),
           obj, false);
    };
    h.on_delete = [this, &w](const std::string& key, const json& last) {
      bump(c_deletes);
      w.ops.emplace_back(key, std::nullopt);
      take(w, translate_deleted(w.kind.kind, last, event_time{now_ms()}, opt.translate), last,
           true);
    };
    h.on_resource_version = [this, &w](const std::string& rv) { commit(w, rv); };
    return h;
  }

  // The pods' first list waits until every other informer has listed (its first list is then in
  // the log), so that at start the components know the nodes, quotas and configuration before
  // any pod: the log's order is what they decide by. Without the lock: the others append.
  void wait_for_first_lists(const watched& pods) {
    const auto until = std::chrono::steady_clock::now() + opt.first_list_wait;
    for (;;) {
      std::vector<std::string> waiting;
      for (const auto& o : informers)
        if (o.get() != &pods && !o->inf->synced()) waiting.push_back(o->kind.name);
      if (waiting.empty() || closing.load()) return;
      if (std::chrono::steady_clock::now() >= until) {
        std::string names;
        for (const auto& n : waiting) names += (names.empty() ? "" : ", ") + n;
        spdlog::warn("kube source: pods listed before {} (still listing after {} ms)", names,
                     opt.first_list_wait.count());
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  // Every change up to `rv` has been handed over: append the batch, then checkpoint.
  void commit(watched& w, const std::string& rv) {
    if (w.kind.kind == object_kind::pod && !w.first_commit_done) {
      w.first_commit_done = true;
      wait_for_first_lists(w);
    }
    std::lock_guard lk(mu);
    if (failed) {
      w.ops.clear();
      w.events.clear();
      return;
    }
    bool orphans_changed = false;
    if (!orphans.empty() && !w.events.empty()) {
      std::vector<messages::byte_buffer> keep;
      for (auto& e : w.events) {
        auto c = canonical(e);
        if (c) {
          if (auto it = orphans.find(*c); it != orphans.end()) {
            orphans.erase(it);
            orphans_changed = true;
            bump(c_orphans_matched);
            continue;
          }
        }
        keep.push_back(std::move(e));
      }
      w.events = std::move(keep);
    }
    bool appended = false;
    if (!w.events.empty()) {
      std::vector<messages::bytes_view> views;
      views.reserve(w.events.size());
      for (const auto& e : w.events) views.emplace_back(e);
      auto first = log->append(views);
      if (!first) return fail_all(first.error());
      end = *first + views.size();
      bump(c_batches);
      bump(c_events, views.size());
      appended = true;
    }
    for (auto& [key, so] : w.ops) {
      if (so)
        w.store[key] = std::move(*so);
      else
        w.store.erase(key);
    }
    w.rv = rv;
    w.ops.clear();
    w.events.clear();
    // The checkpoint holds every store: with many objects a write costs tens of milliseconds,
    // under the lock the informers append with. It is written at most once per 20 of its own
    // costs (<= 5 % of the time), however often the intervals allow.
    const auto since = std::chrono::steady_clock::now() - last_write;
    const auto floor = opt.checkpoint_interval.count() == 0 ? std::chrono::steady_clock::duration{}
                                                            : last_cost * 20;
    const bool due = since >= floor && (since >= opt.idle_checkpoint_interval ||
                                        (appended && since >= opt.checkpoint_interval));
    if (orphans_changed || due) {
      if (auto r = write_checkpoint(); !r) return fail_all(r.error());
    } else {
      dirty = true;
    }
  }

  // REQUIRES: mu held. The log or the checkpoint failed: stop, so that nothing is appended
  // without its checkpoint; a restart re-derives from the last good checkpoint.
  void fail_all(const error& e) {
    spdlog::error("kube source stopped: {}", e.describe());
    failed = e;
    for (auto& w : informers) w->inf->stop();
  }
};

observation_source::observation_source(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
observation_source::~observation_source() { stop(); }

result<std::unique_ptr<observation_source>> observation_source::open(connection conn,
                                                                     stores::event_log& log,
                                                                     source_options options) {
  if (options.checkpoint_path.empty())
    return fail(errc::invalid_input, "checkpoint_path is empty", "observation_source");
  if (options.kinds.empty()) options.kinds = default_source_kinds(options.translate);
  auto p = std::make_unique<impl>();
  p->conn = std::move(conn);
  p->log = &log;
  p->opt = std::move(options);
  if (auto r = p->load_checkpoint(); !r) return tl::make_unexpected(r.error());
  if (auto r = p->scan_orphans(); !r) return tl::make_unexpected(r.error());
  return std::unique_ptr<observation_source>(new observation_source(std::move(p)));
}

result<void> observation_source::start() {
  auto& s = *impl_;
  if (s.started) return fail(errc::failed_precondition, "already started", "observation_source");
  s.started = true;
  auto probe = api_client::open(s.conn, s.opt.informer.client);
  if (!probe) return tl::make_unexpected(probe.error());
  std::uint64_t seed = s.opt.informer.seed;
  for (const auto& k : s.opt.kinds) {
    list_options lo;
    lo.limit = 1;
    lo.field_selector = k.field_selector;
    if (auto r = probe->list(k.path, lo); !r && r.error().code == errc::not_found) {
      // The CRD is not installed: report once, skip (the informer would retry forever).
      s.bump(impl::c_skipped);
      s.skipped.push_back(k.name + ": " + r.error().describe());
      spdlog::warn("kube source: {} skipped, its LIST answers 404 (CRD not installed?): {}", k.name,
                   r.error().describe());
      continue;
    }
    auto w = std::make_unique<impl::watched>();
    w->kind = k;
    informer_options io = s.opt.informer;
    io.field_selector = k.field_selector;
    io.seed = seed++;
    auto inf = informer::create(s.conn, k.path, s.handlers(*w), std::move(io));
    if (!inf) return tl::make_unexpected(inf.error());
    w->inf = std::move(*inf);
    if (auto it = s.loaded.find(k.name); it != s.loaded.end()) {
      w->rv = it->second.first;
      w->store = std::move(it->second.second);
      s.loaded.erase(it);
      if (!w->rv.empty()) w->inf->resume_from(w->rv, w->store);
    }
    s.informers.push_back(std::move(w));
  }
  for (auto& w : s.informers) {
    s.bump(impl::c_informers);
    w->thread = std::thread([inf = w->inf.get()] { inf->run(); });
  }
  return {};
}

void observation_source::stop() {
  auto& s = *impl_;
  if (!s.started || s.stopped) return;
  s.stopped = true;
  s.closing.store(true);
  for (auto& w : s.informers) w->inf->stop();
  for (auto& w : s.informers)
    if (w->thread.joinable()) w->thread.join();
  std::lock_guard lk(s.mu);
  if (s.dirty && !s.failed) {
    if (auto r = s.write_checkpoint(); !r)
      spdlog::error("kube source: final checkpoint: {}", r.error().describe());
  }
}

bool observation_source::synced() const {
  for (const auto& w : impl_->informers)
    if (!w->inf->synced()) return false;
  return true;
}

std::vector<std::string> observation_source::unsynced() const {
  std::vector<std::string> out;
  for (const auto& w : impl_->informers) {
    if (w->inf->synced()) continue;
    const auto e = w->inf->last_error();
    out.push_back(w->kind.name + ": " + (e ? e->describe() : std::string("listing")));
  }
  return out;
}

source_counters observation_source::counters() const {
  const auto& n = impl_->n;
  const auto g = [&](impl::counter c) { return n[c].load(std::memory_order_relaxed); };
  source_counters c;
  c.informers = g(impl::c_informers);
  c.kinds_skipped = g(impl::c_skipped);
  c.adds = g(impl::c_adds);
  c.updates = g(impl::c_updates);
  c.deletes = g(impl::c_deletes);
  c.unchanged = g(impl::c_unchanged);
  c.bad_objects = g(impl::c_bad);
  c.refusals = g(impl::c_refusals);
  c.untranslated = g(impl::c_untranslated);
  c.events = g(impl::c_events);
  c.batches = g(impl::c_batches);
  c.checkpoints = g(impl::c_checkpoints);
  c.orphans_found = g(impl::c_orphans_found);
  c.orphans_matched = g(impl::c_orphans_matched);
  for (const auto& w : impl_->informers) {
    const auto ic = w->inf->counters();
    c.reconnects += ic.reconnects;
    c.gone += ic.gone;
    c.relists += ic.relists;
  }
  return c;
}

std::optional<error> observation_source::failure() const {
  std::lock_guard lk(impl_->mu);
  return impl_->failed;
}

std::vector<std::string> observation_source::skipped() const { return impl_->skipped; }

std::vector<error> observation_source::refused() const {
  std::lock_guard lk(impl_->refused_mu);
  return impl_->refused;
}

}  // namespace colony::kube
