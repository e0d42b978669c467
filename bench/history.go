package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"runtime"
	"runtime/debug"
	"strconv"
	"time"

	"github.com/baton-dev/baton/bench/internal/httpapi"
	"github.com/baton-dev/baton/bench/internal/measure"
	"github.com/baton-dev/baton/bench/internal/report"
	"github.com/baton-dev/baton/lock"
	"github.com/baton-dev/baton/trail"
)

// How the history scenario reads.
const (
	// historyWarmup unmeasured requests precede each measured read.
	historyWarmup = 3
	// historyReadLimit bounds each measured read's time as well as its
	// count (Config.HistoryRequests), so a node whose pages cost seconds
	// still ends; the count of requests measured says which bound ended it.
	historyReadLimit = 30 * time.Second
	// historyRSSReads filtered reads are made between the two RSS readings.
	historyRSSReads = 100
	// The replay from revision 0 is read until replayMaxEvents events,
	// replayMaxTime or the newest event recorded before it started,
	// whichever comes first; replayFirst events are timed apart.
	replayMaxEvents = 100000
	replayMaxTime   = 10 * time.Second
	replayFirst     = 1000
	// historyPage is the page size of every read.
	historyPage = 100
	// indexWait bounds the wait for the first page after the fill.
	indexWait = 10 * time.Minute
)

// The targets the history scenario's figures are printed beside.
const (
	pageTargetP99     = 20 * time.Millisecond
	filteredTargetP99 = 50 * time.Millisecond
	// scopedTargetP99 is a scoped view's, which scans up to 20 filtered
	// reads' budgets for its first event.
	scopedTargetP99 = 20 * filteredTargetP99
	rssGrowthTarget = 20 << 20
)

// history fills the audit trail through the engine, then measures reading
// it through the HTTP API at that size (see report.HistoryResult).
func (b *bench) history(ctx context.Context) (*report.HistoryResult, error) {
	fill, err := b.fillHistory(ctx, b.cfg.HistoryEvents)
	if err != nil {
		return nil, err
	}
	b.log.Info("history filled", "events", fill.events, "seconds", fill.elapsed.Seconds())
	res := newHistoryResult(fill)
	if res.IndexedSeconds, err = b.awaitHistory(ctx); err != nil {
		return nil, err
	}
	a := httpapi.New(b.url, 1)
	// Before any read, so the reads measured here are the first of their
	// kind: later ones would find memory the earlier ones left.
	if res.RSS, err = rssAround(ctx, a, "/v1/history?owner=nobody&limit="+strconv.Itoa(historyPage)); err != nil {
		return nil, err
	}
	n := b.cfg.HistoryRequests
	q := "/v1/history?limit=" + strconv.Itoa(historyPage)
	reads := []struct {
		to     *report.HistoryRead
		path   string
		target time.Duration
	}{
		{&res.Newest, q, pageTargetP99},
		{&res.Middle, q + "&before=" + strconv.FormatInt((fill.first+fill.last)/2, 10), pageTargetP99},
		{&res.Oldest, q + "&before=" + strconv.FormatInt(oldestBefore(fill), 10), pageTargetP99},
		{&res.Lock, q + "&lock=peer-7", pageTargetP99},
		{&res.Owner, q + "&owner=nobody", filteredTargetP99},
		{&res.Type, q + "&type=revoked", filteredTargetP99},
	}
	for _, r := range reads {
		b.log.Info("reading history", "path", r.path)
		if *r.to, err = timeReads(ctx, a, r.path, n, r.target); err != nil {
			return nil, err
		}
	}
	if b.cfg.AuthRules > 0 {
		// A credential that may read nothing of the trail: its page scans
		// the most a scoped view does before it answers empty.
		b.log.Info("reading history as a credential that reads nothing")
		scoped, err := timeReads(ctx, a.As(scopedToken), q, n, scopedTargetP99)
		if err != nil {
			return nil, err
		}
		scoped.Path += " (a credential that reads nothing)"
		res.Scoped = &scoped
	}
	newest, atNewest, err := newestRevision(ctx, a)
	if err != nil {
		return nil, err
	}
	b.log.Info("replaying history", "through", newest)
	if res.Replay, err = replay(ctx, b.url, newest, atNewest); err != nil {
		return nil, err
	}
	return res, nil
}

// newHistoryResult is the history scenario's result so far: its fill.
func newHistoryResult(f historyFill) *report.HistoryResult {
	return &report.HistoryResult{
		Events: f.events, FillSeconds: f.elapsed.Seconds(), FillEventsPerSec: report.Per(float64(f.events), f.elapsed.Seconds()),
		FillWorkers: f.workers, FillOwners: f.clients, FillNames: historyNames, Cycles: f.cycles, Revoked: f.revoked, Expired: f.expired,
		FirstRevision: f.first, LastRevision: f.last,
	}
}

// awaitHistory returns once a page of history can be read, and how long
// that took: an engine that indexes its trail apart from the writes
// answers a page only once the index holds every event committed before
// it, and fails it (unavailable) after its OpTimeout, which is not the
// figure the reads are after.
func (b *bench) awaitHistory(ctx context.Context) (float64, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, indexWait)
	defer cancel()
	for {
		_, _, err := b.node.Trail().History(ctx, trail.HistoryOptions{Limit: 1})
		switch {
		case err == nil:
			return time.Since(start).Seconds(), nil
		case !errors.Is(err, lock.ErrUnavailable) || ctx.Err() != nil:
			return 0, fmt.Errorf("read history after the fill (%s): %w", time.Since(start).Round(time.Second), err)
		}
		// The engine waited its OpTimeout for the index, or etcd failed
		// at once: a moment before the next try, not a spin.
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// oldestBefore is the before of a page among the fill's oldest: 0.5% into
// its revisions. The engine batches acquires and releases, so a revision
// holds tens of events: first+1 would be a page of one.
func oldestBefore(f historyFill) int64 {
	return f.first + (f.last-f.first)/200 + 1
}

// historyPageBody is what the bench reads of GET /v1/history.
type historyPageBody struct {
	Events []struct {
		Revision int64 `json:"revision"`
	} `json:"events"`
	NextBefore int64 `json:"next_before"`
}

// timeReads sends GET path up to n times, one at a time, after
// historyWarmup unmeasured requests, for at most historyReadLimit. A
// measured request that fails is counted, not timed; the warm-up's
// failures are not counted.
func timeReads(ctx context.Context, a *httpapi.Client, path string, n int, target time.Duration) (report.HistoryRead, error) {
	r := report.HistoryRead{Path: path, TargetP99: target.Microseconds()}
	var page historyPageBody
	get := func() error {
		page = historyPageBody{}
		return a.Call(ctx, http.MethodGet, path, nil, http.StatusOK, &page)
	}
	for range historyWarmup {
		_ = get()
	}
	lat := measure.NewLatencies()
	var errs measure.ErrorCount
	deadline := time.Now().Add(historyReadLimit)
	for i := 0; i < n && time.Now().Before(deadline) && ctx.Err() == nil; i++ {
		t0 := time.Now()
		if err := get(); err != nil {
			errs.Add(err)
			continue
		}
		lat.Record(time.Since(t0))
		r.Events, r.NextBefore = len(page.Events), page.NextBefore
	}
	if err := ctx.Err(); err != nil {
		return r, err
	}
	r.Latency, r.Errors, r.FirstError = lat.Summary(), errs.Count(), errs.First()
	r.Met = r.Latency.Count > 0 && r.Latency.P99 <= r.TargetP99
	return r, nil
}

// rssAround reads this process's RSS before and after historyRSSReads
// requests of path. The garbage of the fill is given back to the system
// first, so the growth is the reads'. It also reports what the reads
// allocated (the process's heap, node and bench alike) and the RSS once
// that is collected and given back: the growth a GC leaves is what the
// reads kept.
func rssAround(ctx context.Context, a *httpapi.Client, path string) (report.HistoryRSS, error) {
	debug.FreeOSMemory()
	before, err := measure.RSSBytes()
	if err != nil {
		return report.HistoryRSS{}, err
	}
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	r := report.HistoryRSS{Path: path}
	var errs measure.ErrorCount
	deadline := time.Now().Add(historyReadLimit)
	for ; r.Reads < historyRSSReads && time.Now().Before(deadline); r.Reads++ {
		if err := a.Call(ctx, http.MethodGet, path, nil, http.StatusOK, nil); err != nil {
			if ctx.Err() != nil {
				return r, ctx.Err()
			}
			errs.Add(err)
		}
	}
	after, err := measure.RSSBytes()
	if err != nil {
		return report.HistoryRSS{}, err
	}
	runtime.ReadMemStats(&ms1)
	// What the reads left behind once collected: growth that a GC does
	// not take back is memory a read kept.
	debug.FreeOSMemory()
	collected, err := measure.RSSBytes()
	if err != nil {
		return report.HistoryRSS{}, err
	}
	const mib = 1 << 20
	r.AllocatedMiB = float64(ms1.TotalAlloc-ms0.TotalAlloc) / mib
	r.RetainedMiB = float64(collected-before) / mib
	r.BeforeMiB, r.AfterMiB = float64(before)/mib, float64(after)/mib
	r.GrowthMiB = float64(after-before) / mib
	r.TargetMiB = rssGrowthTarget / mib
	r.Met = r.GrowthMiB <= r.TargetMiB
	r.Errors, r.FirstError = errs.Count(), errs.First()
	return r, nil
}

// newestRevision returns the revision of the newest event and how many
// events it has: a page never splits a revision, so the newest page holds
// all of them.
func newestRevision(ctx context.Context, a *httpapi.Client) (rev int64, events int, err error) {
	var page historyPageBody
	if err := a.Call(ctx, http.MethodGet, "/v1/history?limit=1", nil, http.StatusOK, &page); err != nil {
		return 0, 0, err
	}
	if len(page.Events) == 0 {
		return 0, 0, errors.New("history: the newest page is empty")
	}
	rev = page.Events[0].Revision
	for _, e := range page.Events {
		if e.Revision == rev {
			events++
		}
	}
	return rev, events, nil
}

// replay streams GET /v1/events?since=0 until replayMaxEvents events,
// replayMaxTime, or the atNewest events of revision newest (the newest
// recorded before it started) have come, while sampling RSS.
func replay(ctx context.Context, base string, newest int64, atNewest int) (report.HistoryReplay, error) {
	ctx, cancel := context.WithTimeout(ctx, replayMaxTime)
	defer cancel()
	var rssMax int64
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan error, 1)
	go func() { sampled <- sampleRSS(sampling, &rssMax) }()
	r, err := readReplay(ctx, base, newest, atNewest)
	stopSampling()
	if serr := <-sampled; err == nil {
		err = serr
	}
	r.RSSMaxMiB = float64(rssMax) / (1 << 20)
	return r, err
}

// readReplay reads the stream replay describes and counts its events.
func readReplay(ctx context.Context, base string, newest int64, atNewest int) (report.HistoryReplay, error) {
	r := report.HistoryReplay{FirstEvents: replayFirst}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/events?since=0", nil)
	if err != nil {
		return r, err
	}
	start := time.Now()
	if httpapi.Token != "" {
		req.Header.Set("Authorization", "Bearer "+httpapi.Token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return r, fmt.Errorf("replay: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("replay: status %d", resp.StatusCode)
	}
	br := bufio.NewReaderSize(resp.Body, 64<<10)
	seenNewest := 0
	for r.Events < replayMaxEvents && seenNewest < atNewest {
		line, err := br.ReadSlice('\n')
		if err != nil {
			if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.Canceled) {
				break // replayMaxTime passed
			}
			return r, fmt.Errorf("replay: %w", err)
		}
		id, ok := bytes.CutPrefix(line, []byte("id: "))
		if !ok {
			continue
		}
		r.Events++
		if r.Events == replayFirst {
			r.FirstSeconds = time.Since(start).Seconds()
		}
		if rev, err := strconv.ParseInt(string(bytes.TrimSpace(id)), 10, 64); err == nil && rev == newest {
			seenNewest++
		}
	}
	r.Seconds = time.Since(start).Seconds()
	r.Complete = seenNewest == atNewest
	r.EventsPerSec = report.Per(float64(r.Events), r.Seconds)
	return r, nil
}
