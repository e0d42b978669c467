package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// indexPage stands where the dashboard will be: it tells a newcomer what
// this node serves and how to take a first lock.
const indexPage = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>baton</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:46rem;margin:2rem auto;padding:0 1rem}code,pre{background:#f3f3f3;border-radius:4px}pre{padding:.75rem;overflow:auto}</style>
</head><body>
<h1>baton</h1>
<p>A lock service with fencing tokens, on etcd. This node serves the HTTP API v1.
The live dashboard is not built yet; until then, use the API:</p>
<ul>
<li><a href="/docs">/docs</a> — interactive API documentation (<a href="/openapi.json">OpenAPI 3 document</a>)</li>
<li><a href="/v1/locks">/v1/locks</a> — locks held now</li>
<li><a href="/v1/history">/v1/history</a> — the audit trail, newest first</li>
<li><a href="/v1/cluster">/v1/cluster</a> — etcd members, leader, term, revision</li>
<li><a href="/readyz">/readyz</a>, <a href="/healthz">/healthz</a>, <a href="/metrics">/metrics</a></li>
</ul>
<p>Take a first lock:</p>
<pre>curl -s -X POST localhost:8080/v1/locks/my-job -d '{"owner":"me","ttl":"30s"}'</pre>
</body></html>
`

func index(c echo.Context) error {
	return c.HTML(http.StatusOK, indexPage)
}
