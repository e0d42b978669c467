package dev.baton.client;

import java.util.Map;

/**
 * A fenced register's content (the API's FencedValue).
 *
 * @param resource its name
 * @param token the token of the write that set it
 * @param value the value, as {@link Json} reads it
 * @param revision the etcd revision of that write
 */
public record FencedValue(String resource, long token, Object value, long revision) {
    static FencedValue from(Map<String, Object> m) {
        return new FencedValue(Json.str(m, "resource"), Json.lng(m, "token"), m.get("value"), Json.lng(m, "revision"));
    }
}
