package cli_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/baton-dev/baton/tests/testserver"
)

func TestCLI_MaintenanceRecoverCompactsDefragmentsAndSaysSo(t *testing.T) {
	s := testserver.Start(t)
	out, errs, code := run(t, s.TS.URL, "maintenance", "recover", "-o", "json")
	if code != 0 {
		t.Fatalf("maintenance recover: code %d, %s", code, errs)
	}
	var r struct {
		CompactedRevision int64    `json:"compacted_revision"`
		Defragmented      []string `json:"defragmented"`
		Alarms            []string `json:"alarms"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.CompactedRevision <= 0 || len(r.Defragmented) != 1 || r.Alarms == nil || len(r.Alarms) != 0 {
		t.Fatalf("maintenance recover -o json: %q (%v)", out, err)
	}
	out, errs, code = run(t, s.TS.URL, "maintenance", "recover")
	if code != 0 || !strings.Contains(out, "defragmented") || !strings.Contains(out, "alarms") {
		t.Fatalf("maintenance recover: code %d, out %q, err %q", code, out, errs)
	}
}
