//go:build !linux

package egress

import (
	"errors"
	"syscall"
)

// errNotLinux: network namespaces and nftables are Linux's.
var errNotLinux = errors.New("sandbox networks need Linux")

func inNamespace(int, func() error) error { return errNotLinux }

func install(int, ruleset) error { return errNotLinux }

func slirpAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
