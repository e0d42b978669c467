package dev.baton.client;

import java.time.Duration;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/** Reading the members of the API's answers that JSON has no type for: timestamps, durations, lists of records. */
final class Wire {
    private Wire() {}

    /** instant reads an RFC 3339 timestamp; null when absent or malformed. */
    static Instant instant(Map<String, Object> m, String k) {
        String s = Json.str(m, k);
        if (s.isEmpty()) {
            return null;
        }
        try {
            return OffsetDateTime.parse(s).toInstant();
        } catch (RuntimeException e) {
            return null;
        }
    }

    /** duration reads a Go duration; null when absent or malformed. */
    static Duration duration(Map<String, Object> m, String k) {
        return Durations.parse(Json.str(m, k));
    }

    static <T> List<T> records(Map<String, Object> m, String k, Function<Map<String, Object>, T> from) {
        List<T> out = new ArrayList<>();
        for (Object o : Json.list(m, k)) {
            if (o instanceof Map<?, ?>) {
                out.add(from.apply(Json.obj(o)));
            }
        }
        return Collections.unmodifiableList(out);
    }

    /** emptyToNull is a string member that may be absent: null then. */
    static String opt(Map<String, Object> m, String k) {
        String s = Json.str(m, k);
        return s.isEmpty() ? null : s;
    }
}
