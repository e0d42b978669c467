package httpfloor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/load"
	"github.com/baton-dev/baton/internal/txnbatch"
)

// httpFloorPrefix starts every httpfloor key: outside baton's prefix, so
// the engine never sees them.
const httpFloorPrefix = "bench-httpfloor/"

// Server is a running httpfloor server.
type Server struct {
	cli   *clientv3.Client
	lease clientv3.LeaseID
	srv   *http.Server
	url   string
	done  chan error // Serve's return
	// batch, if set, sends the cycle txns (httpfloor-batched), and
	// records is how many record keys a cycle puts beside its lock key.
	batch   *txnbatch.Batcher
	records int

	// queues are the locks acquired with wait (httpfloorwait.go).
	queuesMu sync.Mutex
	queues   map[string]*floorQueue
	seq      atomic.Uint64 // names queue entries
}

// Start grants the floor's one lease and serves on a free loopback port;
// if batched, its acquires and releases go through a batcher, and each
// cycle puts records records beside its lock key.
func Start(ctx context.Context, cli *clientv3.Client, batched bool, records int) (*Server, error) {
	lease, err := cli.Grant(ctx, int64(load.SessionTTL/time.Second))
	if err != nil {
		return nil, fmt.Errorf("httpfloor lease: %w", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cli.Revoke(ctx, lease.ID)
		return nil, err
	}
	f := &Server{cli: cli, lease: lease.ID, url: "http://" + l.Addr().String(), done: make(chan error, 1),
		queues: map[string]*floorQueue{}}
	if batched {
		f.records = records
		f.batch = &txnbatch.Batcher{
			KV:   cli,
			Term: context.Background,
			Op: func(ctx, _ context.Context) (context.Context, context.CancelFunc) {
				return context.WithTimeout(ctx, httpapi.RequestTimeout)
			},
			Closed: func() error { return nil },
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/locks/{name}", f.acquire)
	mux.HandleFunc("DELETE /v1/locks/{name}", f.release)
	// A session is the one lease: made before the clock starts, renewed
	// every third of its TTL by the load generator.
	mux.HandleFunc("POST /v1/sessions", f.createSession)
	mux.HandleFunc("POST /v1/sessions/{id}/renew", f.renewSession)
	mux.HandleFunc("DELETE /v1/sessions/{id}", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	f.srv = &http.Server{Handler: mux, ReadHeaderTimeout: httpapi.RequestTimeout}
	go func() { f.done <- f.srv.Serve(l) }()
	return f, nil
}

// URL is where the server serves, http://host:port.
func (f *Server) URL() string { return f.url }

// Close stops the server, revokes the lease, and with it any lock key
// left behind, and deletes the records; it may be called more than once.
func (f *Server) Close() error {
	if f.done == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := f.srv.Shutdown(ctx)
	if serr := <-f.done; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	f.done = nil
	if _, rerr := f.cli.Revoke(ctx, f.lease); rerr != nil {
		err = errors.Join(err, fmt.Errorf("revoke httpfloor lease: %w", rerr))
	}
	if f.records > 0 {
		if _, derr := f.cli.Delete(ctx, httpFloorPrefix+"records/", clientv3.WithPrefix()); derr != nil {
			err = errors.Join(err, fmt.Errorf("delete httpfloor records: %w", derr))
		}
	}
	return err
}

// floorLock is the floor's answer to an acquire: the fields of baton's,
// so that the answers are of a size.
type floorLock struct {
	Name       string    `json:"name"`
	Owner      string    `json:"owner"`
	Token      int64     `json:"token"`
	Session    string    `json:"session,omitempty"`
	TTL        string    `json:"ttl"`
	AcquiredAt time.Time `json:"acquired_at"`
	ExpiresAt  time.Time `json:"expires_at"`
}

// acquire takes the lock if nobody holds it; the token is the revision
// of the txn that put the key, which is the key's ModRevision.
func (f *Server) acquire(w http.ResponseWriter, r *http.Request) {
	var body httpapi.AcquireBody
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		floorProblem(w, http.StatusBadRequest, err.Error())
		return
	}
	name := r.PathValue("name")
	if body.Wait != "" {
		wait, err := time.ParseDuration(body.Wait)
		if err != nil {
			floorProblem(w, http.StatusBadRequest, "wait: "+err.Error())
			return
		}
		f.acquireWaiting(w, r, name, body, wait)
		return
	}
	key := httpFloorPrefix + name
	ops := []clientv3.Op{clientv3.OpPut(key, body.Owner, clientv3.WithLease(f.lease))}
	ops = f.recordOps(ops, (f.records+1)/2, "acquired", name, body.Owner, 0)
	resp, err := f.txn(r.Context(), clientv3.Compare(clientv3.CreateRevision(key), "=", 0), ops)
	if err != nil {
		floorProblem(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if !resp.Succeeded {
		floorProblem(w, http.StatusConflict, "lock held")
		return
	}
	now := time.Now().UTC()
	writeFloorJSON(w, http.StatusCreated, floorLock{
		Name: name, Owner: body.Owner, Token: resp.Header.Revision, Session: body.Session,
		TTL: load.SessionTTL.String(), AcquiredAt: now, ExpiresAt: now.Add(load.SessionTTL),
	})
}

// release deletes the key if it is still the hold the token names: the
// compare on ModRevision keeps a stale token from freeing a newer hold.
func (f *Server) release(w http.ResponseWriter, r *http.Request) {
	token, err := strconv.ParseInt(r.URL.Query().Get("token"), 10, 64)
	if err != nil {
		floorProblem(w, http.StatusBadRequest, "token: "+err.Error())
		return
	}
	name := r.PathValue("name")
	if q := f.queue(name, false); q != nil {
		ok, err := f.releaseQueued(r.Context(), q, name, token)
		switch {
		case err != nil:
			floorProblem(w, http.StatusServiceUnavailable, err.Error())
		case !ok:
			floorProblem(w, http.StatusConflict, "not held with this token")
		default:
			w.WriteHeader(http.StatusNoContent)
		}
		return
	}
	key := httpFloorPrefix + name
	ops := f.recordOps([]clientv3.Op{clientv3.OpDelete(key)}, f.records/2, "released", name, "", token)
	resp, err := f.txn(r.Context(), clientv3.Compare(clientv3.ModRevision(key), "=", token), ops)
	if err != nil {
		floorProblem(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	if !resp.Succeeded {
		floorProblem(w, http.StatusConflict, "not held with this token")
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// txn commits If(cmp).Then(ops...): alone, or through the batcher.
func (f *Server) txn(ctx context.Context, cmp clientv3.Cmp, ops []clientv3.Op) (*clientv3.TxnResponse, error) {
	if f.batch != nil {
		return f.batch.Txn(ctx, []clientv3.Cmp{cmp}, ops, nil)
	}
	return f.cli.Txn(ctx).If(cmp).Then(ops...).Commit()
}

// floorRecord is a record of -floor-records: an audit event's fields, so
// that it is of an event's size.
type floorRecord struct {
	Time    time.Time `json:"time"`
	Type    string    `json:"type"`
	Lock    string    `json:"lock"`
	Owner   string    `json:"owner,omitempty"`
	Token   int64     `json:"token,omitempty"`
	Session string    `json:"session"`
}

// recordOps appends to ops the puts of n records of an event of type typ,
// each under a key of its own that no cycle writes again.
func (f *Server) recordOps(ops []clientv3.Op, n int, typ, name, owner string, token int64) []clientv3.Op {
	if n == 0 {
		return ops
	}
	v, _ := json.Marshal(floorRecord{Time: time.Now().UTC(), Type: typ, Lock: name, Owner: owner, Token: token,
		Session: strconv.FormatInt(int64(f.lease), 16)})
	for range n {
		key := httpFloorPrefix + "records/" + strconv.FormatUint(f.seq.Add(1), 10)
		ops = append(ops, clientv3.OpPut(key, string(v)))
	}
	return ops
}

// createSession answers the floor's one lease as the session.
func (f *Server) createSession(w http.ResponseWriter, r *http.Request) {
	writeFloorJSON(w, http.StatusCreated, map[string]string{"id": strconv.FormatInt(int64(f.lease), 16)})
}

// renewSession keeps the one lease alive, whichever session id it is
// asked to renew.
func (f *Server) renewSession(w http.ResponseWriter, r *http.Request) {
	if _, err := f.cli.KeepAliveOnce(r.Context(), f.lease); err != nil {
		floorProblem(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	w.WriteHeader(http.StatusOK)
}

func writeFloorJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	// A write error is the client's going away; there is no one to tell.
	_ = json.NewEncoder(w).Encode(v)
}

func floorProblem(w http.ResponseWriter, status int, detail string) {
	writeFloorJSON(w, status, map[string]any{"status": status, "detail": detail})
}
