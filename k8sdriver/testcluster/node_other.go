//go:build !linux

package testcluster

import (
	"context"
	"errors"
	"testing"
)

// NodeName is the name of the node (see node_linux.go).
const NodeName = "localhost"

// Node is a real node; it runs on Linux only.
type Node struct {
	BridgeIP, Subnet string
	Registry         *Registry
}

func startNode(context.Context, *Cluster, Binaries, string) (*Node, error) {
	return nil, errors.New("the test cluster's node needs Linux (containerd, runc, a bridge)")
}

func (n *Node) stop() error    { return nil }
func (n *Node) procs() []*proc { return nil }

// EnforceNetworkPolicy needs Linux (kube-router's iptables rules).
func (c *Cluster) EnforceNetworkPolicy(t testing.TB) {
	t.Helper()
	t.Fatal("testcluster: NetworkPolicy enforcement needs Linux")
}

func (c *Cluster) stopFirewall() error { return nil }
