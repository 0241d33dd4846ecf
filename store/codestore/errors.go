package codestore

import (
	"context"
	"errors"
	"fmt"

	"github.com/minio/minio-go/v7"

	"github.com/slessio/sless/domain"
)

// mapErr turns a minio-go error into a domain error, keeping the cause in the
// chain for logs: a missing key is ENOTFOUND; an unreachable, failing or
// misconfigured object store (missing bucket, rejected credentials, 5xx) is
// EUNAVAILABLE; anything else stays internal.
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return fmt.Errorf("%s: %w", op, err)
	}
	if errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: %w", op, err)
	}
	resp := minio.ToErrorResponse(err)
	var coded *domain.Error
	switch {
	case resp.Code == "NoSuchKey":
		coded = domain.Errorf(domain.ENOTFOUND, "stored code %q not found", resp.Key)
	case resp.Code == "NoSuchBucket":
		coded = domain.Errorf(domain.EUNAVAILABLE, "object storage bucket %q does not exist", resp.BucketName)
	case resp.Code == "AccessDenied" || resp.Code == "InvalidAccessKeyId" || resp.Code == "SignatureDoesNotMatch":
		coded = domain.Errorf(domain.EUNAVAILABLE, "object storage rejected the configured credentials")
	case errors.Is(err, context.DeadlineExceeded) || resp.StatusCode == 0 || resp.StatusCode >= 500:
		// StatusCode 0: no HTTP answer at all (refused, reset, DNS, TLS).
		coded = domain.Errorf(domain.EUNAVAILABLE, "object storage is unavailable")
	default:
		return fmt.Errorf("%s: %w", op, err)
	}
	return fmt.Errorf("%s: %w: %w", op, coded, err)
}
