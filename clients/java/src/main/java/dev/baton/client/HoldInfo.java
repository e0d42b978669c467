package dev.baton.client;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

/**
 * A semaphore's permit or a read/write lock's hold as the server describes
 * it (the API's Hold); also the locks in the way in a lock set's
 * {@link HeldException}.
 *
 * @param name the semaphore's or read/write lock's name
 * @param owner who holds it
 * @param token its own fencing token
 * @param limit the semaphore's number of permits; 0 for a read/write lock's hold
 * @param mode "read" or "write" for a read/write lock's hold; null for a permit
 * @param session its session, or null
 * @param ttl the lease's time to live
 * @param acquiredAt when it was granted
 * @param expiresAt when the lease runs out unless renewed
 * @param minHold the at-least window: its seat stays taken until acquiredAt plus this, however early it ends; null without one
 * @param metadata the holder's labels
 */
public record HoldInfo(String name, String owner, long token, long limit, String mode, String session, Duration ttl,
        Instant acquiredAt, Instant expiresAt, Duration minHold, Map<String, String> metadata) {
    static HoldInfo from(Map<String, Object> m) {
        return new HoldInfo(Json.str(m, "name"), Json.str(m, "owner"), Json.lng(m, "token"), Json.lng(m, "limit"),
                Wire.opt(m, "mode"), Wire.opt(m, "session"), Wire.duration(m, "ttl"), Wire.instant(m, "acquired_at"),
                Wire.instant(m, "expires_at"), Wire.duration(m, "min_hold"), Json.stringMap(m, "metadata"));
    }
}
