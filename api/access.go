package api

import "github.com/baton-dev/baton/api/internal/scope"

// AccessKey is the echo context key under which authentication leaves the
// request's credential (*auth.Credential, shared: never changed) for the
// handlers, whose rules decide each name the request touches (package
// api/internal/scope). It is unset when authentication is off: then every
// name is allowed.
const AccessKey = scope.Key
