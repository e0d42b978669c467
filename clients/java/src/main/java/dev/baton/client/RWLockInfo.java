package dev.baton.client;

import java.util.List;
import java.util.Map;

/**
 * A read/write lock as the server describes it (the API's RWLock).
 *
 * @param name its name
 * @param mode "read" while readers hold it, "write" while a writer does
 * @param holders the holds, oldest first
 * @param waiters those waiting, first served first, each with its mode
 */
public record RWLockInfo(String name, String mode, List<HoldInfo> holders, List<Waiter> waiters) {
    static RWLockInfo from(Map<String, Object> m) {
        return new RWLockInfo(Json.str(m, "name"), Json.str(m, "mode"), Wire.records(m, "holders", HoldInfo::from),
                Wire.records(m, "waiters", Waiter::from));
    }
}
