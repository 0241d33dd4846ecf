package proxy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/slessio/sless/internal/testutil"
)

// The load generators and CPU accounting of BenchmarkInvoke.
//
// The closed loop runs in wrk (Debian's package; go tool task bench:deps
// installs it) when it is installed: a separate, frugal process, as a real
// client would be, which leaves the test process to the proxy alone so its
// CPU per request can be read off /proc. Without wrk (or with
// SLESS_BENCH_LOADGEN=go) the closed loop runs in this process and the CPU
// of the in-process columns is not reported.

// wrkPath is wrk's path, or "" when the closed loops run in this process.
func wrkPath() string {
	if os.Getenv("SLESS_BENCH_LOADGEN") == "go" {
		return ""
	}
	p, err := exec.LookPath("wrk")
	if err != nil {
		return ""
	}
	return p
}

// wrkClosedLoop runs wrk with conns connections on one thread for d.
func wrkClosedLoop(wrk, url string, conns int, d time.Duration) (*loadResult, error) {
	out, err := exec.Command(wrk, "-t1", "-c"+strconv.Itoa(conns), "-d"+strconv.Itoa(int(d.Seconds()+0.5))+"s",
		"--latency", url).CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("wrk: %v\n%s", err, out)
	}
	return parseWrk(out)
}

// parseWrk reads what wrk prints: Requests/sec, the 50% and 99% latency
// lines of --latency, the total, and its error counts.
func parseWrk(out []byte) (*loadResult, error) {
	r := &loadResult{}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 2 && f[0] == "Requests/sec:":
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				return nil, fmt.Errorf("wrk: %q: %w", sc.Text(), err)
			}
			r.maxRPS = v
			seen++
		case len(f) == 2 && (f[0] == "50%" || f[0] == "99%"):
			v, err := parseWrkDuration(f[1])
			if err != nil {
				return nil, err
			}
			if f[0] == "50%" {
				r.p50 = v
			} else {
				r.p99 = v
			}
			seen++
		case len(f) >= 3 && f[1] == "requests" && f[2] == "in":
			n, err := strconv.Atoi(f[0])
			if err != nil {
				return nil, fmt.Errorf("wrk: %q: %w", sc.Text(), err)
			}
			r.requests = n
			seen++
		case len(f) == 5 && f[0] == "Non-2xx":
			n, _ := strconv.Atoi(f[4])
			r.errors += n
		case len(f) >= 2 && f[0] == "Socket" && f[1] == "errors:":
			// Socket errors: connect 0, read 1, write 0, timeout 0
			for i := 3; i < len(f); i += 2 {
				n, _ := strconv.Atoi(strings.TrimSuffix(f[i], ","))
				r.errors += n
			}
		}
	}
	if seen != 4 {
		return nil, fmt.Errorf("wrk printed something unexpected:\n%s", out)
	}
	return r, nil
}

// parseWrkDuration reads wrk's 1.15ms, 539.00us, 2.01s.
func parseWrkDuration(s string) (time.Duration, error) {
	for _, u := range []struct {
		suffix string
		unit   time.Duration
	}{{"us", time.Microsecond}, {"ms", time.Millisecond}, {"s", time.Second}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				return 0, fmt.Errorf("wrk latency %q: %w", s, err)
			}
			return time.Duration(f * float64(u.unit)), nil
		}
	}
	return 0, fmt.Errorf("wrk latency %q: unknown unit", s)
}

// withChildren returns pid and the processes whose parent it is (nginx's
// master and its workers).
func withChildren(pid int) []int {
	pids := []int{pid}
	parent := strconv.Itoa(pid)
	for _, child := range testutil.AllPIDs() {
		if f := testutil.StatFields(child); len(f) > 1 && f[1] == parent { // ppid, field 4
			pids = append(pids, child)
		}
	}
	return pids
}

// listeningPID finds the process listening on 127.0.0.1:port (the function
// process of the direct column), or 0: /proc/net/tcp names the socket's
// inode, the process holding it has a descriptor "socket:[inode]".
func listeningPID(port int) int {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return 0
	}
	want := fmt.Sprintf(":%04X", port)
	inode := ""
	for _, line := range strings.Split(string(b), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && strings.HasSuffix(f[1], want) && f[3] == "0A" { // 0A: LISTEN
			inode = f[9]
			break
		}
	}
	if inode == "" {
		return 0
	}
	target := "socket:[" + inode + "]"
	for _, pid := range testutil.AllPIDs() {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			if l, _ := os.Readlink(filepath.Join(dir, fd.Name())); l == target {
				return pid
			}
		}
	}
	return 0
}
