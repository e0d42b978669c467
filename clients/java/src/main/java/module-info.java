/**
 * The Java client of baton, the distributed lock service with fencing
 * tokens: locks, lock sets, sessions, elections, semaphores, read/write
 * locks, fenced writes and keys, the holds kept alive in the background,
 * with a lost signal within milliseconds of a revoke. The JDK alone:
 * {@code java.net.http}.
 */
module dev.baton.client {
    requires transitive java.net.http;

    exports dev.baton.client;
}
