package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// MaxBuildProgress bounds the output of a running build that is kept for
// people to follow: its last bytes (the whole log comes with the outcome).
const MaxBuildProgress = 64 << 10

// AppendBuildProgress adds output of the running build of version n of a
// function, which GetVersion shows as its log while it builds (the last
// MaxBuildProgress bytes). Errors: EUNAVAILABLE.
func (s *Store) AppendBuildProgress(ctx context.Context, ns, function string, n int, text string) error {
	_, err := s.pool.Exec(ctx, `INSERT INTO build_progress (namespace, function, version, log) VALUES ($1, $2, $3, right($4, $5))
		ON CONFLICT (namespace, function, version) DO UPDATE SET log = right(build_progress.log || $4, $5), updated_at = now()`,
		ns, function, n, text, MaxBuildProgress)
	return dbError("append build output", err)
}

// ClearBuildProgress forgets the output of a build of version n: its outcome
// is recorded, or a new attempt starts. Errors: EUNAVAILABLE.
func (s *Store) ClearBuildProgress(ctx context.Context, ns, function string, n int) error {
	_, err := s.pool.Exec(ctx, `DELETE FROM build_progress WHERE namespace = $1 AND function = $2 AND version = $3`, ns, function, n)
	return dbError("clear build output", err)
}

// buildProgress returns the output so far of the running build of version n.
func (s *Store) buildProgress(ctx context.Context, ns, function string, n int) (string, error) {
	var log string
	err := s.pool.QueryRow(ctx, `SELECT log FROM build_progress WHERE namespace = $1 AND function = $2 AND version = $3`,
		ns, function, n).Scan(&log)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil
	}
	return log, dbError("read build output", err)
}
