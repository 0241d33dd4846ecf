package store

import (
	"context"
	"slices"
	"sync"
	"time"
)

// A command's route changes are announced after its COMMIT, not inside its
// transaction: a transaction that NOTIFYs takes PostgreSQL's one
// notification lock from its COMMIT until it ends, so every such commit,
// with its WAL flush, waits for the one before it (1,820 creates/s with the
// NOTIFY in the transaction, 2,727 without, on the create's own SQL).
// Announced afterwards, the changes of the commits that land while a
// notification is being sent go together in the next one: one statement
// however many functions changed. The listener reads the routes when told,
// so a route is announced once it is committed, as before; a process that
// dies between the COMMIT and the notification leaves its change to the
// proxies' full refresh (proxy.Config.RefreshInterval), as a notification
// lost with the listener's connection does.

// notifyTimeout bounds one notification's statement.
const notifyTimeout = 10 * time.Second

// notifyRoutesSQL announces each function of $1 ("<ns>/<function>").
const notifyRoutesSQL = `SELECT pg_notify('` + RoutesChannel + `', k) FROM unnest($1::text[]) AS k`

// routeAnnouncer sends the route changes of committed commands, in groups.
type routeAnnouncer struct {
	mu      sync.Mutex
	pending []string
	sending bool // a sender goroutine is running
}

// announceRoutes announces keys ("<ns>/<function>") committed just now. It
// does not wait: a sender goroutine, started when none runs, sends what is
// pending until nothing is.
func (s *Store) announceRoutes(keys []string) {
	if len(keys) == 0 {
		return
	}
	a := &s.routes
	a.mu.Lock()
	a.pending = append(a.pending, keys...)
	start := !a.sending
	a.sending = true
	a.mu.Unlock()
	if start {
		go s.sendRoutes()
	}
}

// sendRoutes sends the pending announcements, a group per statement, until
// none is pending. A group that fails to go out (the database is down) is
// dropped: the proxies' full refresh repairs it, and their listening
// connection, broken too, reloads every route when it is back.
func (s *Store) sendRoutes() {
	a := &s.routes
	for {
		a.mu.Lock()
		group := a.pending
		a.pending = nil
		if len(group) == 0 {
			a.sending = false
			a.mu.Unlock()
			return
		}
		a.mu.Unlock()
		slices.Sort(group)
		group = slices.Compact(group)
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		_, err := s.pool.Exec(ctx, notifyRoutesSQL, group)
		cancel()
		noteConnLost(err)
	}
}
