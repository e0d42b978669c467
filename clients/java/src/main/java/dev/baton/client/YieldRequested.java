package dev.baton.client;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;

/**
 * What a request to yield asked (the API's YieldRequested): the holds of
 * {@code tokens}, each of which got a {@code yield_requested} event at
 * {@code revision}. The holders decide whether to release.
 *
 * @param kind lock, election, semaphore or rwlock
 * @param name the thing's name
 * @param tokens the tokens of the holds asked, in token order
 * @param owner who asked
 * @param reason why, or empty
 * @param requestedAt when
 * @param revision the etcd revision of the request's events
 */
public record YieldRequested(String kind, String name, List<Long> tokens, String owner, String reason, Instant requestedAt,
        long revision) {
    static YieldRequested from(Map<String, Object> m) {
        List<Long> tokens = new ArrayList<>();
        for (Object o : Json.list(m, "tokens")) {
            if (o instanceof Number n) {
                tokens.add(n.longValue());
            }
        }
        return new YieldRequested(Json.str(m, "kind"), Json.str(m, "name"), Collections.unmodifiableList(tokens),
                Json.str(m, "owner"), Json.str(m, "reason"), Wire.instant(m, "requested_at"), Json.lng(m, "revision"));
    }
}
