package cli_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestSessionsList_PagesFiltersByOwnerAndPrintsJSON: `baton sessions
// list` stops at --limit, filters by --prefix and prints the API's shape
// with -o json.
func TestSessionsList_PagesFiltersByOwnerAndPrintsJSON(t *testing.T) {
	eng, addr := startServer(t)
	ctx := context.Background()
	var wantIDs []string
	for _, o := range []string{"svc-b", "svc-a", "other", "svc-c"} {
		s, err := eng.CreateSession(ctx, o, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(o, "svc-") {
			wantIDs = append(wantIDs, s.ID)
		}
	}
	out, errs, code := run(t, addr, "sessions", "list", "--prefix", "svc-", "-o", "json")
	var got []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &got) != nil {
		t.Fatalf("sessions list -o json: code %d, %q %s", code, out, errs)
	}
	var owners, ids []string
	for _, s := range got {
		owners = append(owners, s["owner"].(string))
		ids = append(ids, s["id"].(string))
		if s["ttl"] != "1m0s" || s["expires_at"] == nil || s["created_at"] == nil {
			t.Errorf("listed %v, want ttl 1m0s and both times", s)
		}
		if _, ok := s["locks"]; ok {
			t.Errorf("listed %v has locks; a listing reads none", s)
		}
	}
	slices.Sort(ids)
	slices.Sort(wantIDs)
	if !slices.Equal(owners, []string{"svc-a", "svc-b", "svc-c"}) || !slices.Equal(ids, wantIDs) {
		t.Errorf("listed owners %v ids %v, want svc-a, svc-b, svc-c with %v", owners, ids, wantIDs)
	}

	out, errs, code = run(t, addr, "sessions", "list", "--limit", "2")
	if lines := strings.Split(strings.TrimSpace(out), "\n"); code != 0 || len(lines) != 3 || !strings.HasPrefix(lines[0], "ID") ||
		!strings.Contains(lines[1], "other") || !strings.Contains(lines[2], "svc-a") {
		t.Fatalf("sessions list --limit 2: code %d, %q %s; want a header, other and svc-a", code, out, errs)
	}
	if _, errs, code := run(t, addr, "sessions", "list", "--limit", "0"); code != 2 {
		t.Fatalf("sessions list --limit 0: code %d, %s; want a usage error (2)", code, errs)
	}
}
