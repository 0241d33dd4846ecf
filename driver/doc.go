// Package driver is the port between the platform and what runs functions:
// the Driver interface (build, deploy, run, remove, and Watch for what
// happens without a call: crash loops, finished runs of a driver's own
// schedules), the optional Scheduler and BuildSourceUser, and the types they
// exchange. localdriver and k8sdriver implement it; driver/drivertest is the
// conformance suite both pass, as River keeps riverdriver and
// riverdrivertest.
//
// It imports only domain and the standard library, so a driver depends on
// nothing of the control plane: no store, no pgx, no River (the import rules
// are checked by the root package's TestImportRules).
package driver
