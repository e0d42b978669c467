package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Every form in which etcd's NOSPACE reaches the engine is NOSPACE, and
// none of them is taken for unavailability first; other
// ResourceExhausted errors stay unavailable.
func TestIsNoSpace_EveryFormEtcdSendsIt(t *testing.T) {
	e := NewEtcd(nil, nil, time.Second, t.Context(), nil)
	for name, err := range map[string]error{
		"client error":        rpctypes.ErrNoSpace,
		"gRPC status":         rpctypes.ErrGRPCNoSpace,
		"status off the wire": status.Error(codes.ResourceExhausted, "etcdserver: mvcc: database space exceeded"),
		"converted by client": clientv3.ContextError(t.Context(), rpctypes.ErrGRPCNoSpace),
		"wrapped":             fmt.Errorf("txn: %w", rpctypes.ErrNoSpace),
	} {
		if !IsNoSpace(err) {
			t.Errorf("%s (%v): not NOSPACE", name, err)
		}
		if got := e.Err(t.Context(), "write", err); !errors.Is(got, ErrNoSpace) || errors.Is(got, ErrUnavailable) {
			t.Errorf("%s: etcdErr = %v, want ErrNoSpace alone", name, got)
		}
	}
	other := status.Error(codes.ResourceExhausted, "grpc: received message larger than max")
	if IsNoSpace(other) || !IsUnavailable(other) {
		t.Errorf("%v: NOSPACE %v, unavailable %v; want unavailable only", other, IsNoSpace(other), IsUnavailable(other))
	}
}
