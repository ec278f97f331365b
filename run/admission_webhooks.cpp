#include "run/admission_webhooks.hpp"

#include <vector>

#include "actors/admission/actor/colocation_profile_component.hpp"
#include "actors/quota/actor/quota_webhook_component.hpp"
#include "bridges/kubernetes/admission_review.hpp"
#include "bridges/kubernetes/webhook_registration.hpp"

namespace colony::run {

namespace {

using review_mode = admission_actor::colocation_profile_component::review_mode;

// An event the codec built (it verified nothing: the bytes are ours).
const wire::Envelope& envelope(const messages::byte_buffer& b) {
  return *wire::GetEnvelope(b.data());
}

tl::unexpected<error> wrong_kind(const kube::admission_request& rq, std::string_view want) {
  return fail(errc::invalid_input,
              "this webhook reviews " + std::string(want) + ", not " + rq.kind_group +
                  (rq.kind_group.empty() ? "" : "/") + rq.kind_version + " " + rq.kind,
              "request.kind");
}

}  // namespace

admission_webhooks::admission_webhooks(bool elastic_quota)
    : admission_(std::make_unique<admission_actor::colocation_profile_component>(
          admission::profile_set{}, admission_actor::colocation_profile_options{})) {
  if (elastic_quota) quota_ = std::make_unique<quota::quota_webhook_component>();
}

admission_webhooks::~admission_webhooks() = default;

void admission_webhooks::feed(messages::bytes_view record) {
  const auto& env = *wire::GetEnvelope(record.data());
  const auto type = env.payload_type();
  std::vector<messages::byte_buffer> none;
  std::lock_guard lk(mu_);
  // Only its configuration: a PodSubmitted would make the component mutate the pod again.
  if (type == wire::Payload::ConfigUpdated) admission_->on_event(env, none);
  if (quota_ && quota_->wants(type)) quota_->on_event(env, none);
}

webhook_answer admission_webhooks::serve(std::string_view path, std::string_view body) {
  const bool pods = path == kube::path_mutate_pod || path == kube::path_validate_pod;
  const bool quotas = quota_ && path == kube::path_validate_elastic_quota;
  if (!pods && !quotas) {
    ++unreadable_;
    return {404, "no admission webhook at " + std::string(path) + "\n", "text/plain"};
  }
  auto rq = kube::decode_admission_review(body);
  if (!rq) {
    ++unreadable_;
    return {400, rq.error().describe() + "\n", "text/plain"};
  }
  ++reviews_;
  const auto answer = [&](const kube::admission_response& r) {
    if (!r.allowed) ++refused_;
    return webhook_answer{200, kube::encode_admission_review(r)};
  };
  const auto refuse = [&](const error& e) { return answer(kube::refusal(rq->uid, e)); };
  kube::admission_response allowed;
  allowed.uid = rq->uid;
  const event_time t{0};  // a review is not logged: its event time plays no part

  if (pods) {
    if (rq->kind != "Pod" || rq->kind_group != "" || rq->kind_version != "v1")
      return refuse(wrong_kind(*rq, "v1 Pod").value());
    const bool mutate = path == kube::path_mutate_pod;
    if (rq->operation != "CREATE" && (mutate || rq->operation != "UPDATE")) return answer(allowed);
    auto ev = kube::pod_submitted_of(rq->object, *rq, t);
    if (!ev) return refuse(ev.error());
    std::optional<messages::byte_buffer> old_ev;
    if (rq->operation == "UPDATE") {
      auto o = kube::pod_submitted_of(rq->old_object, *rq, t);
      if (!o) return refuse(o.error());
      old_ev = std::move(*o);
    }
    const auto mode = mutate   ? review_mode::mutate_create
                      : old_ev ? review_mode::validate_update
                               : review_mode::validate_create;
    std::vector<messages::byte_buffer> out;
    {
      std::lock_guard lk(mu_);
      admission_->review(mode, envelope(*ev),
                         old_ev ? envelope(*old_ev).payload_as_PodSubmitted() : nullptr, out);
    }
    for (const auto& d : out) {
      const auto& env = envelope(d);
      if (const auto* rej = env.payload_as_PodRejected())
        return refuse(error{errc::failed_precondition,
                            std::string(messages::to_string_view(rej->reason())),
                            std::string(messages::to_string_view(rej->field()))});
      if (const auto* mut = env.payload_as_PodMutated(); mut != nullptr && mutate) {
        auto patch =
            kube::pod_json_patch(rq->object, *envelope(*ev).payload_as_PodSubmitted(), *mut);
        if (!patch) return refuse(patch.error());
        allowed.json_patch = std::move(*patch);
      }
    }
    return answer(allowed);
  }

  // ElasticQuota.
  if (rq->kind != "ElasticQuota" || rq->kind_group != "scheduling.sigs.k8s.io")
    return refuse(wrong_kind(*rq, "scheduling.sigs.k8s.io ElasticQuota").value());
  quota::quota_operation op = quota::quota_operation::create;
  if (rq->operation == "UPDATE")
    op = quota::quota_operation::update;
  else if (rq->operation == "DELETE")
    op = quota::quota_operation::del;
  else if (rq->operation != "CREATE")
    return answer(allowed);
  std::optional<messages::byte_buffer> obj, old;
  if (op != quota::quota_operation::del) {
    auto e = kube::quota_upserted_of(rq->object, t);
    if (!e) return refuse(e.error());
    obj = std::move(*e);
  }
  if (op != quota::quota_operation::create) {
    auto e = kube::quota_upserted_of(rq->old_object, t);
    if (!e) return refuse(e.error());
    old = std::move(*e);
  }
  result<void> r;
  {
    std::lock_guard lk(mu_);
    r = quota_->review(op, obj ? envelope(*obj).payload_as_QuotaUpserted() : nullptr,
                       old ? envelope(*old).payload_as_QuotaUpserted() : nullptr);
  }
  if (!r) {
    // The quota's own fields are wrong or the tree refuses it: both are the user's to fix
    // (403); 400 stays for an object that cannot be read.
    error e = r.error();
    if (e.code == errc::invalid_input) e.code = errc::failed_precondition;
    return refuse(e);
  }
  return answer(allowed);
}

}  // namespace colony::run
