package cgroup

import "time"

// host is what the package asks of the system: the files of /proc and of the
// cgroup file systems, and SIGKILL. The real one is the kernel; the tests of
// the cgroup2 code give a fake file system, as cgroup2 controllers cannot be
// enabled on every test machine.
//
// Errors are *fs.PathError (or wrap a syscall.Errno): callers test them with
// errors.Is against syscall.EBUSY, fs.ErrNotExist and the like.
type host interface {
	ReadFile(name string) ([]byte, error)
	// WriteFile writes data to an existing file in one write: cgroupfs
	// takes one value per write, and never creates a file.
	WriteFile(name, data string) error
	Mkdir(name string) error
	Rmdir(name string) error
	// Subdirs lists the names of the directories in name.
	Subdirs(name string) ([]string, error)
	// Made returns when the group directory name was made.
	Made(name string) (time.Time, error)
	// Kill sends SIGKILL to pid; ESRCH when it is gone.
	Kill(pid int) error
	Getpid() int
}
