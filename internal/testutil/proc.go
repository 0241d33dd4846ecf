package testutil

import (
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// TicksPerSecond is USER_HZ, the unit of /proc's CPU times, on every Linux this runs on.
const TicksPerSecond = 100

// StatFields returns the fields of /proc/<pid>/stat after the command (which
// may hold spaces), so field n of proc(5) is [n-3]; nil when it cannot be read.
func StatFields(pid int) []string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(string(b[i+1:]))
}

// AllPIDs lists the processes in /proc.
func AllPIDs() []int {
	ents, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range ents {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// CPUTicks is the user+system CPU time of pids so far, in clock ticks
// (TicksPerSecond), from /proc/<pid>/stat; 0 where /proc cannot tell.
func CPUTicks(pids []int) int64 {
	var t int64
	for _, pid := range pids {
		f := StatFields(pid)
		if len(f) < 13 {
			continue
		}
		u, _ := strconv.ParseInt(f[11], 10, 64) // utime, field 14
		s, _ := strconv.ParseInt(f[12], 10, 64) // stime, field 15
		t += u + s
	}
	return t
}

// CPUPerOp turns a tick count over n operations into CPU time per operation.
func CPUPerOp(ticks int64, n int) time.Duration {
	if n == 0 {
		return 0
	}
	return time.Duration(ticks) * time.Second / TicksPerSecond / time.Duration(n)
}

// LoadAverage describes the machine's load for a benchmark's log, e.g.
// "1.52 1.20 0.98 on 2 CPUs" (the 1, 5 and 15 minute averages), or
// "unknown".
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(data))
	if err != nil || len(f) < 3 {
		return "unknown"
	}
	return fmt.Sprintf("%s %s %s on %d CPUs", f[0], f[1], f[2], runtime.NumCPU())
}
