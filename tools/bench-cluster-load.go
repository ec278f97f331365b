// tools/bench-cluster-load.go — the load generator of tools/bench-cluster.sh (Go standard
// library only; built by that script with `go build`).
//
//	bench-cluster-load nodes -n N [-c C] [-prefix P]
//	    creates N nodes shaped like scheduler_perf's templates/node-default.yaml
//	    (capacity cpu 4, memory 32Gi, pods 110, Ready) named P0..P(N-1)
//	bench-cluster-load pods -ns NS -n M [-c C] [-prefix P] [-timeout S]
//	    opens a watch on the namespace's pods, then creates M pods shaped like
//	    templates/pod-default.yaml (requests = limits cpu 100m, memory 500Mi) with
//	    spec.schedulerName koord-scheduler, from C concurrent workers, and waits until every
//	    one has spec.nodeName in the watch. Per pod: t_sent (client clock just before the
//	    POST), t_acked (POST answered 201), t_bound (first watch event with spec.nodeName).
//	    Prints one JSON object: counts, throughput (pods / (last bound - first sent)), creation
//	    rate, percentiles of bound - sent, and the creator's own CPU seconds.
//
// The apiserver comes from the environment as tools/peers/kube.sh env writes it: KUBE_API,
// KUBE_CA, KUBE_TOKEN. Only 127.0.0.1 is expected.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

var (
	api   = os.Getenv("KUBE_API")
	token = os.Getenv("KUBE_TOKEN")
)

func die(f string, a ...any) {
	fmt.Fprintf(os.Stderr, "bench-cluster-load: "+f+"\n", a...)
	os.Exit(1)
}

// One transport per group of workers: several HTTP/2 connections, so one connection's
// stream limit or flow control does not become the bottleneck.
func newClient() *http.Client {
	pem, err := os.ReadFile(os.Getenv("KUBE_CA"))
	if err != nil {
		die("KUBE_CA: %v", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		die("KUBE_CA: no certificate")
	}
	tr := &http.Transport{
		TLSClientConfig:     &tls.Config{RootCAs: pool},
		ForceAttemptHTTP2:   true,
		MaxIdleConnsPerHost: 64,
	}
	return &http.Client{Transport: tr}
}

func do(c *http.Client, method, path string, body []byte) (int, []byte, error) {
	req, err := http.NewRequest(method, api+path, bytes.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, b, err
}

// create POSTs body to path, retrying 429/5xx and transport errors (counted).
func create(c *http.Client, path string, body []byte, retries *atomic.Int64) {
	for attempt := 0; ; attempt++ {
		code, b, err := do(c, "POST", path, body)
		if err == nil && (code == 201 || code == 409) {
			return
		}
		if attempt > 50 || (err == nil && code < 429) {
			die("POST %s: %d %v %s", path, code, err, string(b))
		}
		retries.Add(1)
		time.Sleep(time.Duration(10*(attempt+1)) * time.Millisecond)
	}
}

func clients(workers int) []*http.Client {
	n := (workers + 7) / 8
	cs := make([]*http.Client, n)
	for i := range cs {
		cs[i] = newClient()
	}
	return cs
}

// fanOut runs fn(client, i) for i in [0, n) on `workers` goroutines
// and returns when all are done; the goroutines share clients(workers) round robin.
func fanOut(workers, n int, fn func(c *http.Client, i int)) {
	cs := clients(workers)
	var next atomic.Int64
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(c *http.Client) {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(c, i)
			}
		}(cs[w%len(cs)])
	}
	wg.Wait()
}

func cpuSeconds() float64 {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

func runNodes(args []string) {
	fs := flag.NewFlagSet("nodes", flag.ExitOnError)
	n := fs.Int("n", 100, "nodes")
	workers := fs.Int("c", 16, "concurrent creators")
	prefix := fs.String("prefix", "scheduler-perf-", "node name prefix")
	_ = fs.Parse(args)
	var retries atomic.Int64
	t0 := time.Now()
	fanOut(*workers, *n, func(c *http.Client, i int) {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"%s%d",`+
			`"labels":{"kubernetes.io/hostname":"%s%d"}},"spec":{},"status":{"capacity":`+
			`{"pods":"110","cpu":"4","memory":"32Gi"},"conditions":[{"status":"True",`+
			`"type":"Ready"}],"phase":"Running"}}`, *prefix, i, *prefix, i)
		create(c, "/api/v1/nodes", []byte(body), &retries)
	})
	el := time.Since(t0).Seconds()
	fmt.Printf(`{"nodes":%d,"seconds":%.3f,"per_second":%.1f,"retries":%d}`+"\n",
		*n, el, float64(*n)/el, retries.Load())
}

type watchEvent struct {
	Type   string `json:"type"`
	Object struct {
		Metadata struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Spec struct {
			NodeName string `json:"nodeName"`
		} `json:"spec"`
	} `json:"object"`
}

func runPods(args []string) {
	fs := flag.NewFlagSet("pods", flag.ExitOnError)
	ns := fs.String("ns", "bench", "namespace")
	n := fs.Int("n", 100, "pods")
	workers := fs.Int("c", 16, "concurrent creators")
	prefix := fs.String("prefix", "pod-", "pod name prefix")
	timeout := fs.Int("timeout", 600, "seconds to wait for every binding")
	_ = fs.Parse(args)
	wc := newClient()

	// Watch from the namespace's current resourceVersion, opened before the first create.
	code, b, err := do(wc, "GET", "/api/v1/namespaces/"+*ns+"/pods?limit=1", nil)
	if err != nil || code != 200 {
		die("list pods: %d %v %s", code, err, string(b))
	}
	var list struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(b, &list); err != nil {
		die("list pods: %v", err)
	}
	index := make(map[string]int, *n)
	for i := 0; i < *n; i++ {
		index[fmt.Sprintf("%s%d", *prefix, i)] = i
	}
	sent := make([]int64, *n)
	acked := make([]int64, *n)
	bound := make([]int64, *n)
	var nbound atomic.Int64
	done := make(chan struct{})
	watchErr := make(chan error, 1)
	go func() {
		rv := list.Metadata.ResourceVersion
		for {
			req, _ := http.NewRequest("GET", api+"/api/v1/namespaces/"+*ns+
				"/pods?watch=1&allowWatchBookmarks=true&resourceVersion="+rv, nil)
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Accept", "application/json")
			resp, err := wc.Do(req)
			if err != nil {
				watchErr <- err
				return
			}
			dec := json.NewDecoder(resp.Body)
			for {
				var ev watchEvent
				if err := dec.Decode(&ev); err != nil {
					break // server closed the watch (timeout): reopen from the last RV
				}
				if ev.Type == "ERROR" {
					resp.Body.Close()
					watchErr <- fmt.Errorf("watch ERROR event (resourceVersion %s too old?)", rv)
					return
				}
				if ev.Object.Metadata.ResourceVersion != "" {
					rv = ev.Object.Metadata.ResourceVersion
				}
				if ev.Type == "BOOKMARK" || ev.Object.Spec.NodeName == "" {
					continue
				}
				i, ok := index[ev.Object.Metadata.Name]
				if !ok || bound[i] != 0 {
					continue
				}
				bound[i] = time.Now().UnixNano()
				if nbound.Add(1) == int64(*n) {
					resp.Body.Close()
					close(done)
					return
				}
			}
			resp.Body.Close()
		}
	}()

	var retries atomic.Int64
	cpu0 := cpuSeconds()
	fanOut(*workers, *n, func(c *http.Client, i int) {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"%s%d"},`+
			`"spec":{"schedulerName":"koord-scheduler","containers":[{"name":"pause",`+
			`"image":"registry.k8s.io/pause:3.10.1","ports":[{"containerPort":80}],`+
			`"resources":{"limits":{"cpu":"100m","memory":"500Mi"},"requests":`+
			`{"cpu":"100m","memory":"500Mi"}}}]}}`, *prefix, i)
		sent[i] = time.Now().UnixNano()
		create(c, "/api/v1/namespaces/"+*ns+"/pods", []byte(body), &retries)
		acked[i] = time.Now().UnixNano()
	})
	created := time.Now().UnixNano()
	select {
	case <-done:
	case err := <-watchErr:
		die("watch: %v", err)
	case <-time.After(time.Duration(*timeout) * time.Second):
		die("only %d of %d pods bound after %d s", nbound.Load(), *n, *timeout)
	}
	cpu := cpuSeconds() - cpu0

	first, lastAck, lastBound := sent[0], acked[0], bound[0]
	lat := make([]float64, *n)
	latAck := make([]float64, *n)
	for i := 0; i < *n; i++ {
		first = min(first, sent[i])
		lastAck = max(lastAck, acked[i])
		lastBound = max(lastBound, bound[i])
		lat[i] = float64(bound[i]-sent[i]) / 1e6
		latAck[i] = float64(bound[i]-acked[i]) / 1e6
	}
	_ = created
	sort.Float64s(lat)
	sort.Float64s(latAck)
	pct := func(v []float64, p float64) float64 { return v[min(len(v)-1, int(p*float64(len(v))))] }
	span := float64(lastBound-first) / 1e9
	cspan := float64(lastAck-first) / 1e9
	out := map[string]any{
		"pods":                   *n,
		"workers":                *workers,
		"create_seconds":         round(cspan),
		"create_per_second":      round(float64(*n) / cspan),
		"end_to_end_seconds":     round(span),
		"end_to_end_per_second":  round(float64(*n) / span),
		"bound_after_last_ack_s": round(float64(lastBound-lastAck) / 1e9),
		"latency_ms_p50":         round(pct(lat, 0.50)),
		"latency_ms_p90":         round(pct(lat, 0.90)),
		"latency_ms_p99":         round(pct(lat, 0.99)),
		"latency_ms_max":         round(lat[len(lat)-1]),
		"ack_to_bound_ms_p50":    round(pct(latAck, 0.50)),
		"ack_to_bound_ms_p99":    round(pct(latAck, 0.99)),
		"create_retries":         retries.Load(),
		"creator_cpu_seconds":    round(cpu),
		"first_sent_unix_ns":     first,
		"last_bound_unix_ns":     lastBound,
	}
	j, _ := json.Marshal(out)
	fmt.Println(string(j))
}

func round(f float64) float64 { return float64(int64(f*100+0.5)) / 100 }

func main() {
	if api == "" || token == "" {
		die("KUBE_API, KUBE_CA and KUBE_TOKEN must be set (tools/peers/kube.sh env)")
	}
	if len(os.Args) < 2 {
		die("usage: bench-cluster-load nodes|pods [flags]")
	}
	switch os.Args[1] {
	case "nodes":
		runNodes(os.Args[2:])
	case "pods":
		runPods(os.Args[2:])
	default:
		die("unknown mode %q", os.Args[1])
	}
}
