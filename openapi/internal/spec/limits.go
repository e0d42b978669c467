package spec

import (
	"fmt"
	"slices"
	"strings"

	"github.com/getkin/kin-openapi/openapi3"
)

// The bounds of the request contract that swag cannot write: it has no
// pattern, maxProperties or additionalProperties: false. The others
// (lengths, page sizes, a lock set's 2 to 64 names, a semaphore's limit)
// are swag annotations in package api. Each is what the server enforces,
// no more: api's TestSchemaLimits_AgreeWithTheServer sends a request just
// inside and just outside each one to a real server.
const (
	// namePattern is a name of a lock, election, semaphore, read/write
	// lock or fenced resource (lock.ValidName).
	namePattern = `^[A-Za-z0-9._:-]{1,128}$`
	// prefixPattern is a listing's name prefix: a name's beginning, or
	// nothing.
	prefixPattern = `^[A-Za-z0-9._:-]{0,128}$`
	// durationPattern is what Go's time.ParseDuration reads: 0, or
	// numbers each with a unit ("1h30m", "1.5s", "500ms"), with a sign or
	// not. The server then refuses a negative one and one beyond its
	// field's bounds, which the field's description gives.
	durationPattern = `^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+)$`
	// maxMetadataPairs is the pairs a hold's metadata may have; their
	// 4 KiB bound is in bytes, which JSON Schema cannot count, and is in
	// the description only.
	maxMetadataPairs = 16
)

// nameListings are the listings whose prefix is a name's beginning (a
// session listing's is its owner's, any printable characters).
var nameListings = []string{"/v1/locks", "/v1/elections", "/v1/semaphores", "/v1/rwlocks"}

// durations are the request members that are Go durations.
var durations = []string{"ttl", "wait", "lock_delay"}

// limit writes the bounds above into doc: every path parameter that is a
// name, every name listing's prefix, and every request body schema.
// Request bodies are closed (additionalProperties: false) because the
// server refuses an unknown member with a 400 naming it (api.decodeBody);
// response schemas stay open, so that clients take members added later.
func limit(doc *openapi3.T) error {
	bodies := map[string]*openapi3.Schema{}
	for _, path := range sortedPaths(doc) {
		for method, op := range doc.Paths.Value(path).Operations() {
			for _, p := range op.Parameters {
				v := p.Value
				switch {
				case v.In == "path" && (v.Name == "name" || v.Name == "resource"):
					v.Schema.Value.Pattern = namePattern
				case v.In == "query" && v.Name == "prefix" && slices.Contains(nameListings, path):
					v.Schema.Value.Pattern = prefixPattern
				}
			}
			if op.RequestBody == nil {
				continue
			}
			mt := op.RequestBody.Value.Content.Get(mimeJSON)
			if mt == nil || mt.Schema == nil || !strings.HasPrefix(mt.Schema.Ref, "#/components/schemas/") {
				return fmt.Errorf("%s %s: the request body is no JSON schema of the components", method, path)
			}
			bodies[mt.Schema.Ref] = mt.Schema.Value
		}
	}
	closed := false
	for ref, s := range bodies {
		s.AdditionalProperties = openapi3.AdditionalProperties{Has: &closed}
		for name, p := range s.Properties {
			switch {
			case slices.Contains(durations, name):
				p.Value.Pattern = durationPattern
			case name == "metadata":
				n := uint64(maxMetadataPairs)
				p.Value.MaxProps = &n
			case name == "names":
				if p.Value.Items == nil || p.Value.Items.Value == nil {
					return fmt.Errorf("%s: names has no items", ref)
				}
				p.Value.Items.Value.Pattern = namePattern
			}
		}
	}
	return nil
}
