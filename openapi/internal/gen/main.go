// Command gen writes openapi.json and openapi.yaml into the current
// directory (package openapi) from the swag annotations of package api.
// It runs from go generate; see openapi/openapi.go.
package main

import (
	"log"
	"os"

	"github.com/baton-dev/baton/openapi/internal/spec"
)

func main() {
	j, y, err := spec.Build("..")
	if err != nil {
		log.Fatalf("generate OpenAPI document: %v", err)
	}
	if err := os.WriteFile("openapi.json", j, 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile("openapi.yaml", y, 0o644); err != nil {
		log.Fatal(err)
	}
}
