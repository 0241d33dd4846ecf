package k8sdriver

import (
	"context"
	"errors"
	"strings"

	"github.com/slessio/sless/domain"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// mapErr turns an API error into a domain error, naming the operation:
// the codes below are the only ones the driver's callers see.
//
//	NotFound                           ENOTFOUND
//	AlreadyExists, Conflict            ECONFLICT
//	Invalid, BadRequest                EINVALID
//	Forbidden by a ResourceQuota       EUNPROCESSABLE (the tenant is full)
//	Forbidden                          EFORBIDDEN (the control plane's role lacks a verb)
//	Unauthorized                       EUNAUTHORIZED
//	RequestEntityTooLarge              ETOOLARGE
//	TooManyRequests, timeouts, 5xx,
//	transport errors, ctx ended        EUNAVAILABLE
//	anything else                      EINTERNAL
func mapErr(op string, err error) error {
	if err == nil {
		return nil
	}
	var de *domain.Error
	if errors.As(err, &de) {
		return err
	}
	msg := op + ": " + err.Error()
	code := domain.EINTERNAL
	var status apierrors.APIStatus
	switch {
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		code = domain.EUNAVAILABLE
	case apierrors.IsNotFound(err):
		code = domain.ENOTFOUND
	case apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err):
		code = domain.ECONFLICT
	case apierrors.IsInvalid(err) || apierrors.IsBadRequest(err):
		code = domain.EINVALID
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
		code = domain.EUNPROCESSABLE
	case apierrors.IsForbidden(err):
		code = domain.EFORBIDDEN
	case apierrors.IsUnauthorized(err):
		code = domain.EUNAUTHORIZED
	case apierrors.IsRequestEntityTooLargeError(err):
		code = domain.ETOOLARGE
	case apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsUnexpectedServerError(err):
		code = domain.EUNAVAILABLE
	case !errors.As(err, &status):
		code = domain.EUNAVAILABLE // no answer from the API server at all
	}
	return &domain.Error{Code: code, Message: msg}
}

// ignoreNotFound drops a NotFound error: deleting what is gone succeeded.
func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
