// Package importrules holds only a test: TestImportRules checks the import
// rules that the packages' doc.go files and CONTRIBUTING.md state (domain
// imports the standard library only; the driver port only domain; drivers
// never the control plane's store, workers, pgx or River; the proxy never
// the workers; outbox, command and invoke below the API and the workers),
// with `go list -deps`, as go-cleanarch does for wild-workouts. `go tool
// task lint` runs it too.
package importrules
