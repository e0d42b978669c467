package dev.baton.client;

import java.util.Map;
import java.util.OptionalLong;

/**
 * What a credential's quotas count now (the API's QuotaUsage), each count
 * empty when its quota is not set.
 *
 * @param holds its holds across the cluster, a waiting acquire's hold included
 * @param sessions its sessions across the cluster
 * @param waiters its acquires waiting on the node asked
 */
public record QuotaUsage(OptionalLong holds, OptionalLong sessions, OptionalLong waiters) {
    static QuotaUsage from(Map<String, Object> m) {
        return new QuotaUsage(count(m, "holds"), count(m, "sessions"), count(m, "waiters"));
    }

    private static OptionalLong count(Map<String, Object> m, String k) {
        return m.get(k) instanceof Number ? OptionalLong.of(Json.lng(m, k)) : OptionalLong.empty();
    }
}
