package lock

import (
	"github.com/baton-dev/baton/lock/internal/core"
)

// AcquireRequest asks for a lock (lock/internal/core/acquire.go documents
// its fields).
type AcquireRequest = core.AcquireRequest
