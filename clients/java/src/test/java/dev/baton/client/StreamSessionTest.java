package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Sessions bound to a stream against the live node: one lives while its
 * stream is held, close() ends it and its holds at once, and a holder cut
 * off from every node fails over about a grace later, not a TTL later.
 */
@Timeout(60)
class StreamSessionTest {
    @Test
    void aStreamSessionOutlivesItsTTLWhileHeldAndCloseEndsItsHolds() throws Exception {
        String name = Live.name("bound");
        try (Client c = Live.client()) {
            StreamSession ss = c.openStreamSession("holder", Duration.ofSeconds(1));
            assertEquals("stream", ss.info().bind());
            assertEquals(Duration.ofSeconds(1), ss.info().grace());
            // Taken by a client closed at once: nothing but the stream keeps the session alive.
            try (Client once = Live.client()) {
                once.acquire(name, AcquireOptions.defaults().session(ss.id()));
            }
            long past = System.nanoTime() + ss.info().ttl().plusSeconds(1).toNanos();
            Live.waitFor(() -> {
                assertEquals(ss.id(), c.session(ss.id()).id(), "the session while its stream is held");
                return System.nanoTime() > past;
            }, ss.info().ttl().multipliedBy(3), "the session outlives its lease's TTL");
            ss.close();
            assertTrue(ss.done().isDone(), "done after close()");
            assertTrue(ss.err().isEmpty(), "err after close()");
            assertThrows(NotHeldException.class, () -> c.getLock(name));
            assertThrows(SessionNotFoundException.class, () -> c.session(ss.id()));
            ss.close(); // again: nothing
        }
    }

    @Test
    void aSessionDeletedElsewhereEndsWithSessionNotFound() throws Exception {
        try (Client c = Live.client(); Client other = Live.client()) {
            StreamSession ss = c.openStreamSession(null, Duration.ofSeconds(1));
            other.deleteSession(ss.id());
            ss.done().get(5, TimeUnit.SECONDS);
            assertInstanceOf(SessionNotFoundException.class, ss.err().orElseThrow());
        }
    }

    @Test
    void aHolderCutOffFailsOverWithinItsGrace() throws Exception {
        String name = Live.name("failover");
        Duration grace = Duration.ofSeconds(1);
        try (Front front = new Front(); Client holder = Client.builder().endpoints(front.url).maxRetries(-1).build();
                Client c = Live.client()) {
            StreamSession ss = holder.openStreamSession("holder", grace);
            Lock lk = holder.acquire(name, AcquireOptions.defaults().session(ss.id()));
            CompletableFuture<Long> granted = CompletableFuture.supplyAsync(() -> {
                Lock next = c.acquire(name, AcquireOptions.defaults().owner("next").waitFor(Duration.ofSeconds(30))
                        .ttl(Duration.ofSeconds(30)));
                long at = System.nanoTime();
                next.release();
                return at;
            });
            Live.waitFor(() -> c.getLock(name).waiters().size() == 1, Duration.ofSeconds(10), "the waiter in line");
            front.refuse = r -> true;
            front.cut();
            long cut = System.nanoTime();
            Duration took = Duration.ofNanos(granted.get(20, TimeUnit.SECONDS) - cut);
            assertTrue(took.compareTo(grace.minusMillis(50)) >= 0, "granted " + took.toMillis() + " ms after the cut, before the grace");
            assertTrue(took.compareTo(grace.plusMillis(1500)) <= 0, "granted " + took.toMillis() + " ms after the holder was cut off");
            front.refuse = r -> false;
            ss.done().get(15, TimeUnit.SECONDS);
            assertInstanceOf(SessionNotFoundException.class, ss.err().orElseThrow());
            assertTrue(lk.lost().get(10, TimeUnit.SECONDS) != null);
        }
    }
}
