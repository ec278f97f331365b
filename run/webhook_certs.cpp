#include "run/webhook_certs.hpp"

#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include <arpa/inet.h>
#include <openssl/bn.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

namespace colony::run {

namespace {

template <auto F>
struct deleter {
  template <class T>
  void operator()(T* p) const {
    F(p);
  }
};
using pkey_ptr = std::unique_ptr<EVP_PKEY, deleter<EVP_PKEY_free>>;
using x509_ptr = std::unique_ptr<X509, deleter<X509_free>>;
using bio_ptr = std::unique_ptr<BIO, deleter<BIO_free_all>>;

tl::unexpected<error> ssl_failed(std::string what) {
  return fail(errc::internal, "OpenSSL: " + what, "webhook certificate");
}

bool is_ip(const std::string& h) {
  unsigned char buf[16];
  return inet_pton(AF_INET, h.c_str(), buf) == 1 || inet_pton(AF_INET6, h.c_str(), buf) == 1;
}

bool add_ext(X509* cert, X509* issuer, int nid, const std::string& value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value.c_str());
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named `cn`, signed by (issuer, issuer_key), or self-signed when
// issuer is null. `exts`: (nid, value) in the order added.
result<x509_ptr> make_cert(EVP_PKEY* key, const std::string& cn, X509* issuer, EVP_PKEY* issuer_key,
                           const std::vector<std::pair<int, std::string>>& exts) {
  x509_ptr x(X509_new());
  if (!x) return ssl_failed("X509_new");
  X509_set_version(x.get(), 2);
  // A random 64-bit serial: two generated CAs must not share one (RFC 5280 4.1.2.2).
  unsigned char serial[8];
  if (RAND_bytes(serial, sizeof serial) != 1) return ssl_failed("RAND_bytes");
  serial[0] &= 0x7f;
  std::unique_ptr<BIGNUM, deleter<BN_free>> bn(BN_bin2bn(serial, sizeof serial, nullptr));
  if (!bn || BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(x.get())) == nullptr)
    return ssl_failed("serial");
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 10L * 365 * 24 * 3600);
  if (X509_set_pubkey(x.get(), key) != 1) return ssl_failed("X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(x.get());
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(x.get(), issuer != nullptr ? X509_get_subject_name(issuer) : name);
  for (const auto& [nid, value] : exts)
    if (!add_ext(x.get(), issuer != nullptr ? issuer : x.get(), nid, value))
      return ssl_failed("extension " + value);
  if (X509_sign(x.get(), issuer_key != nullptr ? issuer_key : key, EVP_sha256()) == 0)
    return ssl_failed("X509_sign");
  return x;
}

std::string bio_string(BIO* b) {
  char* data = nullptr;
  const long n = BIO_get_mem_data(b, &data);
  return std::string(data, static_cast<std::size_t>(n));
}

result<std::string> cert_pem(X509* x) {
  bio_ptr b(BIO_new(BIO_s_mem()));
  if (!b || PEM_write_bio_X509(b.get(), x) != 1) return ssl_failed("PEM_write_bio_X509");
  return bio_string(b.get());
}

result<std::string> key_pem(EVP_PKEY* k) {
  bio_ptr b(BIO_new(BIO_s_mem()));
  if (!b || PEM_write_bio_PrivateKey(b.get(), k, nullptr, nullptr, 0, nullptr, nullptr) != 1)
    return ssl_failed("PEM_write_bio_PrivateKey");
  return bio_string(b.get());
}

result<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return fail(errc::unavailable, "cannot read", path);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

result<void> write_file(const std::string& path, const std::string& data, bool secret) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return fail(errc::unavailable, "cannot write", tmp);
    out << data;
    if (!out) return fail(errc::unavailable, "cannot write", tmp);
  }
  std::error_code ec;
  if (secret)
    std::filesystem::permissions(
        tmp, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
        std::filesystem::perm_options::replace, ec);
  std::filesystem::rename(tmp, path, ec);
  if (ec) return fail(errc::unavailable, "cannot rename: " + ec.message(), path);
  return {};
}

}  // namespace

result<webhook_tls> generate_webhook_tls(const std::vector<std::string>& hosts) {
  if (hosts.empty())
    return fail(errc::invalid_input, "a serving certificate needs at least one host",
                "--webhook-addr");
  pkey_ptr ca_key(EVP_EC_gen("P-256"));
  pkey_ptr key(EVP_EC_gen("P-256"));
  if (!ca_key || !key) return ssl_failed("EVP_EC_gen(P-256)");
  auto ca = make_cert(ca_key.get(), "colony-webhook-ca", nullptr, nullptr,
                      {{NID_basic_constraints, "critical,CA:TRUE"},
                       {NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature"},
                       {NID_subject_key_identifier, "hash"}});
  if (!ca) return tl::unexpected(ca.error());
  std::string sans;
  for (const auto& h : hosts) {
    if (!sans.empty()) sans += ",";
    sans += (is_ip(h) ? "IP:" : "DNS:") + h;
  }
  auto leaf = make_cert(key.get(), hosts.front(), ca->get(), ca_key.get(),
                        {{NID_basic_constraints, "critical,CA:FALSE"},
                         {NID_key_usage, "critical,digitalSignature,keyEncipherment"},
                         {NID_ext_key_usage, "serverAuth"},
                         {NID_subject_alt_name, sans},
                         {NID_authority_key_identifier, "keyid:always"}});
  if (!leaf) return tl::unexpected(leaf.error());
  webhook_tls t;
  auto c1 = cert_pem(ca->get());
  auto c2 = cert_pem(leaf->get());
  auto k = key_pem(key.get());
  if (!c1) return tl::unexpected(c1.error());
  if (!c2) return tl::unexpected(c2.error());
  if (!k) return tl::unexpected(k.error());
  t.ca_pem = std::move(*c1);
  t.cert_pem = std::move(*c2);
  t.key_pem = std::move(*k);
  return t;
}

result<webhook_tls> ensure_webhook_tls(const std::string& dir,
                                       const std::vector<std::string>& hosts) {
  namespace fs = std::filesystem;
  const std::string ca = dir + "/ca.crt", crt = dir + "/tls.crt", key = dir + "/tls.key";
  std::error_code ec;
  const int present = static_cast<int>(fs::exists(ca, ec)) + static_cast<int>(fs::exists(crt, ec)) +
                      static_cast<int>(fs::exists(key, ec));
  if (present == 3) {
    webhook_tls t;
    t.dir = dir;
    auto a = read_file(ca);
    auto b = read_file(crt);
    auto c = read_file(key);
    if (!a) return tl::unexpected(a.error());
    if (!b) return tl::unexpected(b.error());
    if (!c) return tl::unexpected(c.error());
    t.ca_pem = std::move(*a);
    t.cert_pem = std::move(*b);
    t.key_pem = std::move(*c);
    return t;
  }
  if (present != 0)
    return fail(errc::invalid_input,
                "holds only some of ca.crt, tls.crt, tls.key: give all three, or none to have "
                "colony run generate them",
                dir);
  auto t = generate_webhook_tls(hosts);
  if (!t) return t;
  fs::create_directories(dir, ec);
  if (ec) return fail(errc::unavailable, "cannot create: " + ec.message(), dir);
  // The key first and the CA last: a crash in between leaves "some of the files", refused above
  // rather than silently paired with another key.
  if (auto w = write_file(key, t->key_pem, true); !w) return tl::unexpected(w.error());
  if (auto w = write_file(crt, t->cert_pem, false); !w) return tl::unexpected(w.error());
  if (auto w = write_file(ca, t->ca_pem, false); !w) return tl::unexpected(w.error());
  t->dir = dir;
  return t;
}

}  // namespace colony::run
