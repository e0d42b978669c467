package dev.baton.client;

import java.util.Map;

/**
 * What a credential may use (the API's Quotas), each 0 when not set: its
 * holds and sessions across the cluster, its waiting acquires and event
 * streams on each node, and its requests a second.
 *
 * @param holds the locks, leaderships, permits and read/write holds it may hold at once
 * @param sessions its live sessions
 * @param waiters its acquires waiting in a queue at once
 * @param streams its open event streams
 * @param rate its requests a second, on average
 * @param burst its requests at once
 */
public record Quotas(long holds, long sessions, long waiters, long streams, double rate, long burst) {
    static Quotas from(Map<String, Object> m) {
        return new Quotas(Json.lng(m, "holds"), Json.lng(m, "sessions"), Json.lng(m, "waiters"), Json.lng(m, "streams"),
                m.get("rate") instanceof Number n ? n.doubleValue() : 0, Json.lng(m, "burst"));
    }
}
