package dev.baton.client;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * A lock as the server describes it (the API's Lock).
 *
 * @param name the lock's name
 * @param owner who holds it: a label for people and the audit trail
 * @param token the fencing token: greater than every token issued before it
 * @param session the session it lives in, or null for a lease of its own
 * @param ttl the lease's time to live
 * @param acquiredAt when it was granted
 * @param expiresAt when the lease runs out unless renewed
 * @param lockDelay the lock-delay that follows an expiry or revoke, or null
 * @param minHold the at-least window: nobody else takes the lock before acquiredAt plus this; null without one
 * @param metadata the holder's labels
 * @param set the names of the lock set it belongs to; empty for a single lock
 * @param waiters those waiting for it, first served first (a get's answer)
 */
public record LockInfo(String name, String owner, long token, String session, Duration ttl, Instant acquiredAt,
        Instant expiresAt, Duration lockDelay, Duration minHold, Map<String, String> metadata, List<String> set, List<Waiter> waiters) {
    static LockInfo from(Map<String, Object> m) {
        return new LockInfo(Json.str(m, "name"), Json.str(m, "owner"), Json.lng(m, "token"), Wire.opt(m, "session"),
                Wire.duration(m, "ttl"), Wire.instant(m, "acquired_at"), Wire.instant(m, "expires_at"),
                Wire.duration(m, "lock_delay"), Wire.duration(m, "min_hold"), Json.stringMap(m, "metadata"), Json.strings(m, "set"),
                Wire.records(m, "waiters", Waiter::from));
    }
}
