// Test helper for source_kube_test.cpp's crash test: runs an observation_source over a log until
// killed (SIGKILL at random points is the test's fault). Usage: KUBECONFIG LOG_DIR CHECKPOINT.
#include <chrono>
#include <cstdio>
#include <thread>

#include "bridges/kubernetes/source.hpp"
#include "stores/rocksdb_log.hpp"

int main(int argc, char** argv) {
  using namespace colony;
  if (argc != 4) {
    std::fprintf(stderr, "usage: %s KUBECONFIG LOG_DIR CHECKPOINT\n", argv[0]);
    return 2;
  }
  auto conn = kube::load_kubeconfig(argv[1]);
  if (!conn) {
    std::fprintf(stderr, "%s\n", conn.error().describe().c_str());
    return 1;
  }
  auto log = stores::rocksdb_log::open(argv[2], stores::log_options{});
  if (!log) {
    std::fprintf(stderr, "%s\n", log.error().describe().c_str());
    return 1;
  }
  kube::source_options o;
  o.checkpoint_path = argv[3];
  o.informer.backoff_initial = std::chrono::milliseconds(100);
  o.informer.backoff_max = std::chrono::milliseconds(1000);
  auto src = kube::observation_source::open(*conn, **log, o);
  if (!src) {
    std::fprintf(stderr, "%s\n", src.error().describe().c_str());
    return 1;
  }
  if (auto r = (*src)->start(); !r) {
    std::fprintf(stderr, "%s\n", r.error().describe().c_str());
    return 1;
  }
  for (;;) {
    if (auto f = (*src)->failure()) {
      std::fprintf(stderr, "%s\n", f->describe().c_str());
      return 1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}
