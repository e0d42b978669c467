package api

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/baton-dev/baton/api/internal/request"
	"github.com/baton-dev/baton/api/internal/scope"
	"github.com/baton-dev/baton/api/internal/sse"

	"github.com/labstack/echo/v4"

	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/trail"
)

// Leader is an election's leadership.
type Leader struct {
	Name      string `json:"name" example:"billing"`
	Candidate string `json:"candidate" example:"node-a"`
	// Value is the leader's value: what it campaigned with, or what it
	// proclaimed since; null when it gave none.
	Value json.RawMessage `json:"value" swaggertype:"object"`
	// Token is the leadership's fencing token, from the same sequence as
	// lock tokens.
	Token int64 `json:"token" format:"int64" example:"4711"`
	// Term counts the leaders the election has had, this one included.
	Term      int64  `json:"term" format:"int64" example:"3"`
	Session   string `json:"session,omitempty" example:"694d2279b4919071"`
	TTL       string `json:"ttl,omitempty" example:"15s"`
	ElectedAt *Time  `json:"elected_at,omitempty" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:13.886Z"`
	// ExpiresAt is when the leadership's lease runs out unless renewed.
	// A change an observer is sent has none (it moves with every
	// renewal): GET the election for it.
	ExpiresAt *Time             `json:"expires_at,omitempty" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:28.881Z"`
	LockDelay string            `json:"lock_delay,omitempty" example:"5s"`
	MinHold   string            `json:"min_hold,omitempty" example:"5m"`
	Metadata  map[string]string `json:"metadata"`
	// Candidates are those waiting, in the order they would lead; only
	// GET /v1/elections/{name} fills it in.
	Candidates []Candidate `json:"candidates,omitempty"`
}

// Candidate is a campaign waiting to lead.
type Candidate struct {
	Candidate string `json:"candidate" example:"node-b"`
	Session   string `json:"session,omitempty" example:"694d2279b4919071"`
	Position  int    `json:"position" example:"1"`
	Since     Time   `json:"since" swaggertype:"string" format:"date-time" example:"2026-11-29T14:25:13.886Z"`
}

// LeaderList is a page of elections that have a leader.
type LeaderList struct {
	Elections  []*Leader `json:"elections"`
	NextCursor string    `json:"next_cursor,omitempty"`
}

// Vacancy is the data of an observer's vacant message: nobody leads.
type Vacancy struct {
	Name string `json:"name" example:"billing"`
}

// CampaignRequest is the body of POST /v1/elections/{name}/campaign.
type CampaignRequest struct {
	// Candidate names the campaigner, as owner does a lock's holder: 1-128
	// printable characters. Absent, it is the client's address.
	Candidate *string         `json:"candidate,omitempty" minLength:"1" maxLength:"128" example:"node-a"`
	Value     json.RawMessage `json:"value,omitempty" swaggertype:"object"`
	// TTL is the lease of a hold without session: a duration from 2s to
	// 24h, 30s when absent. It must be absent with session.
	TTL     *string `json:"ttl,omitempty" example:"15s"`
	Session *string `json:"session,omitempty" example:"694d2279b4919071"`
	// Wait is how long to queue while others hold it: a duration up to 5m.
	// Absent or 0s, a held one answers 409 at once.
	Wait *string `json:"wait,omitempty" example:"30s"`
	// KeepPlace, with session and wait, keeps the session's place in the
	// queue when the wait runs out (409 with place_kept): the session's
	// next acquire waits from there, or finds the hold granted. A wait
	// longer than 5m is a run of such acquires.
	KeepPlace *bool `json:"keep_place,omitempty" example:"true"`
	// LockDelay keeps the election free for this long after the hold ends by
	// expiry or revoke (not by a release): a duration up to 1h.
	LockDelay *string `json:"lock_delay,omitempty" example:"0s"`
	// MinHold is the hold's at-least window (ShedLock's lockAtLeastFor):
	// a duration up to 24h. However early the hold ends, by release,
	// expiry or revoke, nobody acquires it before acquired_at + min_hold.
	MinHold *string `json:"min_hold,omitempty" example:"5m"`
	// Metadata is for people and the dashboard: at most 16 string pairs,
	// with keys not empty and keys and values 4 KiB (4,096 bytes) in all.
	Metadata map[string]string `json:"metadata,omitempty"`
}

// ProclaimRequest is the body of POST /v1/elections/{name}/proclaim.
type ProclaimRequest struct {
	Token *int64          `json:"token" format:"int64" example:"4711"`
	Value json.RawMessage `json:"value" swaggertype:"object"`
}

func toLeader(l *lock.Lock) *Leader {
	if l == nil {
		return nil
	}
	out := &Leader{
		Name: l.Name, Candidate: l.Owner, Value: l.Value, Token: l.Token, Term: l.Term, Session: l.Session,
		Metadata: l.Metadata,
	}
	if l.TTL > 0 {
		out.TTL = l.TTL.String()
	}
	if !l.AcquiredAt.IsZero() {
		t := Time(l.AcquiredAt)
		out.ElectedAt = &t
	}
	if !l.ExpiresAt.IsZero() {
		t := Time(l.ExpiresAt)
		out.ExpiresAt = &t
	}
	if l.LockDelay > 0 {
		out.LockDelay = l.LockDelay.String()
	}
	if l.MinHold > 0 {
		out.MinHold = l.MinHold.String()
	}
	if out.Metadata == nil {
		out.Metadata = map[string]string{}
	}
	return out
}

// campaign godoc
//
//	@Summary		Campaign to lead an election
//	@ID				campaign
//	@Description	Makes the caller the leader and returns its leadership: a fencing token from the same sequence as lock tokens (fenced writes accept it, and may name `election` to require exactly this leadership), and `term`, the number of leaders the election has had.
//	@Description	With `wait`, the candidate waits in line for up to that long (at most 5m), first come first served across every node; a candidate that disconnects leaves no trace. Without it, an election with a leader answers 409 at once.
//	@Description	`value` is any JSON the leader publishes (its address, say), at most 4 KiB. `ttl`, `session` and `lock_delay` are as for locks: the leadership lives as long as its lease, and after it ends by expiry or revoke nobody leads for `lock_delay`. Every field is optional; `candidate` defaults to the client's address.
//	@Tags			elections
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string					true	"Election name: 1-128 characters from A-Z a-z 0-9 . _ : -" minlength(1) maxlength(128)
//	@Param			request	body		api.CampaignRequest		false	"How to campaign"
//	@Success		201		{object}	api.Leader				"The caller now leads"
//	@Success		200		{object}	api.Leader				"The same session already leads (idempotent)"
//	@Failure		400		{object}	api.Problem				"invalid_request: the field named in `field` is wrong"
//	@Failure		403		{object}	api.Problem				"forbidden: needs the write role, or the session belongs to another credential; or cross_origin"
//	@Failure		404		{object}	api.Problem				"session_not_found"
//	@Failure		409		{object}	api.Problem				"election_held: with `leader`, and `retry_after` under lock-delay"
//	@Failure		413		{object}	api.Problem				"body_too_large, or value_too_large (with `limit`)"
//	@Failure		415		{object}	api.Problem				"unsupported_media_type"
//	@Failure		429		{object}	api.Problem				"rate_limited, too_many_waiters or too_many_locks (with `limit`)"
//	@Failure		503		{object}	api.Problem				"unavailable or shutting_down; the campaign may or may not have taken effect"
//	@Failure		507		{object}	api.Problem				"insufficient_storage: the data store is full; nothing was written"
//	@Header			409		{integer}	Retry-After				"Seconds until lock-delay ends (lock-delay only)"
//	@Security		BearerAuth
//	@Router			/v1/elections/{name}/campaign [post]
func (a *API) campaign(c echo.Context) error {
	var req CampaignRequest
	if err := request.Body(c, &req, true); err != nil {
		return err
	}
	t, err := a.terms(req.TTL, req.Wait, req.Session, req.KeepPlace)
	if err != nil {
		return err
	}
	cr := lock.CampaignRequest{Name: request.PathParam(c, "name"), Candidate: owner(c, req.Candidate), Value: req.Value, Metadata: req.Metadata,
		TTL: t.TTL, Wait: t.Wait, Session: t.Session, KeepPlace: t.KeepPlace}
	if cr.LockDelay, err = request.Duration("lock_delay", req.LockDelay); err != nil {
		return err
	}
	if cr.MinHold, err = request.Duration("min_hold", req.MinHold); err != nil {
		return err
	}
	l, fresh, err := a.eng.Campaign(c.Request().Context(), cr)
	if err != nil {
		return candidateField(err)
	}
	status := http.StatusCreated
	if !fresh {
		status = http.StatusOK
	}
	return c.JSON(status, toLeader(l))
}

// candidateField names the candidate field where the engine, which
// validates a candidate as a lock's owner, says owner.
func candidateField(err error) error {
	p, _ := toProblem(err, errorTable)
	if p.Field == "owner" {
		p.Field = "candidate"
		p.Detail = strings.Replace(p.Detail, "owner", "candidate", 1)
		return p
	}
	return err
}

// getElection godoc
//
//	@Summary		Get an election's leader
//	@ID				getElection
//	@Description	Returns who leads, with token, term, value and expiry, and the candidates waiting, in the order they would lead (the first 1,000).
//	@Tags			elections
//	@Produce		json
//	@Param			name	path		string	true	"Election name" minlength(1) maxlength(128)
//	@Success		200		{object}	api.Leader
//	@Failure		404		{object}	api.Problem	"no_leader"
//	@Security		BearerAuth
//	@Router			/v1/elections/{name} [get]
func (a *API) getElection(c echo.Context) error {
	l, ws, err := a.eng.Leader(c.Request().Context(), request.PathParam(c, "name"))
	if err != nil {
		return err
	}
	out := toLeader(l)
	out.Candidates = make([]Candidate, len(ws))
	for i, w := range ws {
		out.Candidates[i] = Candidate{Candidate: w.Owner, Session: w.Session, Position: w.Position, Since: Time(w.Since)}
	}
	return c.JSON(http.StatusOK, out)
}

// listElections godoc
//
//	@Summary		List elections with a leader
//	@ID				listElections
//	@Description	Elections that have a leader, sorted by name, a page at a time. Pass `next_cursor` as `cursor` for the next page; it is absent on the last page.
//	@Tags			elections
//	@Produce		json
//	@Param			prefix	query		string	false	"Only elections whose name starts with this"
//	@Param			limit	query		int		false	"Page size, 1-1000"	default(100) minimum(1) maximum(1000)
//	@Param			cursor	query		string	false	"next_cursor of the previous page"
//	@Success		200		{object}	api.LeaderList
//	@Security		BearerAuth
//	@Router			/v1/elections [get]
func (a *API) listElections(c echo.Context) error {
	o, err := request.ListOptions(c)
	if err != nil {
		return err
	}
	ls, next, err := scope.List(c, o, func(o lock.ListOptions) ([]*lock.Lock, string, error) {
		return a.eng.Elections(c.Request().Context(), o)
	}, func(x *lock.Lock) string { return x.Name })
	if err != nil {
		return err
	}
	out := LeaderList{Elections: make([]*Leader, len(ls))}
	for i, l := range ls {
		out.Elections[i] = toLeader(l)
	}
	out.NextCursor = request.EncodeCursor(next) // "" on the last page
	return c.JSON(http.StatusOK, out)
}

// proclaim godoc
//
//	@Summary		Proclaim a new value
//	@ID				proclaim
//	@Description	Changes the leader's value without losing leadership: token and term stay. Observers are sent the new value. `value` is required (null is a value).
//	@Tags			elections
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string					true	"Election name" minlength(1) maxlength(128)
//	@Param			request	body		api.ProclaimRequest		true	"The leadership's token and the new value"
//	@Success		200		{object}	api.Leader
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the leadership was won by another credential; or cross_origin"
//	@Failure		404		{object}	api.Problem	"no_leader"
//	@Failure		409		{object}	api.Problem	"token_mismatch: led with another token"
//	@Failure		413		{object}	api.Problem	"body_too_large, or value_too_large (with `limit`)"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/elections/{name}/proclaim [post]
func (a *API) proclaim(c echo.Context) error {
	var req ProclaimRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	l, err := a.eng.Proclaim(c.Request().Context(), request.PathParam(c, "name"), *req.Token, req.Value)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toLeader(l))
}

// renewLeadership godoc
//
//	@Summary		Renew a leadership
//	@ID				renewLeadership
//	@Description	Extends the lease of the leadership that `token` holds, and returns the new `expires_at`. A leadership in a session renews the whole session. Token and term never change.
//	@Tags			elections
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string				true	"Election name" minlength(1) maxlength(128)
//	@Param			request	body		api.RenewRequest	true	"The leadership's token"
//	@Success		200		{object}	api.Leader
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the leadership was won by another credential; or cross_origin"
//	@Failure		404		{object}	api.Problem	"no_leader"
//	@Failure		409		{object}	api.Problem	"token_mismatch: led with another token"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Security		BearerAuth
//	@Router			/v1/elections/{name}/renew [post]
func (a *API) renewLeadership(c echo.Context) error {
	var req RenewRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	l, err := a.eng.RenewLeadership(c.Request().Context(), request.PathParam(c, "name"), *req.Token)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toLeader(l))
}

// resign godoc
//
//	@Summary		Resign
//	@ID				resign
//	@Description	Ends the leadership that `token` holds, audited as `resigned`. The first candidate in line leads from the same etcd transaction.
//	@Tags			elections
//	@Param			name	path	string	true	"Election name" minlength(1) maxlength(128)
//	@Param			token	query	int		true	"The leadership's token"	format(int64)
//	@Success		204
//	@Failure		403	{object}	api.Problem	"forbidden: needs the write role, or the leadership was won by another credential; or cross_origin"
//	@Failure		404	{object}	api.Problem	"no_leader"
//	@Failure		409	{object}	api.Problem	"token_mismatch: led with another token"
//	@Security		BearerAuth
//	@Router			/v1/elections/{name}/leader [delete]
func (a *API) resign(c echo.Context) error {
	tok, err := request.Token(c, "/v1/elections/{name}/leader")
	if err != nil {
		return err
	}
	if err := a.eng.Resign(c.Request().Context(), request.PathParam(c, "name"), tok); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// TransferRequest is the body of POST /v1/elections/{name}/leader/transfer.
type TransferRequest struct {
	// Token is the leadership's.
	Token *int64 `json:"token" format:"int64" example:"4711"`
	// To is the candidate to lead next, as it campaigns (its candidate
	// name): it must be waiting in line.
	To *string `json:"to" minLength:"1" maxLength:"128" example:"node-b"`
}

// transferLeadership godoc
//
//	@Summary		Hand leadership to a waiting candidate
//	@ID				transferLeadership
//	@Description	Ends the leadership that `token` holds in favour of the candidate `to`, which must be waiting in line: in one etcd transaction the leader resigns (audited as `resigned`, "transferred to …") and `to` leads, ahead of the line, with the resignation's revision as its token and the next term. Answers the new leadership. Inside the leadership's at-least window (`min_hold`) it is not handed on: 409 `election_held` with `retry_after`.
//	@Tags			elections
//	@Accept			json
//	@Produce		json
//	@Param			name	path		string					true	"Election name" minlength(1) maxlength(128)
//	@Param			request	body		api.TransferRequest		true	"The leadership's token and the candidate to lead next"
//	@Success		200		{object}	api.Leader
//	@Failure		400		{object}	api.Problem	"invalid_request, naming the field"
//	@Failure		403		{object}	api.Problem	"forbidden: needs the write role, or the leadership was won by another credential; or cross_origin"
//	@Failure		404		{object}	api.Problem	"no_leader"
//	@Failure		409		{object}	api.Problem	"candidate_not_waiting: no campaign of `to` waits in line; token_mismatch: led with another token; election_held: inside the leadership's at-least window"
//	@Failure		413		{object}	api.Problem	"body_too_large"
//	@Failure		415		{object}	api.Problem	"unsupported_media_type"
//	@Failure		507		{object}	api.Problem	"insufficient_storage: the data store is full; nothing was written"
//	@Security		BearerAuth
//	@Router			/v1/elections/{name}/leader/transfer [post]
func (a *API) transferLeadership(c echo.Context) error {
	var req TransferRequest
	if err := request.Body(c, &req, false); err != nil {
		return err
	}
	if req.Token == nil {
		return badRequest("token", "token is required")
	}
	if req.To == nil {
		return badRequest("to", "to is required: the waiting candidate to lead next")
	}
	l, err := a.eng.TransferLeadership(c.Request().Context(), request.PathParam(c, "name"), *req.Token, *req.To)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, toLeader(l))
}

// revokeLeadership godoc
//
//	@Summary		Revoke a leadership (operator)
//	@ID				revokeLeadership
//	@Description	Ends whoever leads, audited as `revoked` with the reason. The first candidate in line leads next, after the leadership's lock-delay if it had one.
//	@Tags			elections
//	@Accept			json
//	@Param			name	path	string				true	"Election name" minlength(1) maxlength(128)
//	@Param			request	body	api.RevokeRequest	false	"Why"
//	@Success		204
//	@Failure		404	{object}	api.Problem	"no_leader"
//	@Failure		413	{object}	api.Problem	"body_too_large"
//	@Failure		415	{object}	api.Problem	"unsupported_media_type"
//	@Security		BearerAuth
//	@Router			/v1/elections/{name}/revoke [post]
func (a *API) revokeLeadership(c echo.Context) error {
	var req RevokeRequest
	if err := request.Body(c, &req, true); err != nil {
		return err
	}
	if _, err := a.eng.RevokeLeadership(c.Request().Context(), request.PathParam(c, "name"), req.Reason); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// observe godoc
//
//	@Summary		Observe an election (Server-Sent Events)
//	@ID				observeElection
//	@Description	The election's changes, live, as `text/event-stream`. The first message is the current state; then one message per change, in order: `event: leader` (data: Leader) when a leader is elected or proclaims a new value, `event: vacant` (data: `{"name":…}`) when nobody leads. A resignation that hands over is one change, to the next leader. Each message's `id:` is the revision of the change.
//	@Description	With the `Last-Event-ID` header (a reconnecting EventSource sends it), the changes after that revision are sent instead of the current state, from the audit trail and then live, with no gap and no duplicate. A change's Leader has no `expires_at` or `ttl` (they move with every renewal); GET the election for them. A comment line every 15 s keeps idle streams open.
//	@Tags			elections
//	@Produce		text/event-stream
//	@Param			name			path		string		true	"Election name" minlength(1) maxlength(128)
//	@Param			Last-Event-ID	header		int			false	"Resume after this revision"	format(int64)
//	@Success		200				{string}	string		"An endless text/event-stream"
//	@Failure		429				{object}	api.Problem	"rate_limited, or too_many_streams (with `limit`): this client address or credential holds its maximum of streams on this node"
//	@Failure		503				{object}	api.Problem	"unavailable, shutting_down, or too_many_streams (with `limit`): this node serves its maximum of streams"
//	@Security		BearerAuth
//	@Router			/v1/elections/{name}/observe [get]
func (a *API) observe(c echo.Context) error {
	since, resume, err := request.LastEventID(c)
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	name := request.PathParam(c, "name")
	o, err := a.trail.Observe(ctx, name, since, resume)
	if err != nil {
		return err
	}
	defer o.Close()
	send, ok := sse.Open(c, a.eventWriteTimeout)
	if !ok {
		return nil
	}
	sse.Follow(ctx, o.C, o.Err, send, func(ch trail.ElectionChange) []byte { return appendChange(nil, name, ch) }, a.heartbeat)
	return nil
}

// appendChange appends an observer's message for ch.
func appendChange(b []byte, name string, ch trail.ElectionChange) []byte {
	var data []byte
	typ := "leader"
	if ch.Leader == nil {
		typ = "vacant"
		data, _ = json.Marshal(Vacancy{Name: name})
	} else {
		data, _ = json.Marshal(toLeader(ch.Leader))
	}
	b = fmt.Appendf(b, "id: %d\nevent: %s\ndata: ", ch.Revision, typ)
	b = append(b, data...)
	return append(b, '\n', '\n')
}
