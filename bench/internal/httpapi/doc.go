// Package httpapi is the bench's client of baton's HTTP API: the requests
// of every scenario that goes through HTTP (locks, sessions, elections,
// semaphores, read/write locks, lock sets), sent as a plain client would
// send them, JSON over keep-alive connections, nothing cached.
//
// The httpfloor server answers the same routes and decodes the same
// AcquireBody, so that one load generator drives baton and the floor
// alike.
package httpapi
