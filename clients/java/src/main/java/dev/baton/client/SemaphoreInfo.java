package dev.baton.client;

import java.util.List;
import java.util.Map;

/**
 * A semaphore as the server describes it (the API's Semaphore).
 *
 * @param name its name
 * @param limit how many permits it has
 * @param holders the permits held, oldest first
 * @param waiters those waiting for a permit, first served first
 */
public record SemaphoreInfo(String name, long limit, List<HoldInfo> holders, List<Waiter> waiters) {
    static SemaphoreInfo from(Map<String, Object> m) {
        return new SemaphoreInfo(Json.str(m, "name"), Json.lng(m, "limit"), Wire.records(m, "holders", HoldInfo::from),
                Wire.records(m, "waiters", Waiter::from));
    }
}
