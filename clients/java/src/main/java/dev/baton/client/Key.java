package dev.baton.client;

import java.util.Map;

/**
 * A key of coordination data (the API's Key).
 *
 * @param key its name: names joined by "/", as {@code config/billing/db}
 * @param value its value, as {@link Json} reads it
 * @param revision the revision of its last put
 * @param createdRevision the revision of the put that created it
 * @param version how many puts it has had since it was created: 1 for a new key
 * @param session the session it is bound to (it is deleted when the session ends), or null
 */
public record Key(String key, Object value, long revision, long createdRevision, long version, String session) {
    static Key from(Map<String, Object> m) {
        return new Key(Json.str(m, "key"), m.get("value"), Json.lng(m, "revision"), Json.lng(m, "created_revision"),
                Json.lng(m, "version"), Wire.opt(m, "session"));
    }
}
