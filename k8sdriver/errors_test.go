package k8sdriver

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/slessio/sless/domain"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestMapErr(t *testing.T) {
	t.Parallel()
	gr := schema.GroupResource{Group: "apps", Resource: "deployments"}
	for _, c := range []struct {
		err  error
		want string
	}{
		{apierrors.NewNotFound(gr, "x"), domain.ENOTFOUND},
		{apierrors.NewAlreadyExists(gr, "x"), domain.ECONFLICT},
		{apierrors.NewConflict(gr, "x", errors.New("changed")), domain.ECONFLICT},
		{apierrors.NewInvalid(schema.GroupKind{Kind: "Deployment"}, "x", nil), domain.EINVALID},
		{apierrors.NewBadRequest("no"), domain.EINVALID},
		{apierrors.NewForbidden(gr, "x", errors.New(`exceeded quota: sless-quota, requested: pods=1`)), domain.EUNPROCESSABLE},
		{apierrors.NewForbidden(gr, "x", errors.New("RBAC says no")), domain.EFORBIDDEN},
		{apierrors.NewUnauthorized("who"), domain.EUNAUTHORIZED},
		{apierrors.NewRequestEntityTooLargeError("big"), domain.ETOOLARGE},
		{apierrors.NewTooManyRequests("slow down", 1), domain.EUNAVAILABLE},
		{apierrors.NewServiceUnavailable("down"), domain.EUNAVAILABLE},
		{apierrors.NewInternalError(errors.New("etcd")), domain.EUNAVAILABLE},
		{apierrors.NewTimeoutError("slow", 1), domain.EUNAVAILABLE},
		{fmt.Errorf("dial tcp: %w", errors.New("connection refused")), domain.EUNAVAILABLE},
		{context.DeadlineExceeded, domain.EUNAVAILABLE},
		{apierrors.NewGone("old"), domain.EINTERNAL},
		{domain.Errorf(domain.EINVALID, "kept"), domain.EINVALID},
	} {
		err := mapErr("op", c.err)
		if got := domain.ErrorCode(err); got != c.want {
			t.Errorf("mapErr(%v) = %s, want %s", c.err, got, c.want)
		}
	}
	if mapErr("op", nil) != nil {
		t.Error("mapErr(nil) != nil")
	}
}

func TestNewValidatesConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{
		{S3: S3Config{Bucket: "b"}},
		{Registry: "r"},
		{Registry: "r", S3: S3Config{Bucket: "b"}, Endpoint: "dns"},
		{Registry: "r", S3: S3Config{Bucket: "b"}, Quota: map[string]string{"pods": "lots"}},
	} {
		if _, err := New(nil, cfg); domain.ErrorCode(err) != domain.EINVALID {
			t.Errorf("New(%+v) = %v, want EINVALID", cfg, err)
		}
	}
}
