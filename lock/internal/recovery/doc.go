// Package recovery frees etcd's space when its backend reached the quota
// and etcd raised its NOSPACE alarm, which blocks every write: it compacts
// the history, defragments every member one at a time, and disarms the
// alarm once what is kept leaves room under the quota. lock.Engine.Recover
// runs it; `baton maintenance recover` and POST /v1/maintenance/recover
// reach that.
package recovery
