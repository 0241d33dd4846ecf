//go:build !linux

package sandbox

import "github.com/slessio/sless/domain"

// supported says that bubblewrap sandboxes need Linux.
func supported() error {
	return domain.Errorf(domain.EUNAVAILABLE, "no sandbox: bubblewrap sandboxes need Linux")
}

// setLimits does nothing: prlimit(2) on another process is Linux only.
func setLimits(int, uint64, uint64) error { return nil }

// keepOwnDescriptors does nothing: there are no sandboxes here.
func keepOwnDescriptors() {}
