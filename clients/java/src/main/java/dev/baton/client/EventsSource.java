package dev.baton.client;

import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * EventsSource is the state of an event stream across connections: where
 * the next one resumes, and which events of the latest revision were
 * delivered, so that a reconnection delivers neither a gap nor a repeat.
 */
final class EventsSource implements Sse.Source {
    private final Client c;
    private final Client.EventsFilter f;
    private final Consumer<Event> deliver;
    private long since;
    private volatile boolean haveBase;
    // last is the revision of the latest event delivered, and seen the
    // events of that revision delivered so far: a connection may break in
    // the middle of one revision's events, so a reconnection asks for that
    // whole revision again and skips what was delivered.
    private long last;
    private Set<String> seen = new HashSet<>();
    /** Completes once the stream knows the revision it starts after. */
    final CompletableFuture<Void> based = new CompletableFuture<>();

    /** since: replay the events after it; 0: from now on. */
    EventsSource(Client c, Client.EventsFilter f, long since, Consumer<Event> deliver) {
        this.c = c;
        this.f = f;
        this.deliver = deliver;
        this.since = since;
        this.haveBase = since > 0;
        if (haveBase) {
            based.complete(null);
        }
    }

    /** Without a revision to resume from a reconnection could not tell what it missed: ask a node first. */
    @Override
    public void prepare() {
        if (!haveBase) {
            since = c.cluster().revision();
            haveBase = true;
            based.complete(null);
        }
    }

    @Override
    public synchronized Sse.Target target() {
        Map<String, String> q = new LinkedHashMap<>();
        if (f.lock() != null) {
            q.put("lock", f.lock());
        }
        if (f.kind() != null) {
            q.put("kind", f.kind());
        }
        if (f.name() != null) {
            q.put("name", f.name());
        }
        return new Sse.Target("/v1/events", q, last > 0 ? last - 1 : since);
    }

    @Override
    public void dispatch(String id, String type, String data) {
        Map<String, Object> m;
        try {
            m = new LinkedHashMap<>(Json.obj(Json.parse(data)));
        } catch (IllegalArgumentException e) {
            String d = data.length() > 100 ? data.substring(0, 100) : data;
            throw new UnavailableException(Problem.unavailable("", "event stream: bad event " + Json.write(d), "events", e));
        }
        if (Json.lng(m, "revision") == 0) {
            try {
                m.put("revision", Long.parseLong(id));
            } catch (NumberFormatException e) {
                m.put("revision", 0L);
            }
        }
        if (Json.str(m, "type").isEmpty()) {
            m.put("type", type);
        }
        Event ev = Event.from(m);
        String k = Json.write(java.util.List.of(ev.type(), ev.kind(), ev.name(), ev.lock(), ev.session() == null ? "" : ev.session(),
                ev.token()));
        synchronized (this) {
            if (ev.revision() < last || (ev.revision() == last && seen.contains(k)) || (last == 0 && ev.revision() <= since)) {
                return; // delivered already, or from before where we resumed
            }
        }
        deliver.accept(ev);
        synchronized (this) {
            // Only now: an event not handed over must be asked for again.
            if (ev.revision() > last) {
                last = ev.revision();
                seen = new HashSet<>();
            }
            seen.add(k);
        }
    }
}
