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
  const auto u = [](std::uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf(
      "replayed %llu recovered %llu carried_over %llu writes %llu failures %llu reconnects %llu "
      "gone %llu relists %llu\n",
      u(r->replayed), u(r->recovered), u(r->carried_over), u(r->writes), u(r->write_failures),
      u(r->reconnects), u(r->gone), u(r->relists));
  return 0;
}
