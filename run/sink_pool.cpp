#include "run/sink_pool.hpp"

#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "messages/codec.hpp"

namespace colony::run {

struct sink_pool::impl {
  struct worker {
    std::optional<kube::decision_sink> sink;
    std::vector<std::size_t> todo;  // indexes into the current batch, in record order
    std::uint64_t assigned = 0;     // the batch it has work in (under mu)
    std::condition_variable wake;
    std::thread thread;
  };
  std::vector<std::unique_ptr<worker>> workers;
  std::mutex mu;
  std::condition_variable done_cv;
  std::uint64_t generation = 0;  // bumped per batch (under mu)
  std::size_t busy = 0;          // workers still on the current batch (under mu)
  bool stopping = false;
  std::span<const std::span<const std::uint8_t>> batch;
  std::vector<result<std::vector<kube::write_outcome>>>* out = nullptr;

  void run(worker& w) {
    std::uint64_t seen = 0;
    for (;;) {
      {
        std::unique_lock lk(mu);
        w.wake.wait(lk, [&] { return stopping || w.assigned != seen; });
        if (stopping) return;
        seen = w.assigned;
      }
      // Each worker writes only its own slots of *out; apply() reads them after busy is 0.
      for (const std::size_t i : w.todo) (*out)[i] = w.sink->apply(batch[i]);
      std::lock_guard lk(mu);
      if (--busy == 0) done_cv.notify_one();
    }
  }

  ~impl() {
    {
      std::lock_guard lk(mu);
      stopping = true;
    }
    for (auto& w : workers) w->wake.notify_one();
    for (auto& w : workers)
      if (w->thread.joinable()) w->thread.join();
  }
};

sink_pool::sink_pool(std::unique_ptr<impl> p) : impl_(std::move(p)) {}
sink_pool::~sink_pool() = default;

result<std::unique_ptr<sink_pool>> sink_pool::open(const kube::connection& conn, std::size_t n,
                                                   const kube::sink_options& opt) {
  auto p = std::make_unique<impl>();
  for (std::size_t i = 0; i < std::max<std::size_t>(n, 1); ++i) {
    kube::sink_options o = opt;
    o.seed = opt.seed + i;  // distinct retry jitter per connection
    auto s = kube::decision_sink::open(conn, o);
    if (!s) return tl::unexpected(s.error());
    auto w = std::make_unique<impl::worker>();
    w->sink.emplace(std::move(*s));
    p->workers.push_back(std::move(w));
  }
  for (auto& w : p->workers)
    w->thread = std::thread([raw = p.get(), wp = w.get()] { raw->run(*wp); });
  return std::unique_ptr<sink_pool>(new sink_pool(std::move(p)));
}

std::vector<result<std::vector<kube::write_outcome>>> sink_pool::apply(
    std::span<const std::span<const std::uint8_t>> records) {
  std::vector<result<std::vector<kube::write_outcome>>> out(records.size());
  if (records.empty()) return out;
  auto& p = *impl_;
  const std::size_t n = p.workers.size();
  for (auto& w : p.workers) w->todo.clear();
  for (std::size_t i = 0; i < records.size(); ++i) {
    // An unreadable record goes to worker 0, whose sink reports it.
    std::size_t k = 0;
    const auto& r = records[i];
    if (flatbuffers::Verifier v(r.data(), r.size()); wire::VerifyEnvelopeBuffer(v)) {
      const auto* env = wire::GetEnvelope(r.data());
      // The object the write touches: a PodScheduled is keyed by its node (the node stage
      // decides it) but writes the pod's binding, which must stay before that pod's eviction.
      std::string_view object = messages::to_string_view(env->entity_key());
      if (const auto* ps = env->payload_as_PodScheduled(); ps != nullptr)
        object = messages::to_string_view(ps->pod());
      k = std::hash<std::string_view>{}(object) % n;
    }
    p.workers[k]->todo.push_back(i);
  }
  {
    std::lock_guard lk(p.mu);
    p.batch = records;
    p.out = &out;
    ++p.generation;
    p.busy = 0;
    for (auto& w : p.workers)
      if (!w->todo.empty()) {
        w->assigned = p.generation;
        ++p.busy;
      }
  }
  // Only the workers with records are woken; a worker reads its todo after it saw its
  // assignment under the lock, and apply() touches the todos again only after all are done.
  for (auto& w : p.workers)
    if (!w->todo.empty()) w->wake.notify_one();
  std::unique_lock lk(p.mu);
  p.done_cv.wait(lk, [&] { return p.busy == 0; });
  p.out = nullptr;
  return out;
}

kube::sink_counters sink_pool::counters() const {
  kube::sink_counters c;
  for (const auto& w : impl_->workers) {
    const auto& s = w->sink->counters();
    c.records += s.records;
    c.ignored += s.ignored;
    c.requests += s.requests;
    c.writes += s.writes;
    c.skipped += s.skipped;
    c.retries += s.retries;
    c.failed += s.failed;
  }
  return c;
}

}  // namespace colony::run
