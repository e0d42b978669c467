package openapi

import (
	"embed"
	"io/fs"
)

// uiFiles holds Swagger UI, vendored from npm by scripts/update-swagger-ui
// (the version is in ui/VERSION), with baton's own index.html and
// initializer. It is embedded so that /docs works on a machine with no
// internet access: the page loads nothing from a CDN.
//
//go:embed ui
var uiFiles embed.FS

// UI is the Swagger UI directory, rooted at ui/ so that callers open
// "index.html" rather than "ui/index.html" and cannot reach anything else
// embedded in this package. The server mounts it at /docs/, and index.html
// names its assets by /docs/ paths.
var UI fs.FS = func() fs.FS {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic(err) // "ui" is a valid path, so this cannot happen
	}
	return sub
}()
