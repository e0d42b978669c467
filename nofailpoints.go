//go:build !failpoints

package main

import "github.com/baton-dev/baton/node"

// armFailpoints arms nothing: failpoints exist only in a binary built
// with -tags failpoints (failpoints.go).
func armFailpoints(*node.Node) (disarm func()) { return func() {} }
