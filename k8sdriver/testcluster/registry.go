package testcluster

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Registry is an OCI registry in this process (go-containerregistry's
// pkg/registry, blobs in memory, plain HTTP) on the node's bridge address,
// where pods and the node's containerd reach it. It stands in for every
// registry the cluster's images come from: an image is stored under its
// repository path without the registry's host (registry.k8s.io/pause:3.10
// as pause:3.10), and containerd and kaniko are told to pull those
// registries from here.
type Registry struct {
	// Host is host:port of the registry, e.g. "10.244.17.1:41234".
	Host string
	srv  *http.Server
}

func startRegistry(ip string) (*Registry, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		return nil, fmt.Errorf("registry: %w", err)
	}
	r := &Registry{Host: ln.Addr().String(), srv: &http.Server{
		Handler:           registry.New(registry.Logger(log.New(io.Discard, "", 0))),
		ReadHeaderTimeout: 10 * time.Second,
	}}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// Push stores img under the repository path and tag of ref (a full image
// name such as "registry.k8s.io/pause:3.10"), over the registry's HTTP API
// as a client would: blobs in monolithic uploads, then the manifest.
func (r *Registry) Push(ctx context.Context, ref string, img v1.Image) error {
	tag, err := name.NewTag(ref)
	if err != nil {
		return err
	}
	repo := tag.RepositoryStr()
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		err = r.put(ctx, http.MethodPost, "/v2/"+repo+"/blobs/uploads/?digest="+d.String(), "application/octet-stream", rc)
		rc.Close()
		if err != nil {
			return fmt.Errorf("push %s: layer: %w", ref, err)
		}
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	if err := r.put(ctx, http.MethodPost, "/v2/"+repo+"/blobs/uploads/?digest="+cfgName.String(), "application/octet-stream", bytes.NewReader(cfg)); err != nil {
		return fmt.Errorf("push %s: config: %w", ref, err)
	}
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	if err := r.put(ctx, http.MethodPut, "/v2/"+repo+"/manifests/"+tag.TagStr(), string(mt), bytes.NewReader(manifest)); err != nil {
		return fmt.Errorf("push %s: manifest: %w", ref, err)
	}
	return nil
}

func (r *Registry) put(ctx context.Context, method, path, contentType string, body io.Reader) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+r.Host+path, body)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", contentType)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, msg)
	}
	return nil
}

func (r *Registry) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = r.srv.Shutdown(ctx)
}
