package s3embed

import (
	"crypto/md5"
	"errors"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"

	"github.com/johannesboyne/gofakes3"
)

// ListBucket lists keys in order, folding keys under a delimiter into common
// prefixes, one page at a time (marker = last key or prefix returned).
func (b *fileBackend) ListBucket(name string, prefix *gofakes3.Prefix, page gofakes3.ListBucketPage) (*gofakes3.ObjectList, error) {
	if prefix == nil {
		prefix = &gofakes3.Prefix{}
	}
	b.mu.RLock()
	defer b.mu.RUnlock()
	bk := b.buckets[name]
	if bk == nil {
		return nil, gofakes3.BucketNotFound(name)
	}
	keys := make([]string, 0, len(bk.objects))
	for k := range bk.objects {
		if page.Marker == "" || k > page.Marker {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)

	list := gofakes3.NewObjectList()
	var count int64
	var lastPrefix string
	var match gofakes3.PrefixMatch
	for i, k := range keys {
		if !prefix.Match(k, &match) {
			continue
		}
		if match.CommonPrefix {
			// A prefix returned on an earlier page is the marker itself.
			if match.MatchedPart == lastPrefix || match.MatchedPart == page.Marker {
				continue
			}
			list.AddPrefix(match.MatchedPart)
			lastPrefix = match.MatchedPart
		} else {
			om := bk.objects[k]
			list.Add(&gofakes3.Content{
				Key:          k,
				LastModified: gofakes3.NewContentTime(om.Modified),
				ETag:         gofakes3.FormatETag(om.MD5),
				Size:         om.Size,
			})
		}
		count++
		if page.MaxKeys > 0 && count >= page.MaxKeys {
			if match.CommonPrefix {
				list.NextMarker = match.MatchedPart
			} else {
				list.NextMarker = k
			}
			list.IsTruncated = b.hasMore(keys[i+1:], prefix, list.NextMarker)
			break
		}
	}
	return list, nil
}

// hasMore tells whether anything not yet returned follows marker.
func (b *fileBackend) hasMore(rest []string, prefix *gofakes3.Prefix, marker string) bool {
	var m gofakes3.PrefixMatch
	for _, k := range rest {
		if prefix.Match(k, &m) && !(m.CommonPrefix && m.MatchedPart == marker) {
			return true
		}
	}
	return false
}

// HeadObject returns an object's metadata (gofakes3.KeyNotFound if absent).
func (b *fileBackend) HeadObject(bucketName, key string) (*gofakes3.Object, error) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	om, err := b.lookup(bucketName, key)
	if err != nil {
		return nil, err
	}
	return om.object(io.NopCloser(strings.NewReader("")), nil), nil
}

// GetObject opens an object, or the requested byte range of it.
func (b *fileBackend) GetObject(bucketName, key string, rangeRequest *gofakes3.ObjectRangeRequest) (*gofakes3.Object, error) {
	b.mu.RLock()
	om, err := b.lookup(bucketName, key)
	var f *os.File
	if err == nil {
		// Opened under the lock: a concurrent PUT may unlink the blob, never before we hold it.
		f, err = os.Open(b.blobPath(bucketName, om.Blob))
	}
	b.mu.RUnlock()
	if err != nil {
		return nil, err
	}
	rng, err := rangeRequest.Range(om.Size)
	if err != nil {
		f.Close()
		return nil, err
	}
	var body io.ReadCloser = f
	if rng != nil {
		body = struct {
			io.Reader
			io.Closer
		}{io.NewSectionReader(f, rng.Start, rng.Length), f}
	}
	return om.object(body, rng), nil
}

func (b *fileBackend) lookup(bucketName, key string) (*objectMeta, error) {
	bk := b.buckets[bucketName]
	if bk == nil {
		return nil, gofakes3.BucketNotFound(bucketName)
	}
	om := bk.objects[key]
	if om == nil {
		return nil, gofakes3.KeyNotFound(key)
	}
	return om, nil
}

func (om *objectMeta) object(body io.ReadCloser, rng *gofakes3.ObjectRange) *gofakes3.Object {
	meta := make(map[string]string, len(om.Meta)+1)
	for k, v := range om.Meta {
		meta[k] = v
	}
	meta["Last-Modified"] = om.Modified.UTC().Format(http.TimeFormat)
	return &gofakes3.Object{Name: om.Key, Metadata: meta, Size: om.Size, Contents: body, Hash: om.MD5, Range: rng}
}

// PutObject stores input under key, atomically: readers see the old object
// or the new one, and a body that fails half way (a bad chunk signature, a
// dropped connection) leaves nothing behind.
func (b *fileBackend) PutObject(bucketName, key string, meta map[string]string, input io.Reader, size int64, conditions *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	var res gofakes3.PutObjectResult
	if ok, _ := b.BucketExists(bucketName); !ok {
		return res, gofakes3.BucketNotFound(bucketName)
	}
	tmp, sum, n, err := b.writeTemp(input)
	if err != nil {
		return res, err
	}
	defer os.Remove(tmp) // no-op once renamed
	if size >= 0 && n != size {
		return res, gofakes3.ErrIncompleteBody
	}

	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.buckets[bucketName]
	if bk == nil {
		return res, gofakes3.BucketNotFound(bucketName)
	}
	old := bk.objects[key]
	if conditions != nil {
		info := &gofakes3.ConditionalObjectInfo{Exists: old != nil}
		if old != nil {
			info.Hash = old.MD5
		}
		if err := gofakes3.CheckPutConditions(conditions, info); err != nil {
			return res, err
		}
	}
	om := &objectMeta{Key: key, Size: n, MD5: sum, Meta: keptMetadata(meta),
		Modified: b.now().UTC(), Blob: keyHash(key)[:16] + "-" + randomHex(8)}
	if err := os.Rename(tmp, b.blobPath(bucketName, om.Blob)); err != nil {
		return res, err
	}
	if err := b.writeJSON(b.metaPath(bucketName, key), om); err != nil {
		_ = os.Remove(b.blobPath(bucketName, om.Blob))
		return res, err
	}
	bk.objects[key] = om
	if old != nil {
		_ = os.Remove(b.blobPath(bucketName, old.Blob))
	}
	return res, nil
}

// writeTemp streams input into a synced temporary file, returning its md5.
// Errors from input come back unwrapped: gofakes3 turns its own error types
// into S3 error codes and anything else into a 500.
func (b *fileBackend) writeTemp(input io.Reader) (path string, sum []byte, n int64, err error) {
	f, err := os.CreateTemp(b.tmpDir(), "put-*")
	if err != nil {
		return "", nil, 0, err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	h := md5.New()
	n, err = io.Copy(io.MultiWriter(f, h), input)
	if err != nil {
		return "", nil, 0, err
	}
	if err = f.Sync(); err != nil {
		return "", nil, 0, err
	}
	if err = f.Close(); err != nil {
		return "", nil, 0, err
	}
	return f.Name(), h.Sum(nil), n, nil
}

// keptMetadata keeps what S3 stores with an object: gofakes3 passes every
// x-amz-* request header (dates, hashes, signatures), which must not be
// echoed back on GET.
func keptMetadata(in map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range in {
		switch {
		case k == "Content-Type", k == "Content-Disposition", k == "Content-Encoding",
			k == "Content-Language", k == "Cache-Control", k == "Expires",
			strings.HasPrefix(k, "X-Amz-Meta-"):
			out[k] = v
		}
	}
	return out
}

// DeleteObject removes key; deleting a missing key succeeds, as on S3.
func (b *fileBackend) DeleteObject(bucketName, key string) (gofakes3.ObjectDeleteResult, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return gofakes3.ObjectDeleteResult{}, b.deleteLocked(bucketName, key)
}

func (b *fileBackend) deleteLocked(bucketName, key string) error {
	bk := b.buckets[bucketName]
	if bk == nil {
		return gofakes3.BucketNotFound(bucketName)
	}
	om := bk.objects[key]
	if om == nil {
		return nil
	}
	if err := os.Remove(b.metaPath(bucketName, key)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	delete(bk.objects, key)
	_ = os.Remove(b.blobPath(bucketName, om.Blob))
	return nil
}

// DeleteMulti removes several keys, reporting each one's outcome.
func (b *fileBackend) DeleteMulti(bucketName string, keys ...string) (gofakes3.MultiDeleteResult, error) {
	var res gofakes3.MultiDeleteResult
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buckets[bucketName] == nil {
		return res, gofakes3.BucketNotFound(bucketName)
	}
	for _, k := range keys {
		if err := b.deleteLocked(bucketName, k); err != nil {
			res.Error = append(res.Error, gofakes3.ErrorResult{Code: gofakes3.ErrInternal, Message: err.Error(), Key: k})
			continue
		}
		res.Deleted = append(res.Deleted, gofakes3.ObjectID{Key: k})
	}
	return res, nil
}

// CopyObject copies through GetObject and PutObject.
func (b *fileBackend) CopyObject(srcBucket, srcKey, dstBucket, dstKey string, meta map[string]string) (gofakes3.CopyObjectResult, error) {
	return gofakes3.CopyObject(b, srcBucket, srcKey, dstBucket, dstKey, meta)
}
