package web

import (
	"embed"
	"io/fs"
)

// files is the dashboard: the page, its script modules, its stylesheet and
// icon. Every .js file here is one of the page's modules (no build step
// makes them); nothing else in this directory (Go files, tests) is ever
// served.
//
//go:embed index.html *.js app.css favicon.svg
var files embed.FS

// Assets holds index.html, the modules (app.js and those it imports),
// app.css and favicon.svg at its root, with no subdirectory. index.html
// refers to the others as /ui/app.js and so on, and the modules import
// one another by relative path ("./api.js"), so the server must mount
// Assets at /ui/ and serve the modules as text/javascript (browsers refuse
// a module of any other type).
var Assets fs.FS = files

// Prefix is the path under which index.html expects its assets.
const Prefix = "/ui/"
