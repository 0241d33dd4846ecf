package s3embed

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
)

// fileBackend is a gofakes3.Backend keeping every object in a file:
//
//	<dir>/<bucket>/bucket.json    the bucket exists (creation time)
//	<dir>/<bucket>/meta/<h>.json  one object's key, size, md5, metadata and blob name
//	<dir>/<bucket>/blob/<h>-<r>   that object's bytes
//	<dir>/.tmp/                   writes in flight
//
// <h> is hex(sha256(key)), so any key (with "..", "/" or odd bytes) maps to a
// safe file name. A PUT streams into .tmp, is renamed into blob/, and becomes
// visible when its meta file is renamed into place; the old blob is removed
// after. A crash leaves at worst an unreferenced blob, collected at the next
// start. An in-memory index (loaded at start) answers listings and lookups.
type fileBackend struct {
	dir string
	now func() time.Time

	mu      sync.RWMutex
	buckets map[string]*bucket
}

type bucket struct {
	created time.Time
	objects map[string]*objectMeta
}

type objectMeta struct {
	Key      string            `json:"key"`
	Size     int64             `json:"size"`
	MD5      []byte            `json:"md5"`
	Meta     map[string]string `json:"meta,omitempty"`
	Modified time.Time         `json:"modified"`
	Blob     string            `json:"blob"`
}

type bucketFile struct {
	Created time.Time `json:"created"`
}

var _ gofakes3.Backend = (*fileBackend)(nil)

// openBackend loads the index of every bucket under dir and removes what a
// crash may have left behind (temporary files, unreferenced blobs).
func openBackend(dir string, now func() time.Time) (*fileBackend, error) {
	b := &fileBackend{dir: dir, now: now, buckets: map[string]*bucket{}}
	if err := os.RemoveAll(b.tmpDir()); err != nil {
		return nil, fmt.Errorf("clear temp dir: %w", err)
	}
	if err := os.MkdirAll(b.tmpDir(), 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("read data dir: %w", err)
	}
	for _, e := range entries {
		if !e.IsDir() || gofakes3.ValidateBucketName(e.Name()) != nil {
			continue
		}
		bk, err := b.loadBucket(e.Name())
		if errors.Is(err, os.ErrNotExist) {
			continue // not a bucket (or a bucket half deleted)
		}
		if err != nil {
			return nil, fmt.Errorf("load bucket %s: %w", e.Name(), err)
		}
		b.buckets[e.Name()] = bk
	}
	return b, nil
}

func (b *fileBackend) loadBucket(name string) (*bucket, error) {
	var bf bucketFile
	if err := readJSON(filepath.Join(b.dir, name, "bucket.json"), &bf); err != nil {
		return nil, err
	}
	bk := &bucket{created: bf.Created, objects: map[string]*objectMeta{}}
	metas, err := os.ReadDir(filepath.Join(b.dir, name, "meta"))
	if err != nil {
		return nil, err
	}
	used := map[string]bool{}
	for _, m := range metas {
		var om objectMeta
		if err := readJSON(filepath.Join(b.dir, name, "meta", m.Name()), &om); err != nil {
			return nil, err
		}
		bk.objects[om.Key] = &om
		used[om.Blob] = true
	}
	blobs, err := os.ReadDir(filepath.Join(b.dir, name, "blob"))
	if err != nil {
		return nil, err
	}
	for _, bl := range blobs {
		if !used[bl.Name()] {
			_ = os.Remove(filepath.Join(b.dir, name, "blob", bl.Name()))
		}
	}
	return bk, nil
}

func (b *fileBackend) tmpDir() string { return filepath.Join(b.dir, ".tmp") }

func keyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

func (b *fileBackend) metaPath(bucketName, key string) string {
	return filepath.Join(b.dir, bucketName, "meta", keyHash(key)+".json")
}

func (b *fileBackend) blobPath(bucketName, blob string) string {
	return filepath.Join(b.dir, bucketName, "blob", blob)
}

// ListBuckets lists the buckets by name.
func (b *fileBackend) ListBuckets() ([]gofakes3.BucketInfo, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	out := make([]gofakes3.BucketInfo, 0, len(b.buckets))
	for name, bk := range b.buckets {
		out = append(out, gofakes3.BucketInfo{Name: name, CreationDate: gofakes3.NewContentTime(bk.created)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// CreateBucket creates a bucket; gofakes3.ErrBucketAlreadyExists when it exists.
func (b *fileBackend) CreateBucket(name string) error {
	if err := gofakes3.ValidateBucketName(name); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buckets[name] != nil {
		return gofakes3.ResourceError(gofakes3.ErrBucketAlreadyExists, name)
	}
	root := filepath.Join(b.dir, name)
	for _, d := range []string{"meta", "blob"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o700); err != nil {
			return err
		}
	}
	created := b.now().UTC()
	if err := b.writeJSON(filepath.Join(root, "bucket.json"), bucketFile{Created: created}); err != nil {
		return err
	}
	b.buckets[name] = &bucket{created: created, objects: map[string]*objectMeta{}}
	return nil
}

// BucketExists reports whether the bucket exists.
func (b *fileBackend) BucketExists(name string) (bool, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.buckets[name] != nil, nil
}

// DeleteBucket removes an empty bucket (gofakes3.ErrBucketNotEmpty otherwise).
func (b *fileBackend) DeleteBucket(name string) error { return b.deleteBucket(name, false) }

// ForceDeleteBucket removes a bucket and everything in it.
func (b *fileBackend) ForceDeleteBucket(name string) error { return b.deleteBucket(name, true) }

func (b *fileBackend) deleteBucket(name string, force bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.buckets[name]
	if bk == nil {
		return gofakes3.BucketNotFound(name)
	}
	if !force && len(bk.objects) > 0 {
		return gofakes3.ResourceError(gofakes3.ErrBucketNotEmpty, name)
	}
	// Without bucket.json the directory is no bucket, even if RemoveAll stops half way.
	if err := os.Remove(filepath.Join(b.dir, name, "bucket.json")); err != nil {
		return err
	}
	delete(b.buckets, name)
	return os.RemoveAll(filepath.Join(b.dir, name))
}

// writeJSON replaces path atomically (write, sync, rename).
func (b *fileBackend) writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(b.tmpDir(), "meta-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
