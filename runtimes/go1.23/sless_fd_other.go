//go:build ignore && !linux

package main

import "syscall"

// slessDup2 points descriptor newfd at oldfd's file (macOS and the BSDs).
func slessDup2(oldfd, newfd int) error {
	return syscall.Dup2(oldfd, newfd)
}
