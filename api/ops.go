package api

import (
	"context"
	"errors"
	"net/http"

	"github.com/baton-dev/baton/api/internal/request"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/problem"
)

// healthz godoc
//
//	@Summary		Liveness
//	@ID				healthz
//	@Description	Answers 200 while the process runs, whatever etcd's state.
//	@Tags			operations
//	@Produce		json
//	@Success		200	{object}	api.Status
//	@Router			/healthz [get]
func (a *API) healthz(c echo.Context) error {
	return c.JSON(http.StatusOK, Status{Status: "ok"})
}

// readyz godoc
//
//	@Summary		Readiness
//	@ID				readyz
//	@Description	Answers 200 only when this node's etcd member has a leader, serves linearizable reads and takes writes; 503 otherwise, within about two seconds: `unavailable` (no leader or no quorum) or `nospace` (etcd's NOSPACE alarm is raised: the data store is full, see POST /v1/maintenance/recover).
//	@Tags			operations
//	@Produce		json
//	@Success		200	{object}	api.Status
//	@Failure		503	{object}	api.Problem	"unavailable: no leader or no quorum; nospace: the data store is full"
//	@Router			/readyz [get]
func (a *API) readyz(c echo.Context) error {
	ctx, cancel := context.WithTimeout(c.Request().Context(), a.readyTimeout)
	defer cancel()
	err := a.eng.Ready(ctx)
	if err == nil {
		err = a.trail.Ready()
	}
	if err != nil {
		if errors.Is(err, lock.ErrNoSpace) {
			return noSpaceNotReady()
		}
		return err
	}
	return c.JSON(http.StatusOK, Status{Status: "ready"})
}

// cluster godoc
//
//	@Summary		Cluster status
//	@ID				getCluster
//	@Description	The etcd members (with which one leads), the raft term and the current revision, as this node's member sees them. It answers even while that member has no leader (then `leader` is empty), so an operator can see why a node answers 503.
//	@Tags			operations
//	@Produce		json
//	@Success		200	{object}	api.Cluster
//	@Failure		503	{object}	api.Problem	"unavailable"
//	@Security		BearerAuth
//	@Router			/v1/cluster [get]
func (a *API) cluster(c echo.Context) error {
	cs, err := a.eng.Cluster(c.Request().Context())
	if err != nil {
		return err
	}
	out := Cluster{Leader: cs.Leader, RaftTerm: cs.RaftTerm, Revision: cs.Revision, Members: make([]Member, len(cs.Members))}
	for i, m := range cs.Members {
		out.Members[i] = Member{ID: m.ID, Name: m.Name, PeerURLs: nonNil(m.PeerURLs), ClientURLs: nonNil(m.ClientURLs), IsLeader: m.IsLeader}
	}
	return c.JSON(http.StatusOK, out)
}

// nonNil keeps JSON arrays arrays: a member that has not started yet has no
// client URLs, which must read [] and not null.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// noSpaceRetryAfter is what /readyz's nospace answer tells probes to wait:
// the state lasts until an operator acts, minutes at best.
const noSpaceRetryAfter = 30

// noSpaceNotReady is /readyz's answer while etcd's NOSPACE alarm is
// raised: the node serves reads but no write, so a load balancer should
// send it nothing that writes.
func noSpaceNotReady() *Problem {
	p := newProblem(problem.NoSpace, noSpaceDetail)
	p.RetryAfter = noSpaceRetryAfter
	return p
}

// recoverSpace godoc
//
//	@Summary		Recover from a full data store (operators)
//	@ID				recoverSpace
//	@Description	Frees etcd's space after its NOSPACE alarm (every write answers 507 `insufficient_storage`): compacts the history to the current revision, defragments every member one at a time, then disarms the alarm. Safe to call at any time; without an alarm it only compacts and defragments. Each member is blocked while it is defragmented, for a second or so per hundred MB.
//	@Description	409 `still_full` when what is kept (live locks, sessions, fenced values, the audit trail) still leaves too little room under the quota: the alarm stays raised, and the detail says what holds the space.
//	@Tags			operations
//	@Produce		json
//	@Success		200	{object}	api.RecoverResult
//	@Failure		409	{object}	api.Problem	"still_full"
//	@Failure		413	{object}	api.Problem	"body_too_large"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Failure		503	{object}	api.Problem	"unavailable: no leader, or a member could not be reached; call again"
//	@Security		BearerAuth
//	@Router			/v1/maintenance/recover [post]
func (a *API) recoverSpace(c echo.Context) error {
	if err := request.Body(c, &struct{}{}, true); err != nil {
		return err
	}
	r, err := a.eng.Recover(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, RecoverResult{
		CompactedRevision: r.CompactedRevision, Defragmented: nonNil(r.Defragmented), Alarms: nonNil(r.Alarms),
		DBSize: r.DBSize, Quota: r.Quota,
	})
}

// RecoverResult is what POST /v1/maintenance/recover did.
type RecoverResult struct {
	// CompactedRevision is the revision etcd's history was compacted to.
	CompactedRevision int64 `json:"compacted_revision" format:"int64" example:"48213"`
	// Defragmented names the members defragmented, in order.
	Defragmented []string `json:"defragmented" example:"n1,n2,n3"`
	// Alarms are the alarms still raised afterwards: empty on success.
	Alarms []string `json:"alarms" example:""`
	// DBSize is the largest member's backend file, in bytes, afterwards.
	DBSize int64 `json:"db_size" format:"int64" example:"1048576"`
	// Quota is the backend quota, in bytes.
	Quota int64 `json:"quota" format:"int64" example:"2147483648"`
}
