package dev.baton.client;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * A session: one lease for many holds (the API's Session; a listing's
 * entries leave the hold lists empty).
 *
 * @param id the etcd lease ID, in hex: pass it as a hold's session
 * @param owner its label
 * @param ttl the lease's time to live
 * @param createdAt when it was made
 * @param expiresAt when it ends unless renewed
 * @param locks the locks it holds
 * @param elections the elections it leads
 * @param semaphores the semaphores it holds permits of
 * @param rwlocks the read/write locks it holds
 * @param bind "stream" for a session that lives while its stream is open, else empty
 * @param grace how long a stream-bound session outlives its stream's close, else null
 */
public record SessionInfo(String id, String owner, Duration ttl, Instant createdAt, Instant expiresAt, List<String> locks,
        List<String> elections, List<String> semaphores, List<String> rwlocks, String bind, Duration grace) {
    static SessionInfo from(Map<String, Object> m) {
        return new SessionInfo(Json.str(m, "id"), Json.str(m, "owner"), Wire.duration(m, "ttl"), Wire.instant(m, "created_at"),
                Wire.instant(m, "expires_at"), Json.strings(m, "locks"), Json.strings(m, "elections"),
                Json.strings(m, "semaphores"), Json.strings(m, "rwlocks"), Json.str(m, "bind"), Wire.duration(m, "grace"));
    }
}
