package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Requests to yield against the live node: a holder hears each one made of it, well within a second. */
@Timeout(60)
class YieldTest {
    private Client c;
    private Client other;

    @BeforeEach
    void clients() {
        c = Live.client();
        other = Live.client();
    }

    @AfterEach
    void close() {
        c.close();
        other.close();
    }

    @Test
    void aHolderHearsARequestWithinADeadlineAndStaysHolder() throws InterruptedException {
        String name = Live.name("yield");
        try (Lock lk = c.acquire(name, AcquireOptions.defaults().owner("holder").ttl(Duration.ofSeconds(30)))) {
            BlockingQueue<Event> heard = new LinkedBlockingQueue<>();
            lk.onYield(heard::add);
            long sent = System.nanoTime();
            YieldRequested asked = other.yield(name, "backup window", "backup");
            assertEquals(List.of(lk.token()), asked.tokens());
            assertEquals("backup", asked.owner());
            Event ev = heard.poll(5, TimeUnit.SECONDS);
            long tookMs = (System.nanoTime() - sent) / 1_000_000;
            assertTrue(ev != null, "no request to yield within 5 s");
            assertTrue(tookMs < 500, "heard the request " + tookMs + " ms after it was sent");
            assertEquals("yield_requested", ev.type());
            assertEquals(lk.token(), ev.token());
            assertEquals("backup", ev.owner());
            assertEquals("backup window", ev.reason());
            assertEquals(asked.revision(), ev.revision());
            assertFalse(lk.isLost(), "a request to yield ends nothing");
        }
    }

    @Test
    void aRequestToNothingHeldIsRefused() {
        assertThrows(NotHeldException.class, () -> c.yield(Live.name("free"), null, null));
        assertThrows(NoLeaderException.class, () -> c.yieldLeadership(Live.name("vacant"), null, null));
    }
}
