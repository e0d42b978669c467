// Package jsonw writes JSON by hand, byte for byte as encoding/json
// writes it (HTML escaping on, map keys sorted), for the answers of the
// hot routes, and pools the buffers they and request bodies are read
// into. The api package's tests compare its output with encoding/json's
// on every field, escapes and invalid UTF-8 included.
package jsonw
