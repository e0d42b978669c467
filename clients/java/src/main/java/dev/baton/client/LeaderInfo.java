package dev.baton.client;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * An election's leader as the server describes it (the API's Leader).
 *
 * @param name the election's name
 * @param candidate who leads
 * @param value what the leader publishes: any JSON value, as {@link Json} reads it
 * @param token the leadership's fencing token
 * @param term how many leaders the election has had, this one included
 * @param session the session it lives in, or null
 * @param ttl the lease's time to live
 * @param electedAt when it began to lead
 * @param expiresAt when the lease runs out unless renewed
 * @param lockDelay the delay after an expiry or revoke, or null
 * @param minHold the at-least window: nobody else leads before electedAt plus this; null without one
 * @param metadata the leader's labels
 * @param candidates those waiting to lead, in the order they would (a get's answer)
 */
public record LeaderInfo(String name, String candidate, Object value, long token, long term, String session, Duration ttl,
        Instant electedAt, Instant expiresAt, Duration lockDelay, Duration minHold, Map<String, String> metadata, List<Candidate> candidates) {
    static LeaderInfo from(Map<String, Object> m) {
        return new LeaderInfo(Json.str(m, "name"), Json.str(m, "candidate"), m.get("value"), Json.lng(m, "token"),
                Json.lng(m, "term"), Wire.opt(m, "session"), Wire.duration(m, "ttl"), Wire.instant(m, "elected_at"),
                Wire.instant(m, "expires_at"), Wire.duration(m, "lock_delay"), Wire.duration(m, "min_hold"), Json.stringMap(m, "metadata"),
                Wire.records(m, "candidates", Candidate::from));
    }
}
