#include "actors/slo_controller/actor/slo_controller_component.hpp"

#include <algorithm>
#include <charconv>
#include <utility>

#include "messages/names.hpp"
#include "messages/terms.hpp"

namespace colony::slo_controller_actor {

namespace {

using messages::to_string_view;
namespace fb = flatbuffers;
namespace sc = slo_controller;

// Schema v6: a term whose value is 0 and that carries no text is not written (a reader takes a
// formula term that is not listed as 0). Most of a node's formula is such terms: reserved,
// host apps, dangling pods.
bool zero_term(std::int64_t value, std::string_view unit, std::string_view text) {
  return value == 0 && (!unit.empty() || text.empty());
}

// A NodeBatchResourceUpdated decision (values, policies, degraded, every term but the write
// decision's sync terms) as one string, built alike from a record and from a result about to be
// written, so a repeat is recognised exactly, also after a restart that replayed the log.
struct decision_key {
  std::string& s;
  void head(std::int64_t bc, std::int64_t bm, std::int64_t mc, std::int64_t mm,
            std::string_view cpu_policy, std::string_view memory_policy, bool degraded) {
    s.clear();
    for (const auto v : {bc, bm, mc, mm}) number(v);
    s.append(cpu_policy);
    s += '\x1f';
    s.append(memory_policy);
    s += degraded ? "\x1f"
                    "D\x1e"
                  : "\x1f"
                    "-\x1e";
  }
  // A term as publish writes it: the text only when there is no unit; none when it is 0.
  void term(std::string_view prefix, std::string_view name, std::int64_t value,
            std::string_view unit, std::string_view text) {
    if (zero_term(value, unit, text)) return;
    if (!prefix.empty()) {
      s.append(prefix);
      s += '.';
    }
    s.append(name);
    s += '\x1f';
    number(value);
    s.append(unit);
    s += '\x1f';
    if (unit.empty()) s.append(text);
    s += '\x1e';
  }
  void number(std::int64_t v) {
    char buf[24];
    const auto r = std::to_chars(buf, buf + sizeof buf, v);
    s.append(buf, r.ptr);
    s += '\x1f';
  }
};

// The sync group's terms say why this write happens; they are not part of the decision.
bool is_sync_term(const wire::Term& t) {
  if (t.name() != nullptr && t.name()->size() > 0)
    return to_string_view(t.name()).starts_with("sync.");
  return t.group() == wire::TermGroup::sync;
}

resource_list cpu_mem(const resource_list& r) {
  resource_list o;
  o.cpu_milli = r.cpu_milli;
  o.memory_bytes = r.memory_bytes;
  return o;
}

// "ns/name" -> (ns, name); a key without '/' is a name in namespace "".
std::pair<std::string_view, std::string_view> split_key(std::string_view key) {
  const auto slash = key.find('/');
  if (slash == std::string_view::npos) return {std::string_view(), key};
  return {key.substr(0, slash), key.substr(slash + 1)};
}

// NodeMetricReported without its pod metrics.
sc::node_metric_input metric_header(const wire::NodeMetricReported& e) {
  sc::node_metric_input m;
  m.update_time = event_time{e.update_time_ms()};
  if (e.node_usage() != nullptr) {
    m.node_usage.cpu_milli = e.node_usage()->cpu_milli();
    m.node_usage.memory_bytes = e.node_usage()->memory_bytes();
  }
  m.system_usage = cpu_mem(messages::to_resource_list(e.system_usage()));
  if (e.aggregated_node_usages() != nullptr) {
    m.aggregated_node_usages.reserve(e.aggregated_node_usages()->size());
    for (const auto* a : *e.aggregated_node_usages()) {
      sc::aggregated_usage u;
      u.duration = duration_ms{a->duration_ms()};
      u.avg = messages::to_resource_list(a->avg());
      u.p50 = messages::to_resource_list(a->p50());
      u.p90 = messages::to_resource_list(a->p90());
      u.p95 = messages::to_resource_list(a->p95());
      u.p99 = messages::to_resource_list(a->p99());
      m.aggregated_node_usages.push_back(u);
    }
  }
  if (e.prod_reclaimable() != nullptr)
    m.prod_reclaimable = cpu_mem(messages::to_resource_list(e.prod_reclaimable()));
  // v9: status.hostApplicationMetric (batchresource's hostAppHPUsed reads it).
  if (e.host_apps() != nullptr)
    for (const auto* h : *e.host_apps())
      m.host_app_metrics.push_back({std::string(to_string_view(h->name())),
                                    cpu_mem(messages::to_resource_list(h->usage())),
                                    static_cast<sc::priority_class>(h->priority_class())});
  return m;
}

std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  const auto* end = s.data() + s.size();
  const auto [p, ec] = std::from_chars(s.data(), end, v);
  if (ec != std::errc{} || p != end) return std::nullopt;
  return v;
}

// "kubernetes.io/batch-cpu" -> "batch-cpu" (the sim's term prefix).
std::string_view short_resource(std::string_view r) {
  constexpr std::string_view prefix = "kubernetes.io/";
  if (r.substr(0, prefix.size()) == prefix) r.remove_prefix(prefix.size());
  return r;
}

}  // namespace

std::shared_ptr<const slo_controller_initial_config> read_initial_config(
    const std::string& configmap_json) {
  auto c = std::make_shared<slo_controller_initial_config>();
  if (!configmap_json.empty()) {
    // No earlier valid config at start: a failing key keeps Koordinator's defaults.
    auto u = sc::update(c->cfg, configmap_json);
    c->cfg = std::move(u.in_force);
    if (u.error) c->errors.push_back(*u.error);
  }
  c->renderer = sc::node_slo_renderer(c->cfg);
  return c;
}

slo_controller_component::slo_controller_component(slo_controller_options opt)
    : opt_(std::move(opt)) {
  if (!opt_.initial) opt_.initial = read_initial_config(opt_.configmap_json);
  cfg_ = opt_.initial->cfg;
  slo_ = opt_.initial->renderer;
  config_errors_ = opt_.initial->errors;
  opt_.initial.reset();
  reparse_meta_configs();  // read; later ConfigUpdated records change this component's copy only
}

bool slo_controller_component::wants(wire::Payload type) const {
  switch (type) {
    case wire::Payload::NodeRegistered:
    case wire::Payload::NodeRemoved:
    case wire::Payload::PodMutated:
    case wire::Payload::PodScheduled:
    case wire::Payload::PodEvicted:
    case wire::Payload::PodFinished:
    case wire::Payload::NodeMetricReported:
    case wire::Payload::NodeBatchResourceUpdated:
    case wire::Payload::ConfigUpdated:
    case wire::Payload::NodeResourceTopologyUpdated:
      return true;
    default:
      return false;
  }
}

const sc::node_extended_resources* slo_controller_component::published(
    std::string_view node) const {
  const auto it = nodes_.find(node);
  return it == nodes_.end() ? nullptr : &it->second.published;
}

sc::node_input slo_controller_component::node_from_event(const wire::NodeRegistered& e) {
  sc::node_input ni;
  ni.name = std::string(to_string_view(e.name()));
  ni.capacity = cpu_mem(messages::to_resource_list(e.capacity()));
  ni.allocatable = cpu_mem(messages::to_resource_list(e.allocatable()));
  if (e.labels() != nullptr)
    for (const auto* kv : *e.labels())
      ni.labels.insert_or_assign(std::string(to_string_view(kv->key())),
                                 std::string(to_string_view(kv->value())));
  if (e.annotations() != nullptr) {
    for (const auto* kv : *e.annotations()) {
      const auto k = to_string_view(kv->key());
      const auto v = to_string_view(kv->value());
      // Unparsable annotations are ignored, as Koordinator does.
      if (k == names::annotation_node_reservation) {
        if (auto r = sc::parse_node_reservation(v)) ni.annotation_reservation = std::move(*r);
      } else if (k == names::annotation_node_colocation_strategy) {
        ni.colocation_strategy_annotation = std::string(v);
      } else if (k == names::annotation_cpu_normalization_ratio) {
        ni.cpu_normalization_ratio = parse_double(v);
      } else if (k == names::annotation_third_party_allocations) {
        if (auto t = sc::parse_third_party_allocations(v)) ni.third_party_allocations = *t;
      }
    }
  }
  return ni;
}

sc::node_metric_input slo_controller_component::metric_from_event(
    const wire::NodeMetricReported& e) {
  sc::node_metric_input m = metric_header(e);
  if (e.pods() != nullptr) {
    m.pod_metrics.reserve(e.pods()->size());
    for (const auto* p : *e.pods()) {
      sc::pod_metric pm;
      const auto [ns, name] = split_key(to_string_view(p->pod()));
      pm.ns = std::string(ns);
      pm.name = std::string(name);
      pm.usage = cpu_mem(messages::to_resource_list(p->usage()));
      pm.priority = static_cast<sc::priority_class>(p->priority_class());
      pm.qos = static_cast<sc::qos_class>(p->qos_class());
      m.pod_metrics.push_back(std::move(pm));
    }
  }
  return m;
}

slo_controller_component::node_iter slo_controller_component::find_node(std::string_view name) {
  if (last_node_ != nodes_.end() && last_node_name_ == name) return last_node_;
  const auto it = nodes_.find(name);
  if (it != nodes_.end()) {
    last_node_ = it;
    last_node_name_.assign(name);
  }
  return it;
}

void slo_controller_component::on_metric(node_rec& n, const wire::NodeMetricReported& e) {
  n.metric = metric_header(e);
  // The new list holds one key reference per entry, as the old one did. A report mostly lists the
  // keys of the last one, so the references are moved, not taken and given back: ids are looked
  // up without a reference; only entries the old list did not have take one, and only old
  // entries the new list does not have give theirs back (multisets of ids, compared sorted). A key
  // never held before is interned (its reference taken) on the spot.
  fresh_.clear();
  taken_.clear();
  if (e.pods() != nullptr) {
    split_.clear();
    for (const auto* p : *e.pods()) split_.push_back(split_key(to_string_view(p->pod())));
    found_.resize(split_.size());
    keys_.find_many(split_, found_);
    fresh_.reserve(e.pods()->size());
    for (std::size_t k = 0; k < split_.size(); ++k) {
      const auto* p = e.pods()->Get(static_cast<flatbuffers::uoffset_t>(k));
      std::uint64_t id = found_[k];
      if (id == 0) {
        id = keys_.intern(split_[k].first, split_[k].second);  // takes its reference
      } else {
        taken_.push_back(id);  // needs a reference unless the old list gives one
      }
      const auto usage = messages::to_resource_list(p->usage());
      fresh_.push_back({id, usage.cpu_milli, usage.memory_bytes,
                        static_cast<sc::priority_class>(p->priority_class()),
                        static_cast<sc::qos_class>(p->qos_class())});
    }
  }
  given_.clear();
  for (const auto& old : n.metric_samples) given_.push_back(old.key_id);
  std::sort(taken_.begin(), taken_.end());
  std::sort(given_.begin(), given_.end());
  auto t = taken_.begin();
  auto g = given_.begin();
  while (t != taken_.end() || g != given_.end()) {
    if (g == given_.end() || (t != taken_.end() && *t < *g)) {
      keys_.retain(*t++);
    } else if (t == taken_.end() || *g < *t) {
      keys_.release(*g++);
    } else {  // in both lists: the old reference carries over
      ++t;
      ++g;
    }
  }
  n.metric_samples.swap(fresh_);
  split_.clear();  // views into the event
}

slo_controller_component::pod_rec& slo_controller_component::pod(std::string_view key) {
  auto it = pods_.find(key);
  if (it == pods_.end()) {
    it = pods_.emplace(std::string(key), pod_rec{}).first;
    auto& in = it->second.input;
    const auto [ns, name] = split_key(key);
    in.ns = std::string(ns);
    in.name = std::string(name);
    in.phase = sc::pod_phase::pending;
    in.key_id = keys_.intern(ns, name);
    it->second.key = &it->first;
  }
  return it->second;
}

void slo_controller_component::bind(pod_rec& p, node_rec& n) {
  p.bound = &n;
  p.slot = static_cast<std::uint32_t>(n.samples.size());
  n.samples.push_back(sc::sample_of(p.input));
  n.owners.push_back(&p);
}

void slo_controller_component::unlink(pod_rec& p) {
  if (p.bound == nullptr) return;
  node_rec& n = *p.bound;
  const std::uint32_t last = static_cast<std::uint32_t>(n.samples.size() - 1);
  if (p.slot != last) {  // the last pod takes the freed slot
    n.samples[p.slot] = n.samples[last];
    n.owners[p.slot] = n.owners[last];
    n.owners[p.slot]->slot = p.slot;
  }
  n.samples.pop_back();
  n.owners.pop_back();
  p.bound = nullptr;
}

void slo_controller_component::unbind(std::string_view pod_key) {
  const auto it = pods_.find(pod_key);
  if (it == pods_.end()) return;
  unlink(it->second);
  keys_.release(it->second.input.key_id);
  pods_.erase(it);
}

std::vector<sc::pod_input> slo_controller_component::pods_of(const node_rec& n) const {
  std::vector<const pod_rec*> owners(n.owners.begin(), n.owners.end());
  std::sort(owners.begin(), owners.end(),
            [](const pod_rec* a, const pod_rec* b) { return *a->key < *b->key; });
  std::vector<sc::pod_input> pods;
  pods.reserve(owners.size());
  for (const auto* p : owners) pods.push_back(p->input);
  return pods;
}

sc::node_metric_input slo_controller_component::metric_of(const node_rec& n) const {
  sc::node_metric_input m = *n.metric;
  m.pod_metrics.reserve(n.metric_samples.size());
  for (const auto& s : n.metric_samples) {
    sc::pod_metric pm;
    pm.key_id = s.key_id;
    pm.priority = s.priority;
    pm.qos = s.qos;
    pm.usage.cpu_milli = s.cpu_milli;
    pm.usage.memory_bytes = s.memory_bytes;
    if (const auto key = keys_.key_of(s.key_id)) {
      pm.ns = std::string(key->first);
      pm.name = std::string(key->second);
    }
    m.pod_metrics.push_back(std::move(pm));
  }
  return m;
}

std::optional<slo_controller_component::node_view> slo_controller_component::view(
    std::string_view node) const {
  const auto it = nodes_.find(node);
  if (it == nodes_.end() || !it->second.registered) return std::nullopt;
  const auto& n = it->second;
  return node_view{n.input, pods_of(n),
                   n.metric ? std::optional<sc::node_metric_input>(metric_of(n)) : std::nullopt,
                   n.last_sync};
}

void slo_controller_component::on_event(const wire::Envelope& env,
                                        std::vector<messages::byte_buffer>& out) {
  switch (env.payload_type()) {
    case wire::Payload::NodeRegistered: {
      const auto* e = env.payload_as_NodeRegistered();
      auto& n = nodes_[std::string(to_string_view(e->name()))];
      n.registered = true;
      n.input = node_from_event(*e);
      n.meta = {};
      if (e->annotations() != nullptr)
        for (const auto* kv : *e->annotations()) {
          const auto k = to_string_view(kv->key());
          auto v = std::optional<std::string>(to_string_view(kv->value()));
          if (k == names::annotation_cpu_normalization_ratio) n.meta.cpu_normalization_ratio = v;
          if (k == sc::annotation_resource_amplification_ratio)
            n.meta.resource_amplification_ratio = v;
          if (k == sc::annotation_cpu_basic_info) n.meta.cpu_basic_info = v;
        }
      if (n.nrt_cpu_basic_info) n.meta.cpu_basic_info = n.nrt_cpu_basic_info;
      n.idle.reset();
      reconcile(n.input.name, n, env, out);
      render_slo(n.input.name, n, env, out);
      break;
    }
    case wire::Payload::NodeResourceTopologyUpdated: {
      // The CPU basic info the koordlet reports; a change reconciles the node (its
      // normalization ratio may change with it).
      const auto* e = env.payload_as_NodeResourceTopologyUpdated();
      std::optional<std::string> info;
      if (!e->deleted() && e->annotations() != nullptr)
        for (const auto* kv : *e->annotations())
          if (to_string_view(kv->key()) == sc::annotation_cpu_basic_info)
            info = std::string(to_string_view(kv->value()));
      const auto it = nodes_.find(to_string_view(e->node()));
      if (it == nodes_.end()) {
        if (info) nodes_[std::string(to_string_view(e->node()))].nrt_cpu_basic_info = info;
        break;
      }
      auto& n = it->second;
      if (n.nrt_cpu_basic_info == info) break;
      n.nrt_cpu_basic_info = info;
      if (info) n.meta.cpu_basic_info = info;
      n.idle.reset();
      if (n.registered) reconcile(it->first, n, env, out);
      break;
    }
    case wire::Payload::NodeRemoved: {
      const auto it = nodes_.find(to_string_view(env.payload_as_NodeRemoved()->name()));
      if (it != nodes_.end()) {
        // Its pods stay (a PodFinished / PodEvicted may still come) but are bound nowhere.
        for (auto* p : it->second.owners) p->bound = nullptr;
        for (const auto& m : it->second.metric_samples) keys_.release(m.key_id);
        if (it == last_node_) last_node_ = nodes_.end();
        nodes_.erase(it);
      }
      break;
    }
    case wire::Payload::PodMutated: {
      const auto* e = env.payload_as_PodMutated();
      auto& p = pod(to_string_view(e->name()));
      p.input.qos = static_cast<sc::qos_class>(e->qos_class());
      p.input.priority = static_cast<sc::priority_class>(e->priority_class());
      p.input.requests = messages::to_resource_list(e->requests());
      p.input.limits = messages::to_resource_list(e->limits());
      if (p.bound != nullptr) p.bound->samples[p.slot] = sc::sample_of(p.input);
      break;
    }
    case wire::Payload::PodScheduled: {
      const auto* e = env.payload_as_PodScheduled();
      const auto key = to_string_view(e->pod());
      auto& p = pod(key);
      p.input.requests = messages::to_resource_list(e->requests());
      p.input.phase = sc::pod_phase::running;
      const auto node = to_string_view(e->node());
      auto n = nodes_.find(node);
      if (n == nodes_.end()) n = nodes_.emplace(std::string(node), node_rec{}).first;
      if (p.bound == &n->second) {
        n->second.samples[p.slot] = sc::sample_of(p.input);
      } else {
        unlink(p);  // a pod is on one node (spec.nodeName)
        bind(p, n->second);
      }
      break;
    }
    case wire::Payload::PodEvicted:
      unbind(to_string_view(env.payload_as_PodEvicted()->pod()));
      break;
    case wire::Payload::PodFinished:
      unbind(to_string_view(env.payload_as_PodFinished()->pod()));
      break;
    case wire::Payload::NodeMetricReported: {
      const auto* e = env.payload_as_NodeMetricReported();
      auto it = find_node(to_string_view(e->node()));
      // A report before its Node (the informers race in cluster mode) is kept for the node's
      // registration, which reconciles with it: Koordinator's noderesource controller reads the
      // NodeMetric from its cache when the Node event comes
      // (pkg/slo-controller/noderesource/resource_calculator.go).
      if (it == nodes_.end())
        it = nodes_.emplace(std::string(to_string_view(e->node())), node_rec{}).first;
      on_metric(it->second, *e);
      if (!it->second.registered) break;
      reconcile(it->first, it->second, env, out);
      break;
    }
    case wire::Payload::NodeBatchResourceUpdated: {
      // What the node carries now, whoever wrote it: our own writes come back unchanged, and a
      // restart replaying the log learns the last write. Reset resources are absent: batch when
      // its policy is "reset", mid when the record names a mid reset reason.
      const auto* e = env.payload_as_NodeBatchResourceUpdated();
      const auto it = find_node(to_string_view(e->node()));
      if (it == nodes_.end()) break;
      bool mid_reset = false;
      // The reset reasons are the last terms (publish): scan from the end while they last.
      if (const auto* ts = e->terms(); ts != nullptr)
        for (auto k = ts->size(); k > 0 && !mid_reset; --k) {
          const auto& t = *ts->Get(k - 1);
          mid_reset = messages::term_named(t, "mid.resetReason");
          if (!mid_reset && !messages::term_named(t, "batch.resetReason")) break;
        }
      const bool batch_reset = to_string_view(e->cpu_policy()) == "reset";
      auto opt = [](bool reset, std::int64_t v) {
        return reset ? std::nullopt : std::optional<std::int64_t>(v);
      };
      // A complete record this component did not just write (a replay after a restart, another
      // writer): its decision becomes the one a repeat refers to. A short record naming another
      // time leaves no complete decision known.
      auto& rec = it->second;
      const event_time t{env.event_time_ms()};
      if (e->terms_as_of_ms() < 0 && rec.full_time != t) {
        decision_key k{rec.full_key};
        k.head(e->batch_cpu_milli(), e->batch_memory_bytes(), e->mid_cpu_milli(),
               e->mid_memory_bytes(), to_string_view(e->cpu_policy()),
               to_string_view(e->memory_policy()), e->degraded());
        if (const auto* ts = e->terms(); ts != nullptr)
          for (const auto* x : *ts)
            if (!is_sync_term(*x))
              k.term({}, messages::term_name(*x), x->value(), to_string_view(x->unit()),
                     to_string_view(x->text()));
        rec.full_time = t;
      } else if (e->terms_as_of_ms() >= 0 &&
                 (!rec.full_time || rec.full_time->value != e->terms_as_of_ms())) {
        rec.full_key.clear();
        rec.full_time.reset();
      }
      // Our metadata patch, as the node carries it once applied (a replay after a restart).
      if (const auto* ts = e->terms(); ts != nullptr)
        for (const auto* x : *ts)
          if (messages::term_named(*x, "meta.annotationsPatch")) {
            auto after = rec.meta;
            if (sc::apply_annotation_patch(to_string_view(x->text()), after) && after != rec.meta)
              apply_meta(rec, after);
          }
      auto& pub = it->second.published;
      pub.batch_cpu = opt(batch_reset, e->batch_cpu_milli());
      pub.batch_memory = opt(batch_reset, e->batch_memory_bytes());
      pub.mid_cpu = opt(mid_reset, e->mid_cpu_milli());
      pub.mid_memory = opt(mid_reset, e->mid_memory_bytes());
      it->second.last_sync = event_time{env.event_time_ms()};
      break;
    }
    case wire::Payload::ConfigUpdated:
      on_config(env, *env.payload_as_ConfigUpdated(), out);
      break;
    default:
      break;
  }
}

void slo_controller_component::on_config(const wire::Envelope& env, const wire::ConfigUpdated& c,
                                         std::vector<messages::byte_buffer>& out) {
  if (to_string_view(c.kind()) != config_kind_slo_controller) return;
  const auto before = cfg_;
  if (c.deleted()) {
    cfg_ = sc::deleted_config();
  } else {
    auto u = sc::update(cfg_, to_string_view(c.spec_json()));
    cfg_ = std::move(u.in_force);
    if (u.error) {
      auto e = *u.error;
      e.where =
          "log offset " + std::to_string(env.offset()) + (e.where.empty() ? "" : ": ") + e.where;
      config_errors_.push_back(std::move(e));
    }
  }
  // Koordinator enqueues every node when the colocation config changes (noderesource), and
  // when the NodeSLO config does (nodeslo_cm_event_handler.go triggerAllNodeEnqueue).
  const bool colocation = cfg_.colocation != before.colocation;
  const bool slo = !sc::same_node_slo_keys(cfg_, before);
  // cpunormalization / resourceamplification configHandler: a changed key enqueues every node.
  const bool meta =
      opt_.cpu_normalization && (cfg_.cpu_normalization != before.cpu_normalization ||
                                 cfg_.resource_amplification != before.resource_amplification);
  if (colocation) ++config_generation_;
  if (slo) slo_ = sc::node_slo_renderer(cfg_);
  if (meta) reparse_meta_configs();
  if (!colocation && !slo && !meta) return;
  for (auto& [name, n] : nodes_) {
    if (!n.registered) continue;
    if (colocation || meta) reconcile(name, n, env, out);
    if (slo) render_slo(name, n, env, out);
  }
}

void slo_controller_component::render_slo(const std::string& node, node_rec& n,
                                          const wire::Envelope& cause,
                                          std::vector<messages::byte_buffer>& out) {
  auto spec = slo_.spec_json(n.input.labels);
  if (spec == n.slo_spec) return;  // nodeslo_controller.go: update only when the spec differs
  n.slo_spec = std::move(spec);
  auto& fbb = b_.fbb();
  const auto sj = fbb.CreateString(n.slo_spec);
  const auto payload = wire::CreateNodeSLOUpdated(fbb, sj);
  messages::header h;
  h.time = event_time{cause.event_time_ms()};
  h.kind = wire::EntityKind::Node;
  h.key = node;
  h.causation = static_cast<std::int64_t>(cause.offset());
  h.source = opt_.name;
  out.push_back(b_.finish(h, payload));
}

std::string_view slo_controller_component::node_slo(std::string_view node) const {
  const auto it = nodes_.find(node);
  return it == nodes_.end() ? std::string_view{} : std::string_view(it->second.slo_spec);
}

namespace {

bool same_terms(const std::vector<sc::term>& a, const sc::term_list& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto& x = a[i];
    const auto& y = b[i];
    if (x.name != y.name || x.value != y.value || x.unit != y.unit || x.text != y.text)
      return false;
  }
  return true;
}

}  // namespace

void slo_controller_component::reconcile(const std::string& node, node_rec& n,
                                         const wire::Envelope& cause,
                                         std::vector<messages::byte_buffer>& out) {
  if (!cfg_.colocation) return;  // colocation-config unavailable: Koordinator does not reconcile
  const event_time now{cause.event_time_ms()};
  if (auto* c = idle_result_of(n, now)) {
    const auto meta = meta_of(n, c->r.disabled);
    publish(node, n, cause, c->strategy, c->r, c->prepared, out, c,
            meta.patch.empty() ? nullptr : &meta);
    return;
  }
  const auto strategy = strategy_of(n);
  const auto r =
      sc::reconcile_node_resource(*cfg_.colocation, n.input, n.samples,
                                  n.metric ? &*n.metric : nullptr, n.metric_samples, now, scratch_);
  const auto meta = meta_of(n, r.disabled);
  publish(node, n, cause, strategy, r, sc::prepare_node_resource(r, n.input), out, nullptr,
          meta.patch.empty() ? nullptr : &meta);
}

sc::node_meta_update slo_controller_component::meta_of(const node_rec& n, bool disabled) const {
  if (!opt_.cpu_normalization) return {};
  return sc::update_node_meta(cpu_norm_ ? &*cpu_norm_ : nullptr, amp_ ? &*amp_ : nullptr,
                              n.input.labels, n.meta, disabled);
}

void slo_controller_component::apply_meta(node_rec& n, const sc::node_meta& after) {
  n.meta = after;
  // The batch plugin reads the node's ratio (node_from_event's rule: unparsable -> none).
  std::optional<double> ratio;
  if (after.cpu_normalization_ratio) {
    if (auto v = sc::parse_cpu_normalization_ratio(*after.cpu_normalization_ratio)) ratio = *v;
  }
  if (ratio != n.input.cpu_normalization_ratio) {
    n.input.cpu_normalization_ratio = ratio;
    n.idle.reset();  // its prepared result used the old ratio
  }
}

void slo_controller_component::reparse_meta_configs() {
  // The keys were validated by sc::update; a parse failure here leaves the plugin unavailable.
  cpu_norm_.reset();
  amp_.reset();
  if (cfg_.cpu_normalization)
    if (auto c = sc::parse_cpu_normalization_strategies(cfg_.cpu_normalization->canonical_json))
      cpu_norm_ = std::move(*c);
  if (cfg_.resource_amplification)
    if (auto c = sc::parse_resource_amplification_strategies(
            cfg_.resource_amplification->canonical_json))
      amp_ = std::move(*c);
}

sc::colocation_strategy slo_controller_component::strategy_of(const node_rec& n) const {
  sc::node_strategy_inputs si;
  si.labels = &n.input.labels;
  if (n.input.colocation_strategy_annotation)
    si.colocation_strategy_annotation = *n.input.colocation_strategy_annotation;
  return sc::node_colocation_strategy(*cfg_.colocation, si);
}

slo_controller_component::node_rec::idle_result* slo_controller_component::idle_result_of(
    node_rec& n, event_time now) {
  if (!opt_.cache_idle_nodes || !n.samples.empty() || !n.metric_samples.empty() || !n.metric ||
      !n.metric->host_app_metrics.empty())
    return nullptr;
  // The node's strategy depends on the config and the node only: kept with the entry.
  if (n.idle && n.idle->config_generation != config_generation_) n.idle.reset();
  if (!n.idle) {
    n.idle = std::make_unique<node_rec::idle_result>();
    n.idle->config_generation = config_generation_;
    n.idle->strategy = strategy_of(n);
  }
  auto& c = *n.idle;
  const auto& m = *n.metric;
  if (sc::is_degrade_needed(c.strategy, &m, now)) return nullptr;
  if (c.computed && c.node_usage.cpu_milli == m.node_usage.cpu_milli &&
      c.node_usage.memory_bytes == m.node_usage.memory_bytes && c.system_usage == m.system_usage &&
      c.prod_reclaimable == m.prod_reclaimable) {
    ++idle_hits_;
    return &c;
  }
  c.node_usage = m.node_usage;
  c.system_usage = m.system_usage;
  c.prod_reclaimable = m.prod_reclaimable;
  c.r = sc::reconcile_node_resource(*cfg_.colocation, n.input, n.samples, &m, n.metric_samples, now,
                                    scratch_);
  c.prepared = sc::prepare_node_resource(c.r, n.input);
  c.computed = true;
  c.record.clear();  // written from the previous result
  c.has_key = false;
  return &c;
}

void slo_controller_component::publish(
    const std::string& node, node_rec& n, const wire::Envelope& cause,
    const sc::colocation_strategy& strategy, const sc::node_resource_result& r,
    const sc::prepared_node_resources& prepared, std::vector<messages::byte_buffer>& out,
    node_rec::idle_result* idle, const sc::node_meta_update* meta) {
  const event_time now{cause.event_time_ms()};
  const auto sync = sc::need_sync(strategy, n.published, prepared.allocatable, n.last_sync, now);
  if (!sync.need_sync && meta == nullptr) {
    ++skipped_writes_;
    return;
  }
  // A metadata patch makes the record one of its own: neither the idle result's key nor its
  // record (both without the patch) stand for it.
  if (meta != nullptr) idle = nullptr;
  std::string meta_reason;
  if (meta != nullptr && !sync.need_sync) meta_reason = "meta: " + meta->reason;
  const std::string_view sync_reason = meta_reason.empty() ? sync.reason : meta_reason;
  const auto& a = prepared.allocatable;
  // The decision as a key: a repeat of the node's last complete record, republished because it
  // expired, is written short (terms_as_of_ms, docs/events.md); 97 % of the writes of a plain
  // openb run are such repeats (idle nodes, every updateTimeThresholdSeconds). An idle result
  // keeps its key.
  std::string* key_of = &key_scratch_;
  if (idle != nullptr && idle->has_key) {
    key_of = &idle->key;
  } else {
    decision_key key{key_scratch_};
    key.head(a.batch_cpu.value_or(0), a.batch_memory.value_or(0), a.mid_cpu.value_or(0),
             a.mid_memory.value_or(0), r.batch_cpu.formula, r.batch_memory.formula, r.degraded);
    for (const auto* e : {&r.batch_cpu, &r.batch_memory, &r.mid_cpu, &r.mid_memory}) {
      const auto prefix = short_resource(e->resource);
      for (const auto& x : e->terms) key.term(prefix, x.name, x.value, x.unit, x.text);
    }
    for (const auto& x : prepared.terms) key.term("prepare", x.name, x.value, x.unit, x.text);
    // In record order (a replay rebuilds the key from the record): before the reset reasons.
    if (meta != nullptr) key.term("meta", "annotationsPatch", 0, "", meta->patch);
    if (!r.batch_reason.empty()) key.term("batch", "resetReason", 0, "", r.batch_reason);
    if (!r.mid_reason.empty()) key.term("mid", "resetReason", 0, "", r.mid_reason);
    if (idle != nullptr) {
      idle->key = key_scratch_;
      idle->has_key = true;
    }
  }
  const bool repeat =
      n.full_time && sync_reason == sc::sync_reason_expired && *key_of == n.full_key;
  // The idle result's last record, when this write would be the same bytes but for event time
  // and causation: same sync decision, same form, and a repeat naming the same complete record.
  if (idle != nullptr && !idle->record.empty() && idle->sync_reason == sync.reason &&
      same_terms(idle->sync_terms, sync.terms) && idle->record_repeat == repeat &&
      (!repeat || idle->record_as_of == n.full_time->value)) {
    // Fields at their default are absent from a FlatBuffer, so a rewrite can fail (time 0):
    // then the record is built as usual.
    auto rec = idle->record;
    auto* env = wire::GetMutableEnvelope(rec.data());
    if (env->mutate_event_time_ms(now.value) &&
        env->mutate_causation(static_cast<std::int64_t>(cause.offset()))) {
      out.push_back(std::move(rec));
      n.published = a;
      n.last_sync = now;
      if (!repeat) {
        n.full_time = now;
        n.full_key = *key_of;
      }
      ++record_reuses_;
      return;
    }
  }

  auto& fbb = b_.fbb();
  std::vector<fb::Offset<wire::Term>> terms;
  std::string name;
  // Units and texts repeat within a record (a handful of distinct ones): each is written once.
  // A short list beats FlatBuffers' CreateSharedString (an ordered set over the buffer).
  std::vector<std::pair<std::string_view, fb::Offset<fb::String>>> pool;
  auto shared = [&](std::string_view v) {
    for (const auto& [k, off] : pool)
      if (k == v) return off;
    const auto off = fbb.CreateString(v.data(), v.size());
    pool.emplace_back(v, off);
    return off;
  };
  // Vocabulary terms go by number (schema v2, messages/terms.hpp); others by name.
  auto add = [&](std::string_view prefix, wire::TermGroup group, const sc::term& x) {
    if (zero_term(x.value, x.unit, x.text)) return;
    const auto key = group == wire::TermGroup::none
                         ? messages::term_key{}
                         : messages::term_key{group, messages::known_term(x.name)};
    fb::Offset<fb::String> nm;
    if (!key.by_vocabulary()) {
      name.assign(prefix);
      name += '.';
      name += x.name;
      nm = fbb.CreateString(name);
    }
    const auto u = x.unit.empty() ? fb::Offset<fb::String>{} : shared(x.unit);
    const auto tx = x.unit.empty() ? shared(x.text) : fb::Offset<fb::String>{};
    wire::TermBuilder tb(fbb);
    tb.add_value(x.value);
    if (!nm.IsNull()) tb.add_name(nm);
    if (!u.IsNull()) tb.add_unit(u);
    if (!tx.IsNull()) tb.add_text(tx);
    if (key.by_vocabulary()) {
      tb.add_known(key.known);
      tb.add_group(key.group);
    }
    terms.push_back(tb.Finish());
  };
  if (!repeat) {
    for (const auto* e : {&r.batch_cpu, &r.batch_memory, &r.mid_cpu, &r.mid_memory}) {
      const auto prefix = short_resource(e->resource);
      const auto group = messages::term_group(prefix);
      for (const auto& x : e->terms) add(prefix, group, x);
    }
    for (const auto& x : prepared.terms) add("prepare", wire::TermGroup::prepare, x);
    for (const auto& x : sync.terms) add("sync", wire::TermGroup::sync, x);
    add("sync", wire::TermGroup::sync, sc::term{"reason", 0, "", sync_reason});
  }
  if (meta != nullptr)
    add("meta", wire::TermGroup::none, sc::term{"annotationsPatch", 0, "", meta->patch});
  if (!r.batch_reason.empty())
    add("batch", wire::TermGroup::batch, sc::term{"resetReason", 0, "", r.batch_reason});
  if (!r.mid_reason.empty())
    add("mid", wire::TermGroup::mid, sc::term{"resetReason", 0, "", r.mid_reason});
  const auto term_vec = fbb.CreateVector(terms);
  const std::int64_t as_of = repeat ? n.full_time->value : -1;
  const auto nn = b_.key_string(node);
  const auto cp = shared(r.batch_cpu.formula);
  const auto mp = shared(r.batch_memory.formula);
  const auto payload = wire::CreateNodeBatchResourceUpdated(
      fbb, nn, a.batch_cpu.value_or(0), a.batch_memory.value_or(0), a.mid_cpu.value_or(0),
      a.mid_memory.value_or(0), cp, mp, r.degraded, term_vec, as_of);
  if (!repeat) {
    n.full_time = now;
    n.full_key = *key_of;
  }
  messages::header h;
  h.time = now;
  h.kind = wire::EntityKind::Node;
  h.key = node;
  h.causation = static_cast<std::int64_t>(cause.offset());
  h.source = opt_.name;
  out.push_back(b_.finish(h, payload));
  n.published = a;
  n.last_sync = now;
  if (idle != nullptr) {
    idle->record = out.back();
    idle->sync_reason = sync.reason;
    idle->sync_terms.assign(sync.terms.begin(), sync.terms.end());
    idle->record_repeat = repeat;
    idle->record_as_of = as_of;
  }
  // Last: it may drop n.idle, which r and prepared can point into.
  if (meta != nullptr) apply_meta(n, meta->after);
}

}  // namespace colony::slo_controller_actor
