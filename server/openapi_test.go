package server_test

import (
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/openapi"
	"github.com/baton-dev/baton/server"
	"github.com/baton-dev/baton/tests/testserver"
)

// forPeople are routes served to browsers, not to API clients.
var forPeople = map[string]bool{"/": true, "/docs": true, "/docs/": true, "/docs/*": true, "/openapi.json": true, "/openapi.yaml": true, "/ui/*": true}

// TestOpenAPI_DocumentsEveryRouteAndNoOther compares the server's routes
// with the document's operations, both ways.
func TestOpenAPI_DocumentsEveryRouteAndNoOther(t *testing.T) {
	s := testserver.Start(t)
	e := server.New(server.Config{Engine: s.Eng, Trail: s.Trail}).Handler().(*echo.Echo)
	doc, err := openapi3.NewLoader().LoadFromData(openapi.JSON)
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	served := map[string]bool{}
	for _, r := range e.Routes() {
		if forPeople[r.Path] || r.Method == echo.RouteNotFound || strings.HasPrefix(r.Name, "github.com/labstack") {
			continue
		}
		key := r.Method + " " + api.DocPath(r.Path)
		served[key] = true
		if !documented[key] {
			t.Errorf("route %s is served but not in the OpenAPI document", key)
		}
	}
	for key := range documented {
		if !served[key] {
			t.Errorf("operation %s is documented but not served", key)
		}
	}
}
