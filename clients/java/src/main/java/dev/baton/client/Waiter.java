package dev.baton.client;

import java.time.Instant;
import java.util.List;
import java.util.Map;

/**
 * One in line for a lock, a permit or a read/write lock (the API's Waiter).
 *
 * @param owner who waits
 * @param position its place in line, 1 first
 * @param session its session, or null
 * @param since when it joined the line
 * @param mode "read" or "write" for a read/write lock; null otherwise
 * @param set the lock set it waits as, or empty
 */
public record Waiter(String owner, long position, String session, Instant since, String mode, List<String> set) {
    static Waiter from(Map<String, Object> m) {
        return new Waiter(Json.str(m, "owner"), Json.lng(m, "position"), Wire.opt(m, "session"), Wire.instant(m, "since"),
                Wire.opt(m, "mode"), Json.strings(m, "set"));
    }
}
