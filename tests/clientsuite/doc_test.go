// Package clientsuite_test holds the Go client's tests against a real
// baton: an embedded etcd and the server in this process, every response
// checked against the OpenAPI document (tests/contract). They live in
// the server's module, not in the client's (client/go.mod), so that a
// program importing the client takes none of the server's dependencies.
package clientsuite_test
