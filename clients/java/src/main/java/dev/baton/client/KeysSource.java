package dev.baton.client;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

/** KeysSource is the state of a watch of keys (GET /v1/kv/events) across connections. */
final class KeysSource extends ResumingSource<KeyEvent> {
    private final String prefix;

    /** since: deliver the changes after it; 0: from now on. */
    KeysSource(Client c, String prefix, long since, Consumer<KeyEvent> deliver) {
        super(c, since, deliver);
        this.prefix = prefix;
    }

    @Override
    Sse.Target where() {
        Map<String, String> q = new LinkedHashMap<>();
        if (prefix != null && !prefix.isEmpty()) {
            q.put("prefix", prefix);
        }
        return new Sse.Target("/v1/kv/events", q, 0);
    }

    @Override
    Item<KeyEvent> decode(String id, String type, String data) {
        Map<String, Object> m;
        try {
            m = new LinkedHashMap<>(Json.obj(Json.parse(data)));
        } catch (IllegalArgumentException e) {
            String d = data.length() > 100 ? data.substring(0, 100) : data;
            throw new UnavailableException(Problem.unavailable("", "key stream: bad event " + Json.write(d), "key events", e));
        }
        if (Json.lng(m, "revision") == 0) {
            m.put("revision", revision(id));
        }
        // A put's and a delete's data say no type: the message's name does.
        if (!type.isEmpty()) {
            m.put("type", type);
        }
        KeyEvent ev = KeyEvent.from(m);
        return new Item<>(ev, ev.revision(), Json.write(List.of(ev.type(), ev.key())));
    }
}
