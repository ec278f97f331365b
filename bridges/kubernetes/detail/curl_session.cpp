// libcurl glue: the only file that includes curl.h (see detail/curl_session.hpp).
#include "bridges/kubernetes/detail/curl_session.hpp"

#include <array>
#include <fstream>
#include <mutex>
#include <sstream>

#include <curl/curl.h>

namespace colony::kube::detail {
namespace {

void global_init() {
  // curl_global_init is not thread-safe on every build; once per process, never cleaned up.
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct write_context {
  const data_sink* sink = nullptr;
  transfer* out = nullptr;
  CURL* easy = nullptr;
};

std::size_t on_write(char* data, std::size_t size, std::size_t n, void* user) {
  auto* ctx = static_cast<write_context*>(user);
  const std::size_t bytes = size * n;
  long status = 0;
  curl_easy_getinfo(ctx->easy, CURLINFO_RESPONSE_CODE, &status);
  if (!(*ctx->sink)(status, std::string_view(data, bytes))) {
    ctx->out->aborted_by_sink = true;
    return 0;  // != bytes: libcurl ends the transfer with CURLE_WRITE_ERROR
  }
  return bytes;
}

std::string where_of(const request& req) {
  std::string w(req.method);
  w += ' ';
  w += req.url;
  return w;
}

errc transport_code(CURLcode c) {
  switch (c) {
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_CRL_BADFILE:
      return errc::failed_precondition;  // the same request will fail the same way
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
      return errc::invalid_input;
    default:
      return errc::unavailable;  // refused, reset, timed out, stream error: try again later
  }
}

}  // namespace

struct curl_session::handles {
  CURL* easy = nullptr;
  CURLM* multi = nullptr;
  curl_slist* headers = nullptr;
  std::array<char, CURL_ERROR_SIZE> errbuf{};

  ~handles() {
    if (headers != nullptr) curl_slist_free_all(headers);
    if (easy != nullptr) curl_easy_cleanup(easy);
    if (multi != nullptr) curl_multi_cleanup(multi);
  }
};

curl_session::curl_session(connection conn, client_options options)
    : conn_(std::move(conn)),
      options_(std::move(options)),
      h_(std::make_unique<handles>()),
      token_read_(std::chrono::steady_clock::now()) {}

curl_session::~curl_session() = default;

result<std::unique_ptr<curl_session>> curl_session::open(connection conn, client_options options) {
  global_init();
  if (conn.server.empty()) return fail(errc::invalid_input, "no server", conn.origin);
  std::unique_ptr<curl_session> s(new curl_session(std::move(conn), std::move(options)));
  s->h_->easy = curl_easy_init();
  s->h_->multi = curl_multi_init();
  if (s->h_->easy == nullptr || s->h_->multi == nullptr)
    return fail(errc::internal, "libcurl could not allocate a handle", s->conn_.server);
  return s;
}

void curl_session::interrupt() {
  interrupted_.store(true);
  // Thread-safe by contract (libcurl >= 7.68): makes curl_multi_poll return now.
  curl_multi_wakeup(h_->multi);
}

// client-go re-reads a token file at most once a minute (transport/token_source.go), so a
// rotated ServiceAccount token is picked up; a failed read keeps the token in hand.
void curl_session::refresh_token() {
  if (conn_.token_file.empty()) return;
  const auto now = std::chrono::steady_clock::now();
  if (now - token_read_ < std::chrono::minutes(1)) return;
  token_read_ = now;
  std::ifstream in(conn_.token_file, std::ios::binary);
  if (!in) return;
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (!t.empty()) conn_.token = std::move(t);
}

namespace {

// Go's proxy rules, which kubectl and client-go follow, never send a request for localhost or a
// loopback address through HTTP(S)_PROXY (golang.org/x/net/http/httpproxy/proxy.go, useProxy);
// libcurl would, so such URLs get NOPROXY. Other hosts keep the environment's proxy settings.
bool loopback_url(std::string_view url) {
  const auto scheme = url.find("://");
  if (scheme != std::string_view::npos) url.remove_prefix(scheme + 3);
  std::string_view host;
  if (!url.empty() && url.front() == '[') {
    host = url.substr(1, url.find(']') - 1);
  } else {
    host = url.substr(0, url.find_first_of(":/?"));
  }
  return host == "localhost" || host == "::1" || host.substr(0, 4) == "127.";
}

}  // namespace

result<void> curl_session::configure(const request& req) {
  CURL* e = h_->easy;
  curl_easy_reset(e);  // keeps the connection pool, TLS sessions and DNS cache
  h_->errbuf[0] = '\0';
  bool ok = true;
  auto set = [&](CURLoption o, auto v) { ok = ok && curl_easy_setopt(e, o, v) == CURLE_OK; };
  set(CURLOPT_URL, req.url.c_str());
  set(CURLOPT_PROTOCOLS_STR, "https,http");
  if (loopback_url(req.url)) set(CURLOPT_NOPROXY, "*");
  set(CURLOPT_NOSIGNAL, 1L);
  set(CURLOPT_ERRORBUFFER, h_->errbuf.data());
  set(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(options_.connect_timeout.count()));
  set(CURLOPT_TIMEOUT_MS, static_cast<long>(req.timeout.count()));
  set(CURLOPT_USERAGENT, options_.user_agent.c_str());
  // A watch can be silent for minutes; keepalive probes notice a peer that vanished without a
  // FIN (client-go's dialer uses 30 s keepalive too).
  set(CURLOPT_TCP_KEEPALIVE, 1L);
  set(CURLOPT_TCP_KEEPIDLE, 30L);
  set(CURLOPT_TCP_KEEPINTVL, 10L);
  if (options_.compression) set(CURLOPT_ACCEPT_ENCODING, "gzip");
  // TLS: verification is on unless the kubeconfig said otherwise.
  set(CURLOPT_SSL_VERIFYPEER, conn_.insecure_skip_tls_verify ? 0L : 1L);
  set(CURLOPT_SSL_VERIFYHOST, conn_.insecure_skip_tls_verify ? 0L : 2L);
  if (!conn_.ca_file.empty()) set(CURLOPT_CAINFO, conn_.ca_file.c_str());
  if (!conn_.ca_pem.empty()) {
    curl_blob b{const_cast<char*>(conn_.ca_pem.data()), conn_.ca_pem.size(), CURL_BLOB_COPY};
    set(CURLOPT_CAINFO_BLOB, &b);
  }
  if (!conn_.client_cert_file.empty()) set(CURLOPT_SSLCERT, conn_.client_cert_file.c_str());
  if (!conn_.client_cert_pem.empty()) {
    curl_blob b{const_cast<char*>(conn_.client_cert_pem.data()), conn_.client_cert_pem.size(),
                CURL_BLOB_COPY};
    set(CURLOPT_SSLCERT_BLOB, &b);
  }
  if (!conn_.client_key_file.empty()) set(CURLOPT_SSLKEY, conn_.client_key_file.c_str());
  if (!conn_.client_key_pem.empty()) {
    curl_blob b{const_cast<char*>(conn_.client_key_pem.data()), conn_.client_key_pem.size(),
                CURL_BLOB_COPY};
    set(CURLOPT_SSLKEY_BLOB, &b);
  }
  if (!ok) return fail(errc::internal, "libcurl refused an option", where_of(req));
  // HTTP/2 where libcurl has it; without nghttp2 the option is refused and HTTP/1.1 it is.
  // Said explicitly both ways: libcurl >= 7.62 already defaults to 2TLS.
  (void)curl_easy_setopt(e, CURLOPT_HTTP_VERSION,
                         options_.http2 ? CURL_HTTP_VERSION_2TLS : CURL_HTTP_VERSION_1_1);

  if (h_->headers != nullptr) {
    curl_slist_free_all(h_->headers);
    h_->headers = nullptr;
  }
  refresh_token();
  std::string auth = conn_.token.empty() ? std::string{} : "Authorization: Bearer " + conn_.token;
  std::string ctype =
      req.content_type.empty() ? std::string{} : "Content-Type: " + std::string(req.content_type);
  for (const std::string& line :
       {std::string("Accept: application/json"), auth, ctype, std::string("Expect:")}) {
    if (line.empty()) continue;
    curl_slist* n = curl_slist_append(h_->headers, line.c_str());
    if (n == nullptr) return fail(errc::internal, "out of memory", where_of(req));
    h_->headers = n;
  }
  set(CURLOPT_HTTPHEADER, h_->headers);

  if (req.method == "GET") {
    set(CURLOPT_HTTPGET, 1L);
  } else {
    const std::string method(req.method);
    set(CURLOPT_CUSTOMREQUEST, method.c_str());  // libcurl copies the string
    if (!req.body.empty() || req.method != "DELETE") {
      set(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
      set(CURLOPT_POSTFIELDS, req.body.data());
    }
  }
  set(CURLOPT_WRITEFUNCTION, &on_write);
  if (!ok) return fail(errc::internal, "libcurl refused an option", where_of(req));
  return {};
}

result<transfer> curl_session::perform(const request& req, const data_sink& sink) {
  transfer out;
  if (interrupted_.load()) {
    out.interrupted = true;
    return out;
  }
  if (auto r = configure(req); !r) return tl::make_unexpected(r.error());
  write_context ctx{&sink, &out, h_->easy};
  curl_easy_setopt(h_->easy, CURLOPT_WRITEDATA, &ctx);
  if (curl_multi_add_handle(h_->multi, h_->easy) != CURLM_OK)
    return fail(errc::internal, "curl_multi_add_handle failed", where_of(req));

  CURLcode code = CURLE_OK;
  bool done = false;
  while (!done) {
    if (interrupted_.load()) {
      out.interrupted = true;
      break;
    }
    int running = 0;
    if (CURLMcode mc = curl_multi_perform(h_->multi, &running); mc != CURLM_OK) {
      curl_multi_remove_handle(h_->multi, h_->easy);
      return fail(errc::internal, std::string("curl_multi_perform: ") + curl_multi_strerror(mc),
                  where_of(req));
    }
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(h_->multi, &left)) {
      if (m->msg == CURLMSG_DONE && m->easy_handle == h_->easy) {
        code = m->data.result;
        done = true;
      }
    }
    if (done || running == 0) break;
    // Wakes on socket activity, libcurl's own timers, or interrupt()'s curl_multi_wakeup.
    curl_multi_poll(h_->multi, nullptr, 0, 1000, nullptr);
  }
  curl_multi_remove_handle(h_->multi, h_->easy);
  if (out.interrupted) return out;

  long version = 0;
  curl_easy_getinfo(h_->easy, CURLINFO_HTTP_VERSION, &version);
  out.http_version = version == CURL_HTTP_VERSION_2_0   ? 2
                     : version == CURL_HTTP_VERSION_1_1 ? 11
                                                        : 0;
  if (code == CURLE_WRITE_ERROR && out.aborted_by_sink) {
    curl_easy_getinfo(h_->easy, CURLINFO_RESPONSE_CODE, &out.status);
    return out;
  }
  if (code != CURLE_OK) {
    std::string msg = curl_easy_strerror(code);
    if (h_->errbuf[0] != '\0') {
      msg += ": ";
      msg += h_->errbuf.data();
    }
    return fail(transport_code(code), std::move(msg), where_of(req));
  }
  curl_easy_getinfo(h_->easy, CURLINFO_RESPONSE_CODE, &out.status);
  curl_off_t retry = -1;
  if (curl_easy_getinfo(h_->easy, CURLINFO_RETRY_AFTER, &retry) == CURLE_OK && retry > 0)
    out.retry_after = std::chrono::seconds(retry);
  return out;
}

std::string join_url(const connection& c, std::string_view path_and_query) {
  std::string url = c.server;
  if (path_and_query.empty() || path_and_query.front() != '/') url += '/';
  url += path_and_query;
  return url;
}

std::string query_escape(std::string_view value) {
  static constexpr char hex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(value.size());
  for (const char ch : value) {
    const auto u = static_cast<unsigned char>(ch);
    if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '-' ||
        u == '_' || u == '.' || u == '~') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[u >> 4]);
      out.push_back(hex[u & 0xF]);
    }
  }
  return out;
}

}  // namespace colony::kube::detail
