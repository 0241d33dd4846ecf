// Package localdriver is the embedded default driver of `sless dev` and the
// tests: it builds versions into a work directory and runs functions as
// supervised local processes (HTTP servers on loopback ports, one-shot job
// runs). It implements the workers.Driver port.
//
// It may import domain and runtimes.
package localdriver
