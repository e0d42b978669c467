package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	etcderrors "go.etcd.io/etcd/server/v3/etcdserver/errors"
	"go.etcd.io/etcd/server/v3/lease"
	"go.etcd.io/etcd/server/v3/storage/mvcc"
	"go.etcd.io/raft/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// unknownStatus is what v3rpc's togRPCError makes of a server error that
// its table does not map: code Unknown and the error's message.
func unknownStatus(err error) error { return status.Error(codes.Unknown, err.Error()) }

// overTheWire is grpcErr as a client receives it from a remote member: a
// status rebuilt from the code and message that went over the wire (equal
// to grpcErr, not the same value), converted by etcd's client.
func overTheWire(grpcErr error) error {
	return clientv3.ContextError(context.Background(), status.ErrorProto(status.Convert(grpcErr).Proto()))
}

// inProcess is grpcErr, the error v3rpc's server handed back, as the
// in-process client (v3client) returns it: the very value, converted by
// etcd's client.
func inProcess(grpcErr error) error { return clientv3.ContextError(context.Background(), grpcErr) }

// The classification over every error etcd returns while a leader
// changes, a member restarts or the quorum is lost, in each form the
// engine meets it. server is the error inside etcd; grpc what the member
// sends for it (v3rpc's togRPCError, server/etcdserver/api/v3rpc/util.go,
// or an interceptor); interceptorOnly marks errors that only etcd's gRPC
// interceptors return, which the in-process client never sees.
func TestIsUnavailable(t *testing.T) {
	tests := etcdErrorCases()
	for _, tt := range tests {
		forms := map[string]error{"grpc": overTheWire(tt.grpc)}
		if !tt.interceptorOnly {
			forms["in-process"] = inProcess(tt.grpc)
		}
		if tt.server != nil && (errors.Is(tt.server, context.DeadlineExceeded) || errors.Is(tt.server, context.Canceled)) {
			// The client's own context ending: clientv3 returns ctx.Err().
			forms["in-process"] = tt.server
		}
		if tt.name == "compacted" {
			// What a compacted watch's WatchResponse.Err returns.
			forms["watch"] = rpctypes.ErrCompacted
		}
		for form, err := range forms {
			for _, wrapped := range []bool{false, true} {
				if wrapped {
					err = fmt.Errorf("acquire %q: grant lease: %w", "x", err)
				}
				t.Run(fmt.Sprintf("%s/%s/wrapped=%v", tt.name, form, wrapped), func(t *testing.T) {
					if got := IsUnavailable(err); got != tt.unavailable {
						t.Errorf("IsUnavailable(%T %v) = %v, want %v", err, err, got, tt.unavailable)
					}
					if got := NotApplied(err); got != tt.notApplied {
						t.Errorf("NotApplied(%T %v) = %v, want %v", err, err, got, tt.notApplied)
					}
					e := NewEtcd(nil, nil, time.Second, context.Background(), nil)
					mapped := e.Err(context.Background(), "acquire txn", err)
					if tt.name == "no space" {
						// A fault that a retry does not clear: 507, not 503.
						if !errors.Is(mapped, ErrNoSpace) || errors.Is(mapped, ErrUnavailable) {
							t.Errorf("etcdErr(%v) = %v, want ErrNoSpace alone", err, mapped)
						}
						return
					}
					if got := errors.Is(mapped, ErrUnavailable); got != tt.unavailable {
						t.Errorf("etcdErr(%v) is ErrUnavailable: %v, want %v", err, got, tt.unavailable)
					}
				})
			}
		}
	}
}

// The lease-not-found answer in each form etcd's client returns it:
// KeepAliveOnce makes rpctypes.ErrLeaseNotFound of a TTL of 0 itself.
func TestIsLeaseNotFound(t *testing.T) {
	for name, err := range map[string]error{
		"grpc":       overTheWire(rpctypes.ErrGRPCLeaseNotFound),
		"in-process": inProcess(rpctypes.ErrGRPCLeaseNotFound),
		"keep-alive": rpctypes.ErrLeaseNotFound,
		"wrapped":    fmt.Errorf("renew: %w", overTheWire(rpctypes.ErrGRPCLeaseNotFound)),
	} {
		if !IsLeaseNotFound(err) {
			t.Errorf("%s: IsLeaseNotFound(%v) = false", name, err)
		}
		if IsUnavailable(err) {
			t.Errorf("%s: IsUnavailable(%v) = true", name, err)
		}
	}
	for _, err := range []error{nil, rpctypes.ErrGRPCNoLeader, errors.New("etcdserver: requested lease not found, or not")} {
		if IsLeaseNotFound(err) {
			t.Errorf("IsLeaseNotFound(%v) = true", err)
		}
	}
}

// etcdErrorCase is one error etcd returns, and how the engine must take it.
type etcdErrorCase struct {
	name            string
	server          error
	grpc            error
	interceptorOnly bool
	unavailable     bool
	notApplied      bool
}

// etcdErrorCases are TestIsUnavailable's table.
func etcdErrorCases() []etcdErrorCase {
	return []etcdErrorCase{
		// A leader change.
		{name: "proposal dropped", server: raft.ErrProposalDropped, grpc: unknownStatus(raft.ErrProposalDropped), unavailable: true, notApplied: true},
		{name: "lessor not primary", server: lease.ErrNotPrimary, grpc: unknownStatus(lease.ErrNotPrimary), unavailable: true, notApplied: true},
		{name: "leader changed", server: etcderrors.ErrLeaderChanged, grpc: rpctypes.ErrGRPCLeaderChanged, unavailable: true},
		{name: "not leader", server: etcderrors.ErrNotLeader, grpc: rpctypes.ErrGRPCNotLeader, unavailable: true},
		{name: "no leader", server: etcderrors.ErrNoLeader, grpc: rpctypes.ErrGRPCNoLeader, unavailable: true},
		{name: "no leader (require-leader check)", grpc: rpctypes.ErrGRPCNoLeader, interceptorOnly: true, unavailable: true},
		{name: "timeout, leader transfer", server: etcderrors.ErrTimeoutLeaderTransfer, grpc: unknownStatus(etcderrors.ErrTimeoutLeaderTransfer), unavailable: true},
		// Timeouts: the request may have been applied.
		{name: "timeout", server: etcderrors.ErrTimeout, grpc: rpctypes.ErrGRPCTimeout, unavailable: true},
		{name: "timeout, leader failed", server: etcderrors.ErrTimeoutDueToLeaderFail, grpc: rpctypes.ErrGRPCTimeoutDueToLeaderFail, unavailable: true},
		{name: "timeout, connection lost", server: etcderrors.ErrTimeoutDueToConnectionLost, grpc: rpctypes.ErrGRPCTimeoutDueToConnectionLost, unavailable: true},
		{name: "timeout, applied index", server: etcderrors.ErrTimeoutWaitAppliedIndex, grpc: rpctypes.ErrGRPCTimeoutWaitAppliedIndex, unavailable: true},
		{name: "canceled", server: etcderrors.ErrCanceled, grpc: rpctypes.ErrGRPCCanceled, unavailable: true},
		{name: "context deadline", server: context.DeadlineExceeded, grpc: rpctypes.ErrGRPCDeadlineExceeded, unavailable: true},
		// A member stopping or starting.
		{name: "server stopped", server: etcderrors.ErrStopped, grpc: rpctypes.ErrGRPCStopped, unavailable: true},
		{name: "raft stopped", server: raft.ErrStopped, grpc: unknownStatus(raft.ErrStopped), unavailable: true},
		{name: "not capable", grpc: rpctypes.ErrGRPCNotCapable, interceptorOnly: true, unavailable: true, notApplied: true},
		{name: "connection refused", grpc: status.Error(codes.Unavailable, "connection error: desc = \"transport: Error while dialing: dial tcp 127.0.0.1:2379: connect: connection refused\""), interceptorOnly: true, unavailable: true},
		// A lost quorum, an overloaded or full cluster.
		{name: "unhealthy", server: etcderrors.ErrUnhealthy, grpc: rpctypes.ErrGRPCUnhealthy, unavailable: true},
		{name: "too many requests", server: etcderrors.ErrTooManyRequests, grpc: rpctypes.ErrTooManyRequests, unavailable: true},
		{name: "no space", server: etcderrors.ErrNoSpace, grpc: rpctypes.ErrGRPCNoSpace, unavailable: true},
		// A watch resumed from a revision compacted meanwhile.
		{name: "compacted", server: mvcc.ErrCompacted, grpc: rpctypes.ErrGRPCCompacted, unavailable: true},
		// Answers, not trouble: they must reach the caller as they are.
		{name: "lease not found", server: lease.ErrLeaseNotFound, grpc: rpctypes.ErrGRPCLeaseNotFound},
		{name: "duplicate key", grpc: rpctypes.ErrGRPCDuplicateKey},
		{name: "too many ops", grpc: rpctypes.ErrGRPCTooManyOps},
		{name: "request too large", server: etcderrors.ErrRequestTooLarge, grpc: rpctypes.ErrGRPCRequestTooLarge},
		{name: "future revision", server: mvcc.ErrFutureRev, grpc: rpctypes.ErrGRPCFutureRev},
		{name: "permission denied", grpc: rpctypes.ErrGRPCPermissionDenied},
		{name: "corrupt", server: etcderrors.ErrCorrupt, grpc: rpctypes.ErrGRPCCorrupt},
		{name: "unknown server error", server: errors.New("boom"), grpc: unknownStatus(errors.New("boom"))},
	}
}
