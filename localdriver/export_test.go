package localdriver

import "context"

// PoolPIDs returns the host pids of the idle processes of runtime's warm
// pool (its sandboxes' bwrap processes) and whether all of them are ready.
func (d *Driver) PoolPIDs(runtime string) ([]int, bool) { return d.pool.idlePIDs(runtime) }

// WaitPoolFull waits until every runtime's warm pool is full of ready processes.
func (d *Driver) WaitPoolFull(ctx context.Context) error { return d.pool.waitFull(ctx) }

// InstancePID returns the host pid of the process serving endpoint now, 0
// when there is none.
func (d *Driver) InstancePID(endpoint string) int {
	d.mu.Lock()
	in := d.endpoints[endpoint]
	d.mu.Unlock()
	if in == nil {
		return 0
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cur == nil {
		return 0
	}
	return in.cur.pid
}
