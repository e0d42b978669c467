package server

import (
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/baton-dev/baton/api"
	"github.com/baton-dev/baton/auth"
	"github.com/baton-dev/baton/openapi"
)

// ownRoutes are the server's rows beside the API's: for people (the
// dashboard, the docs and the OpenAPI document are static files that call
// the API, which checks the caller) and for Prometheus. None checks its
// query: pages and scrapers are not API clients.
func ownRoutes(gather prometheus.Gatherer) []api.Route {
	return slices.Concat([]api.Route{
		{Method: http.MethodGet, Path: "/metrics", Handler: metrics(promhttp.HandlerFor(gather, promhttp.HandlerOpts{})), Role: auth.Read, AnyQuery: true},
		{Method: http.MethodGet, Path: "/openapi.json", Handler: openapiDoc("application/json", openapi.JSON), Open: true, AnyQuery: true},
		{Method: http.MethodGet, Path: "/openapi.yaml", Handler: openapiDoc("application/yaml", openapi.YAML), Open: true, AnyQuery: true},
	}, dashboardRoutes(), docsRoutes())
}

// routeKey is a route as echo matched it: the method and the path
// template (echo.Context.Path).
type routeKey struct{ method, path string }

// routeTable finds a request's row once echo has routed it. A request
// that matched no route (404, 405) has none.
type routeTable map[routeKey]*api.Route

func newRouteTable(routes []api.Route) routeTable {
	t := make(routeTable, len(routes))
	for i := range routes {
		r := &routes[i]
		k := routeKey{r.Method, r.Path}
		if t[k] != nil {
			panic(fmt.Sprintf("server: route %s %s is declared twice", r.Method, r.Path))
		}
		t[k] = r
	}
	return t
}

// of is the row of c's route, or nil.
func (t routeTable) of(c echo.Context) *api.Route {
	return t[routeKey{c.Request().Method, c.Path()}]
}

// checkRegistered panics on a route of e that is not a row of t: every
// route goes through the table (api.Register), so that authentication
// knows who may call it; one added to e directly would be served to
// anyone.
func (t routeTable) checkRegistered(e *echo.Echo) {
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound || strings.HasPrefix(r.Name, "github.com/labstack") {
			continue
		}
		if t[routeKey{r.Method, r.Path}] == nil {
			panic(fmt.Sprintf("server: route %s %s is not in the route table (api.Register it)", r.Method, r.Path))
		}
	}
}

// Routes returns the rows of every route s serves: the API's and the
// server's own.
func (s *Server) Routes() []api.Route { return slices.Clone(s.routes) }
