package server_test

import (
	"bytes"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"sigs.k8s.io/yaml"

	"github.com/baton-dev/baton/tests/testserver"
)

// alertRules is the shape of a Prometheus rule file.
type alertRules struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []struct {
			Alert       string            `json:"alert"`
			Expr        string            `json:"expr"`
			For         string            `json:"for"`
			Labels      map[string]string `json:"labels"`
			Annotations map[string]string `json:"annotations"`
		} `json:"rules"`
	} `json:"groups"`
}

// seriesName finds the metric names in a PromQL expression. A regular
// expression and not Prometheus's own parser: that one comes with the
// whole Prometheus module, far too much to pull in for a test. baton's
// and etcd's names have prefixes no PromQL keyword or function has, so
// the match is exact enough; the names of other exporters ("up") are
// not checked.
var seriesName = regexp.MustCompile(`\b(?:baton|etcd)_[a-zA-Z0-9_]*[a-zA-Z0-9]`)

// TestAlerts_EverySeriesTheRulesNameExists keeps docs/alerts.yml (and the
// copy in docs/OPERATIONS.md) from naming series that a node does not
// export: a misspelt or renamed metric makes an alert that never fires.
func TestAlerts_EverySeriesTheRulesNameExists(t *testing.T) {
	raw, err := os.ReadFile("../docs/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules alertRules
	if err := yaml.UnmarshalStrict(raw, &rules); err != nil {
		t.Fatalf("docs/alerts.yml: %v", err)
	}
	doc, err := os.ReadFile("../docs/OPERATIONS.md")
	if err != nil {
		t.Fatal(err)
	}

	exists := seriesOnMetrics(t)
	alerts, checked := 0, map[string]bool{}
	for _, g := range rules.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: want a name and rules", g.Name)
		}
		for _, rule := range g.Rules {
			alerts++
			if rule.Alert == "" || strings.TrimSpace(rule.Expr) == "" {
				t.Errorf("group %s: a rule without alert name or expr: %+v", g.Name, rule)
				continue
			}
			if rule.Labels["severity"] != "warning" && rule.Labels["severity"] != "critical" {
				t.Errorf("%s: severity %q, want warning or critical", rule.Alert, rule.Labels["severity"])
			}
			if rule.Annotations["summary"] == "" || rule.Annotations["description"] == "" {
				t.Errorf("%s: want a summary and a description", rule.Alert)
			}
			if !bytes.Contains(doc, []byte(rule.Alert)) {
				t.Errorf("%s is not explained in docs/OPERATIONS.md", rule.Alert)
			}
			for _, name := range seriesName.FindAllString(rule.Expr, -1) {
				checked[name] = true
				if !exists(name) {
					t.Errorf("%s: series %s is not on /metrics", rule.Alert, name)
				}
			}
		}
	}
	if alerts < 10 {
		t.Errorf("%d alert rules parsed, want the dozen or so of docs/alerts.yml", alerts)
	}
	// The doc shows the rules as they are in the file, not an older set.
	if i := bytes.Index(raw, []byte("groups:")); i < 0 || !bytes.Contains(doc, raw[i:]) {
		t.Errorf("docs/OPERATIONS.md does not quote docs/alerts.yml from \"groups:\" on, as it is")
	}
	for _, name := range []string{"baton_etcd_has_leader", "baton_renew_failures_total", "etcd_disk_wal_fsync_duration_seconds_bucket"} {
		if !checked[name] {
			t.Errorf("no rule names %s; the test's expectations are stale", name)
		}
	}
	var names []string
	for n := range checked {
		names = append(names, n)
	}
	sort.Strings(names)
	t.Logf("series checked: %s", strings.Join(names, " "))
}

// seriesOnMetrics reports whether a series of that name is on a server's
// /metrics, after some traffic so that the series with dynamic labels
// exist too.
func seriesOnMetrics(t *testing.T) func(name string) bool {
	s := testserver.Start(t)
	testserver.WantStatus(t, s.Do("POST", "/v1/locks/a", `{"owner":"w1"}`), http.StatusCreated)
	testserver.WantStatus(t, s.Do("GET", "/v1/locks/nobody", ""), http.StatusNotFound)
	r := s.Do("GET", "/metrics", "")
	testserver.WantStatus(t, r, http.StatusOK)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(r.Body))
	if err != nil {
		t.Fatalf("parse /metrics: %v", err)
	}
	return func(name string) bool {
		if _, ok := fams[name]; ok {
			return true
		}
		// A histogram's series are NAME_bucket, NAME_sum and NAME_count.
		for _, suffix := range []string{"_bucket", "_sum", "_count"} {
			if base, ok := strings.CutSuffix(name, suffix); ok {
				if f, ok := fams[base]; ok && (f.GetType().String() == "HISTOGRAM" || f.GetType().String() == "SUMMARY") {
					return true
				}
			}
		}
		return false
	}
}
