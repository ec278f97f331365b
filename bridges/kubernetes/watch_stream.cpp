// WATCH requests over detail::curl_session (see watch_stream.hpp).
#include "bridges/kubernetes/watch_stream.hpp"

#include <exception>
#include <optional>
#include <vector>

#include "bridges/kubernetes/api_client.hpp"
#include "bridges/kubernetes/detail/curl_session.hpp"

namespace colony::kube {

watch_stream::watch_stream(std::unique_ptr<detail::curl_session> s) : session_(std::move(s)) {}
watch_stream::watch_stream(watch_stream&&) noexcept = default;
watch_stream& watch_stream::operator=(watch_stream&&) noexcept = default;
watch_stream::~watch_stream() = default;

result<watch_stream> watch_stream::open(connection conn, client_options options) {
  auto s = detail::curl_session::open(std::move(conn), std::move(options));
  if (!s) return tl::make_unexpected(s.error());
  return watch_stream(std::move(*s));
}

void watch_stream::stop() { session_->interrupt(); }

std::string watch_stream::watch_path(std::string_view path, const watch_params& p) {
  std::string q(path);
  add_query(q, "watch", "1");
  if (!p.resource_version.empty()) add_query(q, "resourceVersion", p.resource_version);
  if (p.allow_bookmarks) add_query(q, "allowWatchBookmarks", "true");
  if (p.timeout.count() > 0) add_query(q, "timeoutSeconds", std::to_string(p.timeout.count()));
  if (!p.label_selector.empty()) add_query(q, "labelSelector", p.label_selector);
  if (!p.field_selector.empty()) add_query(q, "fieldSelector", p.field_selector);
  return q;
}

result<watch_summary> watch_stream::run(std::string_view path, const watch_params& params,
                                        const handler& on_event) {
  detail::request req;
  req.url = detail::join_url(session_->conn(), watch_path(path, params));
  // No overall limit: the server closes the stream after timeoutSeconds. The margin only
  // catches a server that keeps the connection but stops talking (TCP keepalive would not).
  if (params.timeout.count() > 0) req.timeout = params.timeout + std::chrono::seconds(60);
  watch_decoder decoder("GET " + req.url);
  watch_summary sum;
  std::string error_body;  // the body of a non-200 answer: a Status, not events
  std::vector<watch_event> batch;
  std::optional<error> decode_error;
  bool handler_stop = false;
  const detail::data_sink sink = [&](long status, std::string_view bytes) {
    if (status != 200) {
      if (error_body.size() < (std::size_t{1} << 20)) error_body.append(bytes);
      return true;
    }
    batch.clear();
    auto r = decoder.feed(bytes, batch);
    for (auto& ev : batch) {
      ++sum.events;
      // Nothing may unwind through libcurl's C frames: a throwing handler ends the stream.
      try {
        if (!on_event(ev)) {
          handler_stop = true;
          return false;
        }
      } catch (const std::exception& e) {
        decode_error = error{errc::internal, std::string("watch handler threw: ") + e.what(),
                             "GET " + req.url};
        return false;
      }
    }
    if (!r) {
      decode_error = r.error();
      return false;
    }
    return true;
  };
  auto t = session_->perform(req, sink);
  sum.bytes = decoder.bytes();
  if (!t) {
    // A connection cut mid-stream: the events before the cut were delivered and stand.
    return tl::make_unexpected(t.error());
  }
  sum.http_version = t->http_version;
  if (t->interrupted) {
    sum.end = watch_end::stopped;
    return sum;
  }
  if (decode_error) return tl::make_unexpected(*decode_error);
  if (handler_stop) {
    sum.end = watch_end::handler;
    return sum;
  }
  if (t->status == 410) {
    sum.end = watch_end::gone;
    return sum;
  }
  if (t->status != 200)
    return tl::make_unexpected(status_error(t->status, error_body, "GET " + req.url));
  if (auto r = decoder.finish(); !r) return tl::make_unexpected(r.error());
  sum.end = watch_end::closed;
  return sum;
}

}  // namespace colony::kube
