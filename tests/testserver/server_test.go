package testserver_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/baton-dev/baton/tests/testserver"
)

// TestWrittenSince_ListsWhatARequestWroteAndNothingElse: an acquire's
// lock key is among what it wrote; a refused request wrote nothing, though
// the bookkeeping cursors under /baton/meta/ may move meanwhile.
func TestWrittenSince_ListsWhatARequestWroteAndNothingElse(t *testing.T) {
	s := testserver.Start(t)
	before := s.Revision()
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/job", `{"owner":"w1","ttl":"30s"}`), http.StatusCreated)
	if w := s.WrittenSince(before); !slices.Contains(w, "/baton/locks/job") {
		t.Errorf("an acquire wrote %q, without /baton/locks/job", w)
	}
	before = s.Revision()
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/job", `{"owner":"w2","ttl":"30s","wait":"0s"}`), http.StatusConflict)
	if w := s.WrittenSince(before); len(w) > 0 {
		t.Errorf("a refused acquire wrote %q", w)
	}
}
