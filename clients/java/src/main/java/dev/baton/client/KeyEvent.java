package dev.baton.client;

import java.util.Map;

/**
 * A change of a key, as {@link Client#watchKeys(String, long)} delivers it:
 * a put, with the key as the put left it; a delete; or a gap, when the
 * audit trail lost the changes of revisions fromRevision to toRevision
 * (list the keys again).
 *
 * @param type "put", "delete" or "gap"
 * @param key the key; empty on a gap
 * @param revision the revision of the change
 * @param value a put's value; null on a delete, and on a put replayed from a revision etcd has compacted, of a key that changed since ({@link Client#getKey} reads it)
 * @param createdRevision a put's: the revision that created the key; 0 otherwise
 * @param version a put's: the key's puts since it was created; 0 otherwise
 * @param session a put's: the session the key is bound to; a delete's: the session whose end deleted it; or null
 * @param fromRevision a gap's first lost revision; 0 otherwise
 * @param toRevision a gap's last lost revision; 0 otherwise
 * @param reason why a gap is one; empty otherwise
 */
public record KeyEvent(String type, String key, long revision, Object value, long createdRevision, long version, String session,
        long fromRevision, long toRevision, String reason) {
    static KeyEvent from(Map<String, Object> m) {
        return new KeyEvent(Json.str(m, "type"), Json.str(m, "key"), Json.lng(m, "revision"), m.get("value"),
                Json.lng(m, "created_revision"), Json.lng(m, "version"), Wire.opt(m, "session"), Json.lng(m, "from_revision"),
                Json.lng(m, "to_revision"), Json.str(m, "reason"));
    }
}
