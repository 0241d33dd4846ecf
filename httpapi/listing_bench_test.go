package httpapi_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/internal/testutil"
)

// BenchmarkNamespaceListing measures what a user waits for when listing a
// namespace of 1,000 functions (each with two environment variables, one in
// four with an HTTP trigger, one in twenty with a cron trigger) through
// GET /v1/namespaces/{ns}/functions, in its two formats:
//
//   - json: Accept: application/json, the API's answer;
//   - text: Accept: text/plain, the human listing of SPEC §7 (as /funcs/{ns}
//     and curl's /console/{ns} render it), which reads the triggers too.
//
// One request at a time over a keep-alive connection with a JWT, the formats
// alternating, 300 of each after 10 to warm up; it reports for each format
// p50 and p99 (the target is p99 ≤ 20 ms; nothing to compare with in the
// same run), the size of the answer, the CPU time per request of this
// process (client and API server) and of the PostgreSQL backends, and the
// statements per request (sqlCounter). With -short (the smoke run): 20 functions, 20
// requests of each format.
//
//	go test ./httpapi -run '^$' -bench NamespaceListing -benchtime 1x -v
func BenchmarkNamespaceListing(b *testing.B) {
	if b.N > 1 { // one measured run per process, whatever b.N is
		b.ReportMetric(0, "ns/op")
		return
	}
	functions, requests := 1000, 300
	if testing.Short() {
		functions, requests = 20, 20
	}
	const warmup = 10
	sql := &sqlCounter{}
	f := setupCounted(b, sql)
	c := f.tenant()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	call := func(method, path, accept string, body []byte, want int) ([]byte, error) {
		req, _ := http.NewRequest(method, f.url+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.token)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		res, err := client.Do(req)
		if err != nil {
			return nil, err
		}
		defer res.Body.Close()
		data, err := io.ReadAll(res.Body)
		if err == nil && res.StatusCode != want {
			err = fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, data)
		}
		return data, err
	}

	// The namespace, filled by 8 clients at once.
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < functions; i += 8 {
				name := fmt.Sprintf("fn-%04d", i)
				_, err := call("POST", c.p("/functions"), "", fmt.Appendf(nil,
					`{"name":%q,"runtime":"python3.11","env_vars":{"LOG_LEVEL":"info","REGION":"eu-west-%d"}}`, name, i%3), 201)
				if err == nil && i%4 == 0 {
					_, err = call("POST", c.p("/triggers"), "", fmt.Appendf(nil, `{"name":"%s-http","type":"http","function":%q}`, name, name), 201)
				}
				if err == nil && i%20 == 1 {
					_, err = call("POST", c.p("/triggers"), "", fmt.Appendf(nil,
						`{"name":"%s-cron","type":"cron","function":%q,"schedule":"*/5 * * * *"}`, name, name), 201)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.Logf("%d functions created in %v", functions, time.Since(start).Round(time.Millisecond))

	formats := []struct{ name, accept, contentType string }{
		{"json", "application/json", "application/json"},
		{"text", "text/plain", "text/plain; charset=UTF-8"},
	}
	times := map[string][]time.Duration{}
	size := map[string]int{}
	goCPU, pgTicks := map[string]time.Duration{}, map[string]int64{}
	sqlBefore := map[string]sqlSnapshot{}
	sqlAfter := map[string]sqlSnapshot{}
	pg := backends(b, f)
	for i := range warmup + requests {
		for _, ft := range formats {
			// Each request's CPU time, added up per format: this process's
			// from getrusage (µs), PostgreSQL's in ticks, which add up to
			// a fair mean over many requests.
			sqlBefore[ft.name] = sql.snapshot()
			goBefore, pgBefore := processCPU(b), testutil.CPUTicks(pg)
			t0 := time.Now()
			req, _ := http.NewRequest("GET", f.url+c.p("/functions"), nil)
			req.Header.Set("Authorization", "Bearer "+c.token)
			req.Header.Set("Accept", ft.accept)
			res, err := client.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			data, err := io.ReadAll(res.Body)
			res.Body.Close()
			d := time.Since(t0)
			if err != nil {
				b.Fatal(err)
			}
			if res.StatusCode != 200 || res.Header.Get("Content-Type") != ft.contentType {
				b.Fatalf("%s: %d %s %.200s", ft.name, res.StatusCode, res.Header.Get("Content-Type"), data)
			}
			if i == 0 {
				if ft.name == "json" && bytes.Count(data, []byte(`"name":"fn-`)) != functions {
					b.Fatalf("json: %d functions listed, want %d", bytes.Count(data, []byte(`"name":"fn-`)), functions)
				}
				if ft.name == "text" && !bytes.Contains(data, fmt.Appendf(nil, "%d functions", functions)) {
					b.Fatalf("text: no footer of %d functions in %.300s", functions, data)
				}
			}
			if i >= warmup {
				goCPU[ft.name] += processCPU(b) - goBefore
				pgTicks[ft.name] += testutil.CPUTicks(pg) - pgBefore
				times[ft.name] = append(times[ft.name], d)
				size[ft.name] = len(data)
				after := sql.snapshot()
				if i == warmup {
					sqlAfter[ft.name] = sqlSnapshot{bySQL: map[string]sqlStat{}}
				}
				sqlAfter[ft.name] = addSQL(sqlAfter[ft.name], sqlBefore[ft.name], after)
			}
		}
	}

	b.ReportMetric(0, "ns/op")
	for _, ft := range formats {
		ts := slices.Clone(times[ft.name])
		slices.Sort(ts)
		p50, p99 := percentile(ts, 50), percentile(ts, 99)
		b.ReportMetric(ms(p50), ft.name+"-p50-ms")
		b.ReportMetric(ms(p99), ft.name+"-p99-ms")
		b.ReportMetric(float64(size[ft.name]), ft.name+"-bytes")
		verdict := "met"
		if p99 > 20*time.Millisecond {
			verdict = "missed"
		}
		if testing.Short() {
			verdict = "not judged in a smoke run"
		}
		goOp := goCPU[ft.name] / time.Duration(requests)
		pgOp := testutil.CPUPerOp(pgTicks[ft.name], requests)
		sp := perOp(sqlSnapshot{}, sqlAfter[ft.name], requests)
		b.ReportMetric(float64(goOp.Microseconds()), ft.name+"-go-cpu-µs/op")
		b.ReportMetric(float64(pgOp.Microseconds()), ft.name+"-pg-cpu-µs/op")
		b.ReportMetric(sp.statements, ft.name+"-statements/op")
		b.Logf("%s listing of %d functions (%d bytes): p50 %.2f ms, p99 %.2f ms over %d requests (target p99 ≤ 20 ms): %s; load average %s",
			ft.name, functions, size[ft.name], ms(p50), ms(p99), len(ts), verdict, testutil.LoadAverage())
		b.Logf("  per request: cpu %d µs in this process (client and API), %d µs in postgres; %.2f statements, %.2f round trips: %s",
			goOp.Microseconds(), pgOp.Microseconds(), sp.statements, sp.roundTrips, sp.breakdown)
	}
}

// processCPU is the CPU time (user and system) this process has used.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// addSQL is sum with what was counted between the snapshots before and after.
func addSQL(sum, before, after sqlSnapshot) sqlSnapshot {
	sum.statements += after.statements - before.statements
	sum.roundTrips += after.roundTrips - before.roundTrips
	for k, v := range after.bySQL {
		st := sum.bySQL[k]
		st.count += v.count - before.bySQL[k].count
		st.wait += v.wait - before.bySQL[k].wait
		sum.bySQL[k] = st
	}
	return sum
}

// percentile returns the p-th percentile (0 < p ≤ 100, nearest rank) of the
// sorted durations ds.
func percentile(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	return ds[min(len(ds)-1, max(0, (len(ds)*p+99)/100-1))]
}

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
