//go:build !unix

package runtimes

import "syscall"

// ownGroup: no process groups here.
func ownGroup() *syscall.SysProcAttr { return nil }
