package server_test

import (
	"testing"

	"github.com/baton-dev/baton/client"
	problems "github.com/baton-dev/baton/problem"
	"github.com/baton-dev/baton/server"
)

// Every code the server can answer, its middleware's included, is one of
// package problem's, and the Go client has a sentinel for it.
func TestCodes_EachIsKnownToTheVocabularyAndTheClient(t *testing.T) {
	codes := server.Codes()
	for _, want := range []problems.Code{problems.RateLimited, problems.CrossOrigin, problems.HostNotAllowed, problems.TooManyStreams, problems.LockHeld} {
		found := false
		for _, c := range codes {
			found = found || c == want
		}
		if !found {
			t.Errorf("server.Codes() lacks %q", want)
		}
	}
	for _, code := range codes {
		if _, ok := problems.Lookup(code); !ok {
			t.Errorf("the server answers %q, which package problem does not list", code)
		}
		if client.Sentinel(code) == nil {
			t.Errorf("the server answers %q; the client has no sentinel for it", code)
		}
	}
}
