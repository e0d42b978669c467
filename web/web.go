package web

import (
	"embed"
	"io/fs"
)

// files is the dashboard: the page, its script, its stylesheet and icon.
// Each is named, so nothing else in this directory (Go files, tests) is
// ever served.
//
//go:embed index.html app.js app.css favicon.svg
var files embed.FS

// Assets holds index.html, app.js, app.css and favicon.svg at its root.
// index.html refers to the others as /ui/app.js and so on, so the server
// must mount Assets at /ui/.
var Assets fs.FS = files

// Prefix is the path under which index.html expects its assets.
const Prefix = "/ui/"
