package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestLicense_IsApache2AndEveryPackageSaysSo: the repository carries the
// Apache License 2.0 in LICENSE, and the clients' package metadata name
// it, so that what a registry shows matches the file.
func TestLicense_IsApache2AndEveryPackageSaysSo(t *testing.T) {
	text, err := os.ReadFile("LICENSE")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Apache License", "Version 2.0, January 2004", "TERMS AND CONDITIONS FOR USE, REPRODUCTION, AND DISTRIBUTION", "END OF TERMS AND CONDITIONS"} {
		if !strings.Contains(string(text), want) {
			t.Errorf("LICENSE lacks %q: not the Apache License 2.0", want)
		}
	}
	var pkg struct {
		License string `json:"license"`
	}
	b, err := os.ReadFile("clients/typescript/package.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &pkg); err != nil || pkg.License != "Apache-2.0" {
		t.Errorf("clients/typescript/package.json: license %q (%v), want Apache-2.0", pkg.License, err)
	}
	py, err := os.ReadFile("clients/python/pyproject.toml")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(py), `license = { text = "Apache-2.0" }`) {
		t.Error(`clients/python/pyproject.toml does not say license = { text = "Apache-2.0" }`)
	}
}
