package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The audit trail against the live node: history, event streams from now or replayed, and a stream the node refuses. */
@Timeout(60)
class EventsTest {
    private static Event next(EventStream<Event> s) {
        return s.poll(Duration.ofSeconds(10)).orElseThrow(() -> new AssertionError("no event within 10 s"));
    }

    @Test
    void historyAndStreamsAgree() throws Exception {
        String name = Live.name("trail");
        try (Client c = Live.client()) {
            c.acquire(name, AcquireOptions.defaults().owner("hist")).release();
            History h = c.history(EventsOptions.lock(name), 100, 0);
            assertEquals(List.of("released", "acquired"), h.events().stream().map(Event::type).toList(), "newest first");
            Event acquired = h.events().get(1);
            assertEquals("lock", acquired.kind());
            assertEquals("hist", acquired.owner());

            try (EventStream<Event> live = c.events(EventsOptions.lock(name));
                    EventStream<Event> replay = c.events(EventsOptions.lock(name).since(acquired.revision() - 1))) {
                live.ready().get(10, TimeUnit.SECONDS);
                assertEquals("acquired", next(replay).type());
                assertEquals("released", next(replay).type());
                Lock lk = c.acquire(name);
                lk.release();
                for (EventStream<Event> s : List.of(live, replay)) {
                    Event a = next(s);
                    assertEquals("acquired", a.type());
                    assertEquals(lk.token(), a.token());
                    assertEquals("released", next(s).type());
                }
                assertTrue(live.poll(Duration.ofMillis(100)).isEmpty(), "nothing else");
            }
        }
    }

    @Test
    void aStreamTheNodeRefusesThrowsItsProblem() {
        try (Client c = Live.client(); EventStream<Event> s = c.events(EventsOptions.of("bogus", null))) {
            InvalidRequestException e = assertThrows(InvalidRequestException.class, s::take);
            assertEquals("kind", e.field());
        }
    }
}
