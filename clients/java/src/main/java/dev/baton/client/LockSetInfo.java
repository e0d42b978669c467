package dev.baton.client;

import java.util.List;
import java.util.Map;

/**
 * A lock set as the server describes it (the API's LockSet).
 *
 * @param names the set's locks, in the order the acquire gave them
 * @param token the fencing token every lock of the set has
 * @param locks each lock, in the order of names
 */
public record LockSetInfo(List<String> names, long token, List<LockInfo> locks) {
    static LockSetInfo from(Map<String, Object> m) {
        return new LockSetInfo(Json.strings(m, "names"), Json.lng(m, "token"), Wire.records(m, "locks", LockInfo::from));
    }
}
