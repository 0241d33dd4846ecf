package proxy_test

import (
	"net"
	"os"
	"os/exec"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/slessio/sless/internal/testutil"
)

// TestParseWrk reads wrk 4.1's --latency output as printed; output without
// its lines is an error, never zeros.
func TestParseWrk(t *testing.T) {
	out := []byte(`Running 5s test @ http://127.0.0.1:9102/
  1 threads and 32 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency     1.02ms    1.10ms  30.12ms   93.20%
    Req/Sec    43.36k     2.01k   46.12k    72.00%
  Latency Distribution
     50%  539.00us
     75%    1.12ms
     90%    2.01ms
     99%    5.63ms
  216810 requests in 5.00s, 26.05MB read
  Non-2xx or 3xx responses: 3
  Socket errors: connect 0, read 2, write 0, timeout 1
Requests/sec:  43362.11
Transfer/sec:      5.21MB
`)
	r, err := parseWrk(out)
	if err != nil {
		t.Fatal(err)
	}
	if r.maxRPS != 43362.11 || r.requests != 216810 || r.p50 != 539*time.Microsecond || r.p99 != 5630*time.Microsecond || r.errors != 6 {
		t.Fatalf("parsed %+v", r)
	}
	if _, err := parseWrk([]byte("unable to connect to 127.0.0.1:9 Connection refused\n")); err == nil {
		t.Fatal("wrk's failure parsed as a result")
	}
}

// TestProcAccounting: the bench finds a listening process by its port and
// a process's children, and counts CPU that was spent.
func TestProcAccounting(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc here")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if pid := listeningPID(ln.Addr().(*net.TCPAddr).Port); pid != os.Getpid() {
		t.Fatalf("listening pid %d, want this process %d", pid, os.Getpid())
	}
	child := exec.Command("sleep", "5")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Process.Kill()
	if pids := withChildren(os.Getpid()); !slices.Contains(pids, child.Process.Pid) || pids[0] != os.Getpid() {
		t.Fatalf("withChildren = %v, want this process and %d", pids, child.Process.Pid)
	}
	// Spin until the kernel's own rusage says this process used 100 ms of
	// CPU (wall time would not do on a loaded machine), then /proc must
	// count about as much.
	before := testutil.CPUTicks([]int{os.Getpid()})
	start := processCPU(t)
	for deadline := time.Now().Add(30 * time.Second); processCPU(t)-start < 100*time.Millisecond; {
		if time.Now().After(deadline) {
			t.Fatal("could not spend 100 ms of CPU in 30 s")
		}
	}
	if spent := testutil.CPUTicks([]int{os.Getpid()}) - before; spent < 5 {
		t.Fatalf("100 ms of CPU counted %d ticks", spent)
	}
}

// processCPU is the user and system CPU time this process has used.
func processCPU(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
