//go:build !linux

package cgroup

import "github.com/slessio/sless/domain"

func newHost() (host, error) {
	return nil, domain.Errorf(domain.EUNAVAILABLE, "no cgroup: cgroups are Linux's")
}
