//go:build unix

package runtimes

import "syscall"

// ownGroup starts a helper command (the interpreter lookup) in a process
// group of its own, so that a Ctrl-C at the terminal, which signals the
// platform's foreground group, reaches the platform and not its helpers:
// the platform decides how it stops.
func ownGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
