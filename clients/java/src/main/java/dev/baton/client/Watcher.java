package dev.baton.client;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Watcher is a Client's one event stream for all the holds it keeps, so
 * that a hold is lost as soon as the audit trail records its end (revoked,
 * expired, session_expired, or released or resigned by someone else),
 * rather than at the next renew.
 *
 * <p>One stream per Client, not one per hold: nodes cap event streams per
 * client address and per credential. While every hold is of one thing
 * (the usual case) the stream asks for that thing's events only
 * ({@code lock=NAME}, or {@code kind=KIND&name=NAME}); holds of several
 * things widen it to every event, and it narrows again when they end. A
 * change of filter reconnects from where the old stream was, so no event
 * falls in between.
 *
 * <p>The stream only ever makes a hold lost sooner: renewal stays the
 * liveness check. A stream that cannot connect, or that a node refuses,
 * changes nothing; the hold is then lost by a renew's answer or its TTL.
 */
final class Watcher {
    /** How many ends of holds nobody registered it remembers. */
    private static final int MAX_ENDED = 1024;

    /** What events are about. */
    private record Thing(String kind, String name) {}

    private final Client c;
    private final Map<Keeper.Key, List<Keeper>> holds = new HashMap<>();
    // ended remembers ends of holds not (yet) registered, oldest first: a
    // revoke can be streamed between the grant's answer and registration.
    private final LinkedHashMap<Keeper.Key, Event> ended = new LinkedHashMap<>();
    private Sse.Runner runner;
    private Thing filter;
    private long from;
    private long pos;
    private int gen;

    Watcher(Client c) {
        this.c = c;
    }

    /** Whether the stream is connected now (for tests and diagnostics). */
    synchronized boolean streaming() {
        return runner != null && runner.connected();
    }

    void register(Keeper h) {
        Event gone = null;
        synchronized (this) {
            for (Keeper.Key k : h.keys) {
                if (ended.containsKey(k)) {
                    gone = ended.get(k);
                    break;
                }
            }
            if (gone == null) {
                boolean covered = runner != null;
                for (Keeper.Key k : h.keys) {
                    holds.computeIfAbsent(k, x -> new ArrayList<>()).add(h);
                    covered &= (filter == null || (filter.kind().equals(k.kind()) && filter.name().equals(k.name())))
                            && from < k.token();
                }
                if (!covered) {
                    // The events after token-1 include every end of this
                    // hold; the events after pos, every event the other
                    // holds still wait for.
                    long since = resume();
                    for (Keeper.Key k : h.keys) {
                        since = Math.min(since, k.token() - 1);
                    }
                    restart(since);
                }
            }
        }
        if (gone != null) {
            h.lose(endedWhy(gone), null, gone);
        }
    }

    synchronized void unregister(Keeper h) {
        boolean removed = false;
        for (Keeper.Key k : h.keys) {
            List<Keeper> hs = holds.get(k);
            if (hs != null && hs.remove(h)) {
                removed = true;
                if (hs.isEmpty()) {
                    holds.remove(k);
                }
            }
        }
        if (!removed) {
            return;
        }
        if (holds.isEmpty()) {
            stop();
            ended.clear();
        } else if (filter == null && wantFilter() != null) {
            restart(resume());
        }
    }

    synchronized void close() {
        stop();
    }

    private Thing wantFilter() {
        Thing t = null;
        for (Keeper.Key k : holds.keySet()) {
            if (t != null && (!t.kind().equals(k.kind()) || !t.name().equals(k.name()))) {
                return null;
            }
            t = new Thing(k.kind(), k.name());
        }
        return t;
    }

    /**
     * resume is where a new stream must start so the current one's holds
     * miss nothing: the latest revision it delivered, again (the stream may
     * have been cut in the middle of that revision's events), or where it
     * started; with no stream running, where the oldest hold began.
     */
    private long resume() {
        if (runner != null) {
            return Math.max(from, pos - 1);
        }
        long f = Long.MAX_VALUE;
        for (Keeper.Key k : holds.keySet()) {
            f = Math.min(f, k.token() - 1);
        }
        return f;
    }

    private void stop() {
        if (runner != null) {
            runner.stop();
            runner = null;
        }
        gen++;
    }

    private void restart(long since) {
        stop();
        filter = wantFilter();
        from = Math.max(since, 0);
        pos = 0;
        int g = gen;
        Thing f = filter;
        Client.EventsFilter q = f == null ? new Client.EventsFilter(null, null, null)
                : f.kind().equals(Keeper.LOCK) ? new Client.EventsFilter(f.name(), null, null)
                : new Client.EventsFilter(null, f.kind(), f.name());
        // Since 0 would mean "from now"; revision 0 holds no event anyway.
        EventsSource src = new EventsSource(c, q, Math.max(since, 1), ev -> handle(g, ev));
        // A refused stream (a 4xx: no credential for events, say) is not
        // retried; renewals go on, and the next registration tries again.
        Sse.Runner r = new Sse.Runner(c, "hold watch", src, e -> {
            synchronized (this) {
                if (gen == g) {
                    runner = null;
                }
            }
        }, Sse.IDLE);
        runner = r;
        r.start();
    }

    private void handle(int g, Event ev) {
        List<Keeper> lose = null;
        List<Keeper> asked = null;
        synchronized (this) {
            if (gen != g) {
                return; // a replaced stream's: its successor delivers it again
            }
            pos = Math.max(pos, ev.revision());
            Keeper.Key k = eventHold(ev);
            List<Keeper> hs = holds.get(k);
            if ("yield_requested".equals(ev.type())) {
                asked = hs == null ? null : new ArrayList<>(hs);
            } else if (!endsHold(k.kind(), ev.type())) {
                return;
            } else if (hs != null) {
                // A released or resigned event for a registered hold is
                // someone else's doing: the hold's own release unregisters
                // it first.
                lose = new ArrayList<>(hs);
            } else if (!ended.containsKey(k)) {
                ended.put(k, ev);
                if (ended.size() > MAX_ENDED) {
                    Iterator<Keeper.Key> it = ended.keySet().iterator();
                    it.next();
                    it.remove();
                }
            }
        }
        // Outside the lock: each takes its hold's.
        if (lose != null) {
            for (Keeper h : lose) {
                h.lose(endedWhy(ev), null, ev);
            }
        }
        if (asked != null) {
            for (Keeper h : asked) {
                h.askedToYield(ev);
            }
        }
    }

    private static Keeper.Key eventHold(Event ev) {
        String kind = ev.kind().isEmpty() ? Keeper.LOCK : ev.kind();
        String name = ev.name();
        if (kind.equals(Keeper.LOCK) && !ev.lock().isEmpty()) {
            name = ev.lock();
        }
        return new Keeper.Key(kind, name, ev.token());
    }

    private static boolean endsHold(String kind, String type) {
        return switch (type) {
            case "revoked", "expired", "session_expired" -> true;
            case "released" -> kind.equals(Keeper.LOCK) || kind.equals(Keeper.SEMAPHORE) || kind.equals(Keeper.RWLOCK);
            case "resigned" -> kind.equals(Keeper.ELECTION);
            default -> false;
        };
    }

    private static String endedWhy(Event ev) {
        String why = ev.type() + " at revision " + ev.revision() + (ev.detail().isEmpty() ? "" : ": " + ev.detail());
        // One lock of a set: say which, since it ends the whole set.
        return ev.set().isEmpty() ? why : "lock \"" + (ev.lock().isEmpty() ? ev.name() : ev.lock()) + "\" " + why;
    }
}
