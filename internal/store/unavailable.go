package store

import (
	"context"
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	etcderrors "go.etcd.io/etcd/server/v3/etcdserver/errors"
	"go.etcd.io/etcd/server/v3/lease"
	"go.etcd.io/raft/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// What etcd answers while it cannot serve for now (a leader change, a
// member restarting, a lost quorum), and which of those answers say that
// nothing was written.
//
// The engine sees etcd's errors in three forms:
//   - over gRPC, the status the server sent (the rpctypes.ErrGRPC* values,
//     or code Unknown with the server error's message), which etcd's client
//     turns into an rpctypes.EtcdError when it knows the message
//     (clientv3.ContextError);
//   - through the in-process client (v3client), the server error as v3rpc's
//     togRPCError converts it (server/etcdserver/api/v3rpc/util.go): the
//     same ErrGRPC* values for the errors in its table, a status with code
//     Unknown and only the message for any other; then the client's same
//     conversion. etcd's gRPC interceptors (ErrGRPCNotCapable, the
//     require-leader check) do not run on this path;
//   - the op context's own error, when OpTimeout passes, a term ends (see
//     Etcd.Op) or the engine closes.
//
// Codes and exported values are matched wherever etcd gives one. A few
// errors have neither in togRPCError's table: raft's ErrProposalDropped
// and ErrStopped, the lessor's ErrNotPrimary and etcdserver's
// ErrTimeoutLeaderTransfer. They reach the client, in-process and over
// gRPC alike, as code Unknown with the message alone, so for them the
// message is the only stable thing: it is compared with the exported
// error's own text (never a copy of it), and TestIsUnavailable fails if
// etcd ever changes how they arrive.

// IsUnavailable reports whether err is etcd failing to serve for now: no
// leader, a leader change, a timeout, a member stopping or starting, a
// lost connection, a full backend, a watch resumed from a compacted
// revision. Such a request may be retried, and its caller gets
// ErrUnavailable (503 with Retry-After); whether it took effect is unknown
// unless NotApplied says it did not.
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, errNoLeader) {
		return true
	}
	switch codeOf(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.ResourceExhausted:
		// No leader, leader changed, server stopped, the timeouts,
		// unhealthy cluster, too many requests, no space, a connection
		// refused or lost.
		return true
	}
	if isEtcdErr(err, rpctypes.ErrGRPCNotLeader) || isEtcdErr(err, rpctypes.ErrGRPCCompacted) {
		// A request that raced a leader change on a member that just
		// stopped leading; a watch resumed from a revision compacted
		// while it was away. Both carry codes (FailedPrecondition,
		// OutOfRange) that also mean real refusals, so the value is
		// matched, not the code.
		return true
	}
	return NotApplied(err) || isUnknownWith(err, raft.ErrStopped) || isUnknownWith(err, etcderrors.ErrTimeoutLeaderTransfer)
}

// NotApplied reports whether err says that etcd refused the request
// before it could take effect, so that sending it again cannot apply it
// twice:
//   - raft dropped the proposal (raft.ErrProposalDropped): the member knew
//     no leader, or leadership was being transferred. It never entered the
//     log. (etcd's server packages export no error of their own for it.)
//   - the lessor is not primary (lease.ErrNotPrimary): a keep-alive
//     reached a member that still thought it led, and whose leadership
//     check failed; nothing was renewed.
//   - the gRPC layer refused the call before any handler ran
//     (rpctypes.ErrGRPCNotCapable: the member does not know the cluster's
//     version yet, as just after a restart).
//   - it was never sent: the embedded member knew no leader (CheckLeader's
//     error; see retry).
//
// Every error NotApplied accepts, IsUnavailable accepts.
func NotApplied(err error) bool {
	if err == nil {
		return false
	}
	return errors.Is(err, errNoLeader) || isUnknownWith(err, raft.ErrProposalDropped) || isUnknownWith(err, lease.ErrNotPrimary) ||
		isEtcdErr(err, rpctypes.ErrGRPCNotCapable)
}

// TooLarge reports whether etcd refused a txn for its size (its
// --max-txn-ops or --max-request-bytes): checked when the request is
// received, so nothing of it was applied.
func TooLarge(err error) bool {
	return err != nil && (isEtcdErr(err, rpctypes.ErrGRPCTooManyOps) || isEtcdErr(err, rpctypes.ErrGRPCRequestTooLarge))
}

// IsLeaseNotFound reports whether err says the lease does not exist (it
// expired or was revoked), in each of the forms above.
func IsLeaseNotFound(err error) bool {
	return err != nil && (isEtcdErr(err, rpctypes.ErrGRPCLeaseNotFound) || errors.Is(err, lease.ErrLeaseNotFound))
}

// statusOf returns the gRPC status that err is or wraps, with its own
// message (status.FromError would give a wrapped one the whole chain's).
func statusOf(err error) (*status.Status, bool) {
	var gs interface{ GRPCStatus() *status.Status }
	if errors.As(err, &gs) {
		if s := gs.GRPCStatus(); s != nil {
			return s, true
		}
	}
	return nil, false
}

// codeOf returns the gRPC code that err carries: a status's, or that of
// the rpctypes.EtcdError the client made of one; codes.Unknown if none.
func codeOf(err error) codes.Code {
	if s, ok := statusOf(err); ok {
		return s.Code()
	}
	var ee rpctypes.EtcdError
	if errors.As(err, &ee) {
		return ee.Code()
	}
	return codes.Unknown
}

// isEtcdErr reports whether err is, or wraps, grpcErr (one of the
// rpctypes.ErrGRPC* values) in either of the forms a client returns: the
// status itself (a status received over gRPC is equal to it, not the same
// value, and errors.Is compares them as statuses), or the
// rpctypes.EtcdError the client makes of it.
func isEtcdErr(err, grpcErr error) bool {
	if errors.Is(err, grpcErr) {
		return true
	}
	ee := rpctypes.Error(grpcErr)
	return ee != grpcErr && errors.Is(err, ee)
}

// isUnknownWith reports whether err is serverErr itself, or the status
// with code Unknown and serverErr's message that togRPCError makes of a
// server error outside its table.
func isUnknownWith(err, serverErr error) bool {
	if errors.Is(err, serverErr) {
		return true
	}
	s, ok := statusOf(err)
	return ok && s.Code() == codes.Unknown && s.Message() == serverErr.Error()
}

// IsNoSpace reports whether err is etcd's NOSPACE refusal: the backend is
// past its quota, or the NOSPACE alarm is raised, and etcd refuses every
// write that stores something (puts, txns with puts, lease grants) until
// the alarm is disarmed. It must be tested before IsUnavailable, which
// takes its gRPC code, ResourceExhausted, for overload.
//
// How it arrives: etcd's v3rpc layer returns rpctypes.ErrGRPCNoSpace, a
// gRPC status, both from its quota check before a proposal
// (v3rpc/quota.go) and, through togRPCError, for an apply refused by the
// alarm (etcdserver/errors.ErrNoSpace). The in-process client (v3client)
// passes that status through its adapters without a wire, and clientv3's
// ContextError turns it into rpctypes.ErrNoSpace, an EtcdError that
// carries only the code and the message; a remote client does the same
// with the status decoded off the wire. The message is therefore the one
// thing every path keeps, and is compared too.
func IsNoSpace(err error) bool {
	return errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(err, rpctypes.ErrGRPCNoSpace) ||
		rpctypes.ErrorDesc(err) == rpctypes.ErrorDesc(rpctypes.ErrGRPCNoSpace)
}
