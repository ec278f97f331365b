// The process the SIGKILL test kills: run::run_cluster over KUBECONFIG and LOG until SIGTERM
// (what `colony run` does, without linking the whole CLI). Prints the summary on a clean stop.
#include <atomic>
#include <csignal>
#include <cstdio>

#include "run/cluster_run.hpp"

namespace {
std::atomic<bool> stop{false};
extern "C" void on_term(int) { stop = true; }
}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s KUBECONFIG LOG\n", argv[0]);
    return 2;
  }
  std::signal(SIGTERM, on_term);
  colony::run::run_options o;
  o.kubeconfig = argv[1];
  o.log_path = argv[2];
  o.stop = [] { return stop.load(); };
  auto r = colony::run::run_cluster(o);
  if (!r) {
    std::fprintf(stderr, "run_child: %s\n", r.error().describe().c_str());
    return 1;
  }
  std::printf(
      "replayed %llu recovered %llu carried_over %llu writes %llu failures %llu\n",
      static_cast<unsigned long long>(r->replayed), static_cast<unsigned long long>(r->recovered),
      static_cast<unsigned long long>(r->carried_over), static_cast<unsigned long long>(r->writes),
      static_cast<unsigned long long>(r->write_failures));
  return 0;
}
