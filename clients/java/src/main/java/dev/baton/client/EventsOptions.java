package dev.baton.client;

/**
 * Which events {@link Client#events} streams, and from when.
 *
 * @param lock only this lock's events, or null
 * @param kind only events about this kind of thing ("lock", "election", "semaphore", "rwlock", "fence"), or null
 * @param name with kind, only the thing of this name, or null
 * @param since replay the events recorded after this revision first; 0: the events from now on
 */
public record EventsOptions(String lock, String kind, String name, long since) {
    /** Every event, from now on. */
    public static EventsOptions all() {
        return new EventsOptions(null, null, null, 0);
    }

    /** One lock's events, from now on. */
    public static EventsOptions lock(String name) {
        return new EventsOptions(name, null, null, 0);
    }

    /** One thing's events ("election", "billing"), from now on. */
    public static EventsOptions of(String kind, String name) {
        return new EventsOptions(null, kind, name, 0);
    }

    /** The same, replaying the events after revision first. */
    public EventsOptions since(long revision) {
        return new EventsOptions(lock, kind, name, revision);
    }
}
