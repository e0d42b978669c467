package dev.baton.client;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * One event of the audit trail (the API's Event): an acquire, release,
 * expiry, revoke, election, permit, fenced reset or gap.
 *
 * @param revision the etcd revision it happened at
 * @param time when
 * @param type acquired, released, expired, revoked, session_expired, elected, resigned, proclaimed, fence_reset, delay_cleared, yield_requested, put, delete, gap…
 * @param kind lock, election, semaphore, rwlock, fence or key; empty for a gap
 * @param name what it is about: the lock, election, semaphore, rwlock, resource or key
 * @param lock the lock, for a lock's events
 * @param owner the holder (or candidate); on a yield_requested, who asked
 * @param token the hold's fencing token; 0 when none
 * @param session the hold's session, or null
 * @param detail a revoke's reason, say
 * @param mode a read/write lock hold's mode, or null
 * @param set the lock set the lock belonged to, or empty
 * @param term an election's term; 0 otherwise
 * @param value an election's value (elected, proclaimed)
 * @param limit a semaphore's limit; 0 otherwise
 * @param fromRevision a gap's first missing revision
 * @param toRevision a gap's last missing revision
 * @param reason a gap's or a yield's reason
 * @param credential the credential that did it, when the node runs with auth
 * @param queuedAt when a hold granted after a wait joined the line
 * @param createdRevision a key's put: the revision that created the key; 0 otherwise
 * @param version a key's put: the key's puts since it was created; 0 otherwise
 */
public record Event(long revision, Instant time, String type, String kind, String name, String lock, String owner, long token,
        String session, String detail, String mode, List<String> set, long term, Object value, long limit, long fromRevision,
        long toRevision, String reason, String credential, Instant queuedAt, long createdRevision, long version) {
    static Event from(Map<String, Object> m) {
        return new Event(Json.lng(m, "revision"), Wire.instant(m, "time"), Json.str(m, "type"), Json.str(m, "kind"),
                Json.str(m, "name"), Json.str(m, "lock"), Json.str(m, "owner"), Json.lng(m, "token"), Wire.opt(m, "session"),
                Json.str(m, "detail"), Wire.opt(m, "mode"), Json.strings(m, "set"), Json.lng(m, "term"), m.get("value"),
                Json.lng(m, "limit"), Json.lng(m, "from_revision"), Json.lng(m, "to_revision"), Json.str(m, "reason"),
                Json.str(m, "credential"), Wire.instant(m, "queued_at"), Json.lng(m, "created_revision"), Json.lng(m, "version"));
    }
}
