package dev.baton.client;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/** EventsSource is the state of an event stream (GET /v1/events) across connections. */
final class EventsSource extends ResumingSource<Event> {
    private final Client.EventsFilter f;

    /** since: replay the events after it; 0: from now on. */
    EventsSource(Client c, Client.EventsFilter f, long since, Consumer<Event> deliver) {
        super(c, since, deliver);
        this.f = f;
    }

    @Override
    Sse.Target where() {
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
        return new Sse.Target("/v1/events", q, 0);
    }

    @Override
    Item<Event> decode(String id, String type, String data) {
        Map<String, Object> m;
        try {
            m = new LinkedHashMap<>(Json.obj(Json.parse(data)));
        } catch (IllegalArgumentException e) {
            String d = data.length() > 100 ? data.substring(0, 100) : data;
            throw new UnavailableException(Problem.unavailable("", "event stream: bad event " + Json.write(d), "events", e));
        }
        if (Json.lng(m, "revision") == 0) {
            m.put("revision", revision(id));
        }
        if (Json.str(m, "type").isEmpty()) {
            m.put("type", type);
        }
        Event ev = Event.from(m);
        String k = Json.write(List.of(ev.type(), ev.kind(), ev.name(), ev.lock(), ev.session() == null ? "" : ev.session(), ev.token()));
        return new Item<>(ev, ev.revision(), k);
    }
}
