// Package migrations owns the database schema of sless: goose v3 SQL migrations
// embedded from sql/*.sql, plus River's own migrations run as goose version 00002
// (a non-transactional Go migration calling rivermigrate with a pinned target
// version), so the whole schema has one ordered history in goose_db_version.
//
// Numbering: 00001 events (the event store), 00002 River, 00003 and up the other
// tables and their changes (00003_projections.sql, ...). New River releases are adopted by
// a new Go migration with the next free number and a higher pinned version, never by
// editing 00002.
//
// migrations imports goose, River's migrator and the database/sql River driver.
package migrations
