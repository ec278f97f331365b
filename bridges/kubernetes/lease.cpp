#include "bridges/kubernetes/lease.hpp"

#include <nlohmann/json.hpp>

#include "bridges/kubernetes/kube_time.hpp"

namespace colony::kube {

using json = nlohmann::json;

namespace {

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

lease_record record_of(const json& lease) {
  lease_record r;
  const json spec = lease.value("spec", json::object());
  if (!spec.is_object()) return r;
  if (spec.contains("holderIdentity") && spec["holderIdentity"].is_string())
    r.holder = spec["holderIdentity"].get<std::string>();
  if (spec.contains("leaseDurationSeconds") && spec["leaseDurationSeconds"].is_number_integer())
    r.lease_duration_seconds = spec["leaseDurationSeconds"].get<std::int64_t>();
  if (spec.contains("acquireTime") && spec["acquireTime"].is_string())
    r.acquire_time = spec["acquireTime"].get<std::string>();
  if (spec.contains("renewTime") && spec["renewTime"].is_string())
    r.renew_time = spec["renewTime"].get<std::string>();
  if (spec.contains("leaseTransitions") && spec["leaseTransitions"].is_number_integer())
    r.transitions = spec["leaseTransitions"].get<std::int64_t>();
  return r;
}

json lease_object(const lease_options& o, const lease_record& r, const std::string& rv) {
  json meta{{"name", o.name}, {"namespace", o.lease_namespace}};
  if (!rv.empty()) meta["resourceVersion"] = rv;
  json spec{{"holderIdentity", r.holder},
            {"leaseDurationSeconds", r.lease_duration_seconds},
            {"leaseTransitions", r.transitions}};
  if (!r.acquire_time.empty()) spec["acquireTime"] = r.acquire_time;
  if (!r.renew_time.empty()) spec["renewTime"] = r.renew_time;
  return json{{"apiVersion", "coordination.k8s.io/v1"},
              {"kind", "Lease"},
              {"metadata", meta},
              {"spec", spec}};
}

}  // namespace

result<lease_elector> lease_elector::open(connection conn, lease_options opts) {
  if (opts.identity.empty())
    return fail(errc::invalid_input, "leader election needs an identity", "identity");
  if (opts.name.empty() || opts.lease_namespace.empty())
    return fail(errc::invalid_input, "leader election needs a Lease namespace and name", "name");
  // client-go NewLeaderElector: LeaseDuration > RenewDeadline > JitterFactor (1.2) x RetryPeriod.
  if (!(opts.lease_duration > opts.renew_deadline))
    return fail(errc::invalid_input, "the lease duration must be greater than the renew deadline",
                "lease_duration");
  if (opts.retry_period.count() <= 0 ||
      !(opts.renew_deadline.count() * 10 > opts.retry_period.count() * 12))
    return fail(errc::invalid_input,
                "the renew deadline must be greater than 1.2 x the retry period (> 0)",
                "renew_deadline");
  if (opts.lease_duration.count() < 1000)
    return fail(errc::invalid_input, "the lease duration must be at least 1 s (whole seconds)",
                "lease_duration");
  auto c = api_client::open(std::move(conn));
  if (!c) return tl::unexpected(c.error());
  return lease_elector(std::move(*c), std::move(opts));
}

std::string lease_elector::path() const {
  return "/apis/coordination.k8s.io/v1/namespaces/" + opts_.lease_namespace + "/leases/" +
         opts_.name;
}

result<bool> lease_elector::try_acquire_or_renew(steady::time_point now) {
  const std::int64_t now_ms = wall_ms();
  lease_record mine;
  mine.holder = opts_.identity;
  mine.lease_duration_seconds =
      std::chrono::duration_cast<std::chrono::seconds>(opts_.lease_duration).count();
  mine.acquire_time = micro_time(now_ms);
  mine.renew_time = mine.acquire_time;

  auto got = client_.get(path());
  if (!got) {
    if (got.error().code != errc::not_found) return tl::unexpected(got.error());
    const std::string collection =
        "/apis/coordination.k8s.io/v1/namespaces/" + opts_.lease_namespace + "/leases";
    auto made = client_.post(collection, lease_object(opts_, mine, {}).dump());
    if (!made) {
      // Another candidate created it first: it holds the lease; the next round sees it.
      if (made.error().code == errc::already_exists) return false;
      return tl::unexpected(made.error());
    }
    const json body = json::parse(made->body, nullptr, false);
    observed_ = mine;
    observed_rv_ = body.is_object() ? body["metadata"].value("resourceVersion", "") : "";
    observed_time_ = now;
    have_observed_ = true;
    return true;
  }
  const json lease = json::parse(got->body, nullptr, false);
  if (!lease.is_object() || !lease.contains("metadata"))
    return fail(errc::invalid_input, "the API server answered a Lease that is not an object",
                client_.url(path()));
  const lease_record seen = record_of(lease);
  const std::string rv = lease["metadata"].value("resourceVersion", "");
  // observedTime moves only when the record changes: a holder that stops renewing leaves it
  // unchanged, and lease_duration of our own clock later it is free.
  if (!have_observed_ || !(seen == observed_)) {
    observed_ = seen;
    observed_time_ = now;
    have_observed_ = true;
  }
  observed_rv_ = rv;
  const bool held_by_other = !seen.holder.empty() && seen.holder != opts_.identity;
  const auto duration = seen.lease_duration_seconds > 0
                            ? std::chrono::milliseconds(seen.lease_duration_seconds * 1000)
                            : opts_.lease_duration;
  if (held_by_other && observed_time_ + duration > now) return false;
  if (seen.holder == opts_.identity) {
    mine.acquire_time = seen.acquire_time;
    mine.transitions = seen.transitions;
  } else {
    mine.transitions = seen.transitions + 1;
  }
  auto put = client_.put(path(), lease_object(opts_, mine, rv).dump());
  if (!put) {
    // 409: another candidate wrote in between; it holds the lease for now.
    if (put.error().code == errc::failed_precondition) return false;
    return tl::unexpected(put.error());
  }
  const json body = json::parse(put->body, nullptr, false);
  observed_ = mine;
  observed_rv_ = body.is_object() ? body["metadata"].value("resourceVersion", rv) : rv;
  observed_time_ = now;
  return true;
}

result<void> lease_elector::release() {
  if (!have_observed_ || observed_.holder != opts_.identity) return {};
  lease_record r = observed_;
  r.holder.clear();
  r.lease_duration_seconds = 1;
  r.renew_time = micro_time(wall_ms());
  auto put = client_.put(path(), lease_object(opts_, r, observed_rv_).dump());
  if (!put) return tl::unexpected(put.error());
  observed_ = r;
  return {};
}

// ---- leader_election

result<std::unique_ptr<leader_election>> leader_election::start(connection conn,
                                                                lease_options opts) {
  auto e = lease_elector::open(std::move(conn), std::move(opts));
  if (!e) return tl::unexpected(e.error());
  std::unique_ptr<leader_election> le(new leader_election(std::move(*e)));
  le->thread_ = std::thread([p = le.get()] { p->loop(); });
  return le;
}

leader_election::leader_election(lease_elector e)
    : elector_(std::move(e)), opts_(elector_.options()) {}

leader_election::~leader_election() { stop(); }

void leader_election::stop() {
  {
    std::lock_guard lk(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool leader_election::wait_leading(const std::function<bool()>& give_up) {
  while (!leading_ && !lost_ && !stopping_) {
    // Without the lock: give_up may call describe().
    if (give_up && give_up()) return false;
    std::unique_lock lk(mu_);
    cv_.wait_for(lk, std::chrono::milliseconds(50),
                 [this] { return leading_ || lost_ || stopping_; });
  }
  return leading_.load();
}

std::string leader_election::describe() const {
  std::lock_guard lk(mu_);
  std::string s = "lease " + opts_.lease_namespace + "/" + opts_.name;
  s += holder_seen_.empty() ? " (no holder)" : " held by " + holder_seen_;
  if (!last_error_.empty()) s += "; last error: " + last_error_;
  return s;
}

void leader_election::loop() {
  auto last_renew = steady::now();
  for (;;) {
    const auto now = steady::now();
    auto r = elector_.try_acquire_or_renew(now);
    {
      std::lock_guard lk(mu_);
      if (r) {
        last_error_.clear();
        holder_seen_ = elector_.observed().holder;
      } else {
        last_error_ = r.error().describe();
      }
    }
    const bool won = r && *r;
    if (leading_) {
      if (won) {
        last_renew = now;
      } else if (now - last_renew >= opts_.renew_deadline) {
        // client-go: failed to renew within the deadline -> OnStoppedLeading. The lead is not
        // sought again: the process that lost it must stop what it started.
        leading_ = false;
        lost_ = true;
        cv_.notify_all();
        return;
      }
    } else if (won) {
      last_renew = now;
      acquired_ms_ = wall_ms();
      leading_ = true;
      cv_.notify_all();
    }
    std::unique_lock lk(mu_);
    if (cv_.wait_for(lk, opts_.retry_period, [this] { return stopping_.load(); })) break;
  }
  if (leading_) {
    (void)elector_.release();
    leading_ = false;
  }
}

}  // namespace colony::kube
