// Command pause is the test cluster's pod sandbox image (what
// registry.k8s.io/pause is on a real cluster): it holds a pod's namespaces,
// reaps the zombies it inherits as PID 1, and exits on SIGTERM or SIGINT.
// The Taskfile's k8s:binaries builds it statically; testcluster packs it into
// an image.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	children := make(chan os.Signal, 1)
	signal.Notify(children, syscall.SIGCHLD)
	for {
		select {
		case <-stop:
			return
		case <-children:
			for {
				var ws syscall.WaitStatus
				if pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil); pid <= 0 || err != nil {
					break
				}
			}
		}
	}
}
