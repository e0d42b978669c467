package dev.baton.client;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The hold a key's write requires: the write happens only while that
 * hold is current, otherwise {@link StaleTokenException}. A holder paused
 * past its lease cannot write after the next one took over.
 *
 * <pre>{@code
 * c.putKey("inventory/count", 42, PutKeyOptions.defaults().fence(Fence.lock("inventory", lk.token())));
 * }</pre>
 *
 * @param kind "lock", "election", "semaphore" (one of its permits) or "rwlock" (its write hold)
 * @param name the lock's, election's, semaphore's or read/write lock's name
 * @param token the hold's fencing token
 */
public record Fence(String kind, String name, long token) {
    /** A fence's kind is one of these. @throws IllegalArgumentException otherwise */
    public Fence {
        Objects.requireNonNull(name, "name");
        if (!List.of("lock", "election", "semaphore", "rwlock").contains(kind)) {
            throw new IllegalArgumentException("baton client: a fence's kind is lock, election, semaphore or rwlock, not " + kind);
        }
    }

    /** The lock's hold with token. */
    public static Fence lock(String name, long token) {
        return new Fence("lock", name, token);
    }

    /** The election's leadership with token. */
    public static Fence election(String name, long token) {
        return new Fence("election", name, token);
    }

    /** The semaphore's permit with token. */
    public static Fence semaphore(String name, long token) {
        return new Fence("semaphore", name, token);
    }

    /** The read/write lock's write hold with token. */
    public static Fence rwlock(String name, long token) {
        return new Fence("rwlock", name, token);
    }

    /** The fence as a request body's members. */
    Map<String, Object> body() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put(kind, name);
        m.put("token", token);
        return m;
    }
}
