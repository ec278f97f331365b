#include "run/koordlet_agent_cluster.hpp"

#include <chrono>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <utility>

#include "bridges/kubernetes/translate.hpp"
#include "messages/names.hpp"

namespace colony::agent {

namespace {

using nlohmann::json;

std::int64_t system_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string str_at(const json& o, const char* pointer) {
  const auto p = json::json_pointer(pointer);
  if (!o.contains(p) || !o.at(p).is_string()) return {};
  return o.at(p).get<std::string>();
}

// GetPodQoSClassWithDefault (apis/extension/qos_utils.go): the label, else status.qosClass.
qos_class qos_of(const json& pod) {
  const json* labels = nullptr;
  if (pod.contains("metadata") && pod["metadata"].contains("labels"))
    labels = &pod["metadata"]["labels"];
  if (labels != nullptr && labels->is_object()) {
    const auto it = labels->find(std::string(names::label_qos_class));
    if (it != labels->end() && it->is_string()) {
      const auto q = get_pod_qos_class_by_name(it->get<std::string>());
      if (q != qos_class::none) return q;
    }
  }
  const std::string k = str_at(pod, "/status/qosClass");
  kube_qos_class kq = kube_qos_class::unset;
  if (k == to_string(kube_qos_class::guaranteed)) kq = kube_qos_class::guaranteed;
  if (k == to_string(kube_qos_class::burstable)) kq = kube_qos_class::burstable;
  if (k == to_string(kube_qos_class::best_effort)) kq = kube_qos_class::best_effort;
  return get_pod_qos_class_with_kube_qos(kq);
}

}  // namespace

struct koordlet_cluster::impl {
  koordlet_cluster_options opt;
  kube::translate_options topt;

  mutable std::mutex mu;  // everything below but the informers and threads
  std::vector<messages::byte_buffer> observations;
  std::map<std::string, pod_ref, std::less<>> by_uid;
  std::map<std::string, std::string, std::less<>> uid_of;  // pod key -> uid
  bool first_list_taken = false;
  cluster_counters counters;
  // Per informer (nodes, pods, nodeslos): its error count when last looked at, and when it moved.
  std::pair<std::uint64_t, std::chrono::steady_clock::time_point> errors_seen[3];

  std::unique_ptr<kube::informer> nodes, pods, node_slos;
  std::vector<std::thread> informer_threads;

  // The sink thread and its queue.
  std::deque<std::pair<log_offset, messages::byte_buffer>> todo;
  std::vector<kube::write_outcome> outcomes;
  bool busy = false;
  bool stopping = false;
  std::uint64_t dropped = 0;
  std::condition_variable cv;
  std::thread sink_thread;
  bool stopped = false;

  void queue(kube::object_kind kind, const json& object, const result<kube::event_list>& r) {
    std::lock_guard lk(mu);
    if (r) {
      for (const auto& rec : *r) observations.push_back(rec);
      counters.observations += r->size();
      return;
    }
    if (r.error().code == errc::invalid_input) {
      observations.push_back(
          kube::translate_refused(kind, object, r.error(), event_time{opt.clock()}, topt));
      ++counters.observations;
      ++counters.refused;
      return;
    }
    ++counters.untranslated;
  }

  void track_pod(const json& pod, bool gone) {
    const std::string uid = str_at(pod, "/metadata/uid");
    const std::string key =
        str_at(pod, "/metadata/namespace") + "/" + str_at(pod, "/metadata/name");
    std::lock_guard lk(mu);
    if (const auto it = uid_of.find(key); it != uid_of.end() && (gone || it->second != uid)) {
      by_uid.erase(it->second);
      uid_of.erase(it);
    }
    if (gone || uid.empty()) return;
    by_uid.insert_or_assign(uid, pod_ref{key, qos_of(pod)});
    uid_of.insert_or_assign(key, uid);
  }

  kube::informer_handlers handlers(kube::object_kind kind) {
    kube::informer_handlers h;
    const bool pod = kind == kube::object_kind::pod;
    h.on_add = [this, kind, pod](const std::string&, const json& o) {
      if (pod) track_pod(o, false);
      queue(kind, o, kube::translate_added(kind, o, event_time{opt.clock()}, topt));
    };
    h.on_update = [this, kind, pod](const std::string&, const json& old_o, const json& new_o) {
      if (pod) track_pod(new_o, false);
      queue(kind, new_o,
            kube::translate_modified(kind, old_o, new_o, event_time{opt.clock()}, topt));
    };
    h.on_delete = [this, kind, pod](const std::string&, const json& last) {
      if (pod) track_pod(last, true);
      auto r = kube::translate_deleted(kind, last, event_time{opt.clock()}, topt);
      // A refused object's DELETED was recorded when it arrived.
      if (!r && r.error().code == errc::invalid_input) return;
      queue(kind, last, r);
    };
    return h;
  }

  void sink_loop(kube::decision_sink sink) {
    for (;;) {
      std::pair<log_offset, messages::byte_buffer> job;
      {
        std::unique_lock lk(mu);
        cv.wait(lk, [&] { return stopping || !todo.empty(); });
        if (stopping) {
          dropped += todo.size();
          todo.clear();
          busy = false;
          cv.notify_all();
          return;
        }
        job = std::move(todo.front());
        todo.pop_front();
        busy = true;
      }
      auto r = sink.apply(job.second);
      std::lock_guard lk(mu);
      if (r) {
        for (auto& w : *r) {
          // The record was built before the log numbered it: its offset is the log's.
          w.offset = job.first;
          if (!w.ok)
            ++counters.failed;
          else if (w.wrote)
            ++counters.writes;
          else
            ++counters.unchanged;
          outcomes.push_back(std::move(w));
        }
      } else {
        kube::write_outcome w;
        w.offset = job.first;
        w.message = r.error().describe();
        ++counters.failed;
        outcomes.push_back(std::move(w));
      }
      busy = !todo.empty();
      cv.notify_all();
    }
  }
};

koordlet_cluster::koordlet_cluster(std::unique_ptr<impl> p) : impl_(std::move(p)) {}

koordlet_cluster::~koordlet_cluster() { stop(); }

result<std::unique_ptr<koordlet_cluster>> koordlet_cluster::start(koordlet_cluster_options o) {
  if (o.node.empty()) return fail(errc::invalid_input, "no node name", "--node");
  auto p = std::make_unique<impl>();
  p->opt = std::move(o);
  if (!p->opt.clock) p->opt.clock = system_ms;
  p->topt.koordlet_node = p->opt.node;
  // The pod uid an eviction names (Koordinator's evictor: metav1.NewUIDPreconditions).
  impl* self = p.get();
  p->opt.sink.pod_uid = [self](std::string_view key) {
    std::lock_guard lk(self->mu);
    const auto it = self->uid_of.find(key);
    return it == self->uid_of.end() ? std::string() : it->second;
  };
  auto sink = kube::decision_sink::open(p->opt.conn, p->opt.sink);
  if (!sink) return tl::unexpected(sink.error());
  struct watched {
    kube::object_kind kind;
    const char* path;
    std::string selector;
    std::unique_ptr<kube::informer>* into;
  };
  const std::vector<watched> kinds = {
      {kube::object_kind::node, "/api/v1/nodes", "metadata.name=" + p->opt.node, &p->nodes},
      {kube::object_kind::pod, "/api/v1/pods", "spec.nodeName=" + p->opt.node, &p->pods},
      {kube::object_kind::node_slo, "/apis/slo.koordinator.sh/v1alpha1/nodeslos",
       "metadata.name=" + p->opt.node, &p->node_slos},
  };
  std::uint64_t seed = p->opt.informer.seed;
  for (const auto& k : kinds) {
    auto io = p->opt.informer;
    io.field_selector = k.selector;
    io.seed = seed++;
    auto inf = kube::informer::create(p->opt.conn, k.path, p->handlers(k.kind), io);
    if (!inf) return tl::unexpected(inf.error());
    *k.into = std::move(*inf);
  }
  for (const auto& k : kinds) {
    kube::informer* inf = k.into->get();
    p->informer_threads.emplace_back([inf] { inf->run(); });
  }
  p->sink_thread =
      std::thread([self, s = std::move(*sink)]() mutable { self->sink_loop(std::move(s)); });
  return std::unique_ptr<koordlet_cluster>(new koordlet_cluster(std::move(p)));
}

void koordlet_cluster::stop() {
  if (!impl_ || impl_->stopped) return;
  impl_->stopped = true;
  for (auto* inf : {impl_->nodes.get(), impl_->pods.get(), impl_->node_slos.get()})
    if (inf != nullptr) inf->stop();
  for (auto& t : impl_->informer_threads) t.join();
  {
    std::lock_guard lk(impl_->mu);
    impl_->stopping = true;
  }
  impl_->cv.notify_all();
  if (impl_->sink_thread.joinable()) impl_->sink_thread.join();
}

std::vector<messages::byte_buffer> koordlet_cluster::take_observations() {
  std::lock_guard lk(impl_->mu);
  std::vector<messages::byte_buffer> out;
  out.swap(impl_->observations);
  return out;
}

std::optional<pod_ref> koordlet_cluster::pod_of_uid(std::string_view uid) const {
  std::lock_guard lk(impl_->mu);
  const auto it = impl_->by_uid.find(uid);
  if (it == impl_->by_uid.end()) return std::nullopt;
  return it->second;
}

std::optional<std::set<std::string>> koordlet_cluster::take_first_pod_list() {
  if (!impl_->pods->synced()) return std::nullopt;
  std::lock_guard lk(impl_->mu);
  if (impl_->first_list_taken) return std::nullopt;
  impl_->first_list_taken = true;
  std::set<std::string> keys;
  for (const auto& [key, uid] : impl_->uid_of) keys.insert(key);
  return keys;
}

bool koordlet_cluster::synced() const { return impl_->nodes->synced() && impl_->pods->synced(); }

std::vector<std::string> koordlet_cluster::problems() const {
  std::vector<std::string> out;
  const std::pair<const char*, const kube::informer*> all[] = {
      {"nodes", impl_->nodes.get()},
      {"pods", impl_->pods.get()},
      {"nodeslos", impl_->node_slos.get()}};
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lk(impl_->mu);
  for (std::size_t i = 0; i < 3; ++i) {
    const auto& [name, inf] = all[i];
    // An informer is in trouble while its requests fail: an error within the longest backoff
    // (30 s, informer_options::backoff_max) and then some.
    const auto errors = inf->counters().errors;
    auto& seen = impl_->errors_seen[i];
    if (errors != seen.first) seen = {errors, now};
    if (errors == 0 || now - seen.second > std::chrono::seconds(40)) continue;
    const auto e = inf->last_error();
    out.push_back(std::string(name) + ": " + (e ? e->describe() : std::string("failing")));
  }
  return out;
}

void koordlet_cluster::carry_out(log_offset offset, messages::byte_buffer record) {
  {
    std::lock_guard lk(impl_->mu);
    impl_->todo.emplace_back(offset, std::move(record));
    impl_->busy = true;
    ++impl_->counters.carried_out;
  }
  impl_->cv.notify_all();
}

std::vector<kube::write_outcome> koordlet_cluster::take_outcomes() {
  std::lock_guard lk(impl_->mu);
  std::vector<kube::write_outcome> out;
  out.swap(impl_->outcomes);
  return out;
}

bool koordlet_cluster::wait_idle(std::int64_t ms) {
  std::unique_lock lk(impl_->mu);
  return impl_->cv.wait_for(lk, std::chrono::milliseconds(ms),
                            [&] { return !impl_->busy || impl_->stopping; });
}

cluster_counters koordlet_cluster::counters() const {
  std::lock_guard lk(impl_->mu);
  return impl_->counters;
}

std::uint64_t koordlet_cluster::dropped() const {
  std::lock_guard lk(impl_->mu);
  return impl_->dropped;
}

}  // namespace colony::agent
