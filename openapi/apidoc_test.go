package openapi_test

import (
	"encoding/json"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/baton-dev/baton/openapi"
	"github.com/baton-dev/baton/problem"
)

// apiDoc is the API reference in the project's words, which this file
// holds to the generated document and to package problem.
const apiDoc = "../docs/API.md"

// routeHeading is a route's heading in docs/API.md: "### POST /v1/locks/{name}".
var routeHeading = regexp.MustCompile(`^### (GET|HEAD|POST|PUT|PATCH|DELETE|OPTIONS) (/\S*)$`)

// TestAPIDoc_NamesEveryOperation: every operation of openapi.json has its
// heading in docs/API.md, and every route heading there is an operation,
// so the reference can neither miss a route nor describe one that is gone.
func TestAPIDoc_NamesEveryOperation(t *testing.T) {
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(openapi.JSON, &doc); err != nil {
		t.Fatal(err)
	}
	inSpec := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			inSpec[strings.ToUpper(method)+" "+path] = true
		}
	}
	inDoc := map[string]bool{}
	for _, line := range strings.Split(readAPIDoc(t), "\n") {
		if m := routeHeading.FindStringSubmatch(strings.TrimRight(line, " ")); m != nil {
			op := m[1] + " " + m[2]
			if inDoc[op] {
				t.Errorf("docs/API.md: heading %q appears twice", "### "+op)
			}
			inDoc[op] = true
		}
	}
	for _, op := range sortedKeys(inSpec) {
		if !inDoc[op] {
			t.Errorf("docs/API.md has no heading %q for an operation of openapi.json", "### "+op)
		}
	}
	for _, op := range sortedKeys(inDoc) {
		if !inSpec[op] {
			t.Errorf("docs/API.md has a heading %q that openapi.json has no operation for (run go generate ./openapi, or remove the section)", "### "+op)
		}
	}
}

// TestAPIDoc_ErrorsNameEveryCode: the Errors section of docs/API.md names
// every code of package problem, as `code`, with the status the code
// answers.
func TestAPIDoc_ErrorsNameEveryCode(t *testing.T) {
	errs := section(readAPIDoc(t), "Errors")
	if errs == "" {
		t.Fatal(`docs/API.md has no "## Errors" section`)
	}
	for _, info := range problem.All() {
		row := tableRow(errs, "`"+string(info.Code)+"`")
		if row == "" {
			t.Errorf("docs/API.md, Errors: no table row for code %q (%d %s)", info.Code, info.Status, info.Title)
			continue
		}
		if status := cell(row, 1); !strings.Contains(status, strconv.Itoa(info.Status)) {
			t.Errorf("docs/API.md, Errors: code %q has status %q, package problem says %d", info.Code, status, info.Status)
		}
		if retry := cell(row, 2); retry != info.Retry.String() {
			t.Errorf("docs/API.md, Errors: code %q has retry %q, package problem says %q", info.Code, retry, info.Retry)
		}
		if exit := cell(row, 3); exit != strconv.Itoa(info.Exit) {
			t.Errorf("docs/API.md, Errors: code %q has exit %q, package problem says %d", info.Code, exit, info.Exit)
		}
	}
}

func readAPIDoc(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(apiDoc)
	if err != nil {
		t.Fatalf("the API reference: %v", err)
	}
	return string(b)
}

// section returns the text under the "## title" heading, up to the next
// heading of that level.
func section(doc, title string) string {
	_, rest, ok := strings.Cut(doc, "\n## "+title+"\n")
	if !ok {
		return ""
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// tableRow returns the table row of text whose first cell is first.
func tableRow(text, first string) string {
	for _, line := range strings.Split(text, "\n") {
		if cell(line, 0) == first {
			return line
		}
	}
	return ""
}

// cell returns the i-th cell of a Markdown table row, trimmed; "" when
// line is no row or has fewer cells.
func cell(line string, i int) string {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "|") {
		return ""
	}
	cells := strings.Split(strings.Trim(line, "|"), "|")
	if i >= len(cells) {
		return ""
	}
	return strings.TrimSpace(cells[i])
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
