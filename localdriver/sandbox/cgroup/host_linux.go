package cgroup

import (
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// kernel is the host of a Linux machine.
type kernel struct{}

func newHost() (host, error) { return kernel{}, nil }

func (kernel) ReadFile(name string) ([]byte, error) { return os.ReadFile(name) }

func (kernel) WriteFile(name, data string) error {
	f, err := os.OpenFile(name, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (kernel) Mkdir(name string) error { return os.Mkdir(name, 0o755) }

func (kernel) Rmdir(name string) error {
	if err := unix.Rmdir(name); err != nil {
		return &os.PathError{Op: "rmdir", Path: name, Err: err}
	}
	return nil
}

func (kernel) Subdirs(name string) ([]string, error) {
	entries, err := os.ReadDir(name)
	if err != nil {
		return nil, err
	}
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, e.Name())
		}
	}
	return dirs, nil
}

func (kernel) Made(name string) (time.Time, error) {
	fi, err := os.Stat(name)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

func (kernel) Kill(pid int) error { return unix.Kill(pid, unix.SIGKILL) }

func (kernel) Getpid() int { return os.Getpid() }
