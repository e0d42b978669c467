// Package web holds baton's dashboard: one HTML page, its script and its
// stylesheet, written by hand (vanilla JavaScript modules and CSS, no
// framework, no build step) and embedded in the binary with go:embed, so
// that the dashboard works offline and `go run .` needs nothing else.
//
// The page is a client of the public HTTP API and nothing more: it reads
// GET /v1/locks, GET /v1/locks/{name} (for waiters), GET /v1/elections,
// GET /v1/elections/{name} (for candidates), GET /v1/semaphores,
// GET /v1/semaphores/{name} (for waiters), GET /v1/rwlocks,
// GET /v1/rwlocks/{name} (for waiters), GET /v1/history,
// GET /v1/cluster and GET /v1/whoami, follows GET /v1/events (Server-Sent Events, read with
// fetch() so that it can send a bearer token) to update itself live, and
// calls POST /v1/locks/{name}/revoke, POST /v1/elections/{name}/revoke,
// POST /v1/semaphores/{name}/revoke, POST /v1/rwlocks/{name}/revoke and
// DELETE /v1/locks/{name}/delay.
// When the API answers 401 it asks for a token, which it keeps in
// sessionStorage only. It loads nothing from another origin and uses no
// inline script or style, so it runs under a strict
// Content-Security-Policy.
//
// The script is ES modules by concern, loaded with
// <script type="module" src="/ui/app.js">; app.js connects them:
//
//	app.js      wiring: what each module sets off in the others
//	api.js      fetch, problem+json errors and how they show
//	token.js    the bearer token in sessionStorage
//	auth.js     the sign-in form, sign-out
//	stream.js   following /v1/events live, reconnecting; sse.js parses it
//	locks.js    the held locks and their queues; lockrow.js draws a row,
//	            delays.js the locks under lock-delay
//	lockset.js  what the page says of a lock set's members, and marking
//	            them all when one is pointed at or focused
//	elections.js the elections that have a leader, and their candidates;
//	            electionrow.js draws a row
//	semaphores.js the semaphores that have permits held, their permits
//	            and waiters; semaphorerow.js draws a semaphore's rows
//	rwlocks.js  the read/write locks that are held, their holds and
//	            waiters with their modes; rwlockrow.js draws a lock's rows
//	holdspanel.js a panel of things with several holds at once, each
//	            with its token: semaphores.js and rwlocks.js configure it;
//	            holdrow.js draws one's rows, semaphorerow.js and
//	            rwlockrow.js configure that
//	fresh.js    keeping reads older than an event from overwriting it,
//	            for elections.js and holdspanel.js
//	history.js  the history, filtered and paged
//	timeline.js the timeline of the busiest locks', semaphores' and
//	            read/write locks' holds and waits over a window ending now;
//	            timelineholds.js reads holds from events and lays them in
//	            lanes, timelinesvg.js draws them, busiest.js tabulates them
//	yields.js   requests to yield, as a badge on the row of each hold
//	            asked, from the event stream
//	follow.js   following one lock from a history link
//	revoke.js   the revoke dialog, for a lock, a leadership, a permit or a
//	            read/write hold
//	cluster.js  the cluster panel
//	access.js   who the page is signed in as and what it may do: the
//	            credential, its rules by prefix, its quotas and their usage
//	clock.js    relative times, against the server's clock
//	dom.js, schedule.js, state.js, empty.js: helpers, shared state, the empty state
//
// index.html names its assets by absolute /ui/ paths; the server mounts
// Assets there and serves index.html at /:
//
//	e.GET("/", func(c echo.Context) error {
//		b, _ := fs.ReadFile(web.Assets, "index.html")
//		return c.HTMLBlob(http.StatusOK, b)
//	})
//	e.GET("/ui/*", echo.WrapHandler(http.StripPrefix("/ui/", http.FileServerFS(web.Assets))))
package web
