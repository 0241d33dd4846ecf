package wire_test

import (
	"net/http"
	"testing"

	"github.com/slessio/sless/domain"
	"github.com/slessio/sless/httpapi/wire"
)

// TestEveryCodeHasItsStatus walks every error code: each has its own status,
// and the status leads back to it.
func TestEveryCodeHasItsStatus(t *testing.T) {
	seen := map[int]string{}
	for _, code := range domain.ErrorCodes {
		status := wire.StatusOf(code)
		if status == http.StatusInternalServerError && code != domain.EINTERNAL {
			t.Errorf("%s has no status of its own", code)
		}
		if other, dup := seen[status]; dup {
			t.Errorf("%s and %s share status %d", code, other, status)
		}
		seen[status] = code
		if back := wire.CodeOf(status); back != code {
			t.Errorf("status %d of %s maps back to %q", status, code, back)
		}
	}
	if wire.StatusOf("NO_SUCH_CODE") != http.StatusInternalServerError {
		t.Error("an unknown code must answer 500")
	}
}
