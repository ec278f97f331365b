// colony run --metrics-addr against a real kube-apiserver + etcd (tools/peers/kube.sh):
// /healthz, /readyz going 503 -> 200 once the informers sync, and /metrics read by the
// Prometheus project's own text parser (Python prometheus_client, Debian
// python3-prometheus-client) after a few pods are bound; /readyz 503 while the API server is
// down, 200 again once it is back.
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <httplib.h>

#include "run/cluster_run.hpp"
#include "tests/run/colony_run_test.hpp"

namespace colony::run {
namespace {

class ColonyRunMetrics : public colony::run::testing::colony_run_test {};

TEST_F(ColonyRunMetrics, ServesProbesAndMetricsThePrometheusParserReads) {
  if (std::system("PYENV_VERSION=system python3 -c 'import prometheus_client' 2>/dev/null") != 0)
    GTEST_SKIP() << "python3-prometheus-client is not installed (tools/setup.sh)";
  for (int i = 0; i < 2; ++i) make_node("n" + std::to_string(i));
  constexpr int pods = 5;

  std::atomic<bool> stop{false};
  std::promise<std::uint16_t> port_p;
  std::promise<void> looked;  // the test has seen /readyz answer 503
  auto looked_f = looked.get_future();
  run_options o;
  o.kubeconfig = kubeconfig_;
  o.log_path = log_;
  o.metrics_addr = "127.0.0.1:0";
  // The run waits here until the test has asked /readyz once: the log is not even open yet, so
  // the answer must be 503 whatever the machine's speed.
  o.on_metrics_listening = [&](std::uint16_t port) {
    port_p.set_value(port);
    looked_f.wait();
  };
  o.stop = [&] { return stop.load(); };
  o.api_unreachable_after = std::chrono::seconds(3);
  result<run_stats> out = fail(errc::internal, "not run");
  std::thread t([&] { out = run_cluster(o); });
  struct joiner {
    std::thread& t;
    std::atomic<bool>& stop;
    ~joiner() {
      stop = true;
      if (t.joinable()) t.join();
    }
  } join{t, stop};

  const auto port = port_p.get_future().get();
  httplib::Client c("127.0.0.1", port);
  {
    auto h = c.Get("/healthz");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);
    EXPECT_EQ(h->body, "ok");
    auto r = c.Get("/readyz");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);
    EXPECT_NE(r->body.find("event log"), std::string::npos) << r->body;
  }
  looked.set_value();
  const auto t0 = std::chrono::steady_clock::now();
  int status = 0;
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60)) {
    auto r = c.Get("/readyz");
    if (r && (status = r->status) == 200) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_EQ(status, 200) << "not ready within 60 s";

  for (int i = 0; i < pods; ++i) make_pod("p" + std::to_string(i));
  while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(120) && !all_bound())
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(all_bound());
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));  // the bindings' own records

  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->status, 200);
  EXPECT_EQ(m->get_header_value("Content-Type"), "text/plain; version=0.0.4; charset=utf-8");
  const std::string text = work_ + "/metrics.txt", script = work_ + "/check.py";
  std::ofstream(text) << m->body;
  std::ofstream(script)
      << "import sys\n"
         "from prometheus_client.parser import text_string_to_metric_families\n"
         "pods = int(sys.argv[2])\n"
         "fs = {f.name: f for f in text_string_to_metric_families(open(sys.argv[1]).read())}\n"
         "def val(family, sample, **labels):\n"
         "    for s in fs[family].samples:\n"
         "        if s.name == sample and all(s.labels.get(k) == v for k, v in labels.items()):\n"
         "            return s.value\n"
         "    raise KeyError((family, sample, labels))\n"
         "a = 'scheduler_schedule_attempts'\n"
         "assert fs[a].type == 'counter'\n"
         "ks = dict(result='scheduled', profile='koord-scheduler')\n"
         "assert val(a, a + '_total', **ks) == pods, val(a, a + '_total', **ks)\n"
         "d = 'scheduler_scheduling_attempt_duration_seconds'\n"
         "assert fs[d].type == 'histogram'\n"
         "assert val(d, d + '_count', **ks) == pods\n"
         "assert val(d, d + '_bucket', le='+Inf', **ks) == pods\n"
         "assert val(d, d + '_bucket', le='0.001', **ks) <= val(d, d + '_bucket', le='16.384', "
         "**ks)\n"
         "assert val(d, d + '_sum', **ks) > 0\n"
         "assert val(a, a + '_total', result='unschedulable', profile='koord-scheduler') == 0\n"
         "p = 'scheduler_pending_pods'\n"
         "assert fs[p].type == 'gauge'\n"
         "for q in ('active', 'backoff', 'unschedulable'):\n"
         "    assert val(p, p, queue=q) == 0, (q, val(p, p, queue=q))\n"
         "w = 'colony_api_writes'\n"
         "assert val(w, w + '_total', kind='binding', result='written') == pods\n"
         "l = 'colony_log_append_duration_seconds'\n"
         "assert fs[l].type == 'histogram'\n"
         "assert val(l, l + '_count') == val('colony_log_appends', 'colony_log_appends_total')\n"
         "assert val('colony_log_records', 'colony_log_records_total') == "
         "val('colony_log_next_offset', 'colony_log_next_offset')\n"
         "for n in ('colony_source_watch_reconnects', 'colony_source_relists', "
         "'colony_source_gone_410'):\n"
         "    assert fs[n].type == 'counter' and val(n, n + '_total') >= 0\n"
         "assert val('colony_run_decisions', 'colony_run_decisions_total') >= 3 * pods\n"
         // The framework's timings: one cycle per pod, every point of a scheduled cycle.
         "x = 'scheduler_framework_extension_point_duration_seconds'\n"
         "assert fs[x].type == 'histogram'\n"
         "for ep in ('PreFilter', 'Score', 'Reserve', 'Permit'):\n"
         "    ls = dict(extension_point=ep, status='Success', profile='koord-scheduler')\n"
         "    assert val(x, x + '_count', **ls) == pods, (ep, val(x, x + '_count', **ls))\n"
         "    assert val(x, x + '_sum', **ls) > 0, ep\n"
         "assert fs['scheduler_plugin_execution_duration_seconds'].type == 'histogram'\n"
         // Koordinator's node counts and kube's attempts, from the logged proposals.
         "for n in ('scheduler_pod_scheduling_evaluated_nodes', "
         "'scheduler_pod_scheduling_feasible_nodes'):\n"
         "    assert val(n, n + '_count') == pods and val(n, n + '_sum') >= pods, n\n"
         "t = 'scheduler_pod_scheduling_attempts'\n"
         "assert val(t, t + '_count') == pods and val(t, t + '_bucket', le='1') == pods\n";
  EXPECT_EQ(std::system(
                ("PYENV_VERSION=system python3 " + script + " " + text + " " + std::to_string(pods))
                    .c_str()),
            0)
      << m->body;

  // The API server gone: /readyz says so once it has not answered for api_unreachable_after,
  // /healthz stays 200 (the loops are alive); back to ready once it answers again.
  ASSERT_TRUE(peer_->kill_apiserver());
  auto wait_readyz = [&](int want, std::chrono::seconds limit) {
    const auto t1 = std::chrono::steady_clock::now();
    std::string body;
    while (std::chrono::steady_clock::now() - t1 < limit) {
      auto r = c.Get("/readyz");
      if (r && r->status == want) return r->body;
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return std::string("(no ") + std::to_string(want) + ")";
  };
  const auto down = wait_readyz(503, std::chrono::seconds(30));
  EXPECT_NE(down.find("API server has not answered"), std::string::npos) << down;
  {
    auto h = c.Get("/healthz");
    ASSERT_TRUE(h);
    EXPECT_EQ(h->status, 200);
  }
  ASSERT_TRUE(peer_->restart_apiserver());
  EXPECT_EQ(wait_readyz(200, std::chrono::seconds(60)), "ok");

  stop = true;
  t.join();
  ASSERT_TRUE(out) << out.error().describe();
  EXPECT_GE(out->writes, static_cast<std::uint64_t>(pods));
  // The server stopped with the run.
  EXPECT_FALSE(httplib::Client("127.0.0.1", port).Get("/healthz"));
}

}  // namespace
}  // namespace colony::run
