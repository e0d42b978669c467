package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The event streams reconnect across a node's restart: a node of this
 * test's own (BATON_BIN) is stopped and started again on the same ports
 * and data, and a revoke after the restart still reaches the lock's lost
 * future at once, through the client's re-opened stream; an events()
 * stream resumes where it was, without a gap or a repeat.
 */
@Timeout(90)
class ReconnectTest {
    @Test
    void theEventStreamReconnectsAcrossANodeRestart() throws Exception {
        try (Live.Node node = new Live.Node();
                Client c = Client.builder().endpoints(node.addr).timeout(Duration.ofSeconds(2)).build();
                Client admin = Client.builder().endpoints(node.addr).build()) {
            String name = Live.name("restart");
            Lock lk = c.acquire(name, AcquireOptions.defaults().ttl(Duration.ofSeconds(60)));
            Live.waitFor(c::watching, Duration.ofSeconds(10), "the client's event stream");
            try (EventStream<Event> events = admin.events(EventsOptions.lock(name).since(lk.token() - 1))) {
                assertEquals("acquired", events.poll(Duration.ofSeconds(10)).orElseThrow().type());

                node.stop();
                Live.waitFor(() -> !c.watching() && !events.connected(), Duration.ofSeconds(10), "the streams see the node gone");
                assertFalse(lk.isLost(), "a stream that cannot connect never makes a lock look lost");
                node.start();
                Live.waitFor(() -> c.watching() && events.connected(), Duration.ofSeconds(20), "the streams reconnected");
                assertEquals(lk.token(), admin.getLock(name).token(), "the lock outlived the restart");

                admin.revoke(name, "after the restart");
                long revoked = System.nanoTime();
                LockLostException why = lk.lost().get(1, TimeUnit.SECONDS);
                long ms = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - revoked);
                assertEquals("revoked", why.event().orElseThrow().type(), "learned from the event stream: " + why.getMessage());
                assertTrue(ms <= 100, "lost " + ms + " ms after the revoke");

                Event ev = events.poll(Duration.ofSeconds(10)).orElseThrow();
                assertEquals("revoked", ev.type(), "the next event after the restart, none repeated");
                assertEquals(lk.token(), ev.token());
                assertTrue(events.poll(Duration.ofMillis(200)).isEmpty(), "nothing repeated");
            }
        }
    }
}
