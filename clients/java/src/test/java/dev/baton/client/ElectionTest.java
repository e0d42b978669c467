package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Elections against the live node: campaign, observe, proclaim, resign and the handover to the next candidate. */
@Timeout(60)
class ElectionTest {
    private static LeaderChange next(EventStream<LeaderChange> s) {
        return s.poll(Duration.ofSeconds(10)).orElseThrow(() -> new AssertionError("no change within 10 s"));
    }

    @Test
    void leadershipIsHandedOverToTheNextCandidate() throws Exception {
        String name = Live.name("billing");
        try (Client a = Live.client(); Client b = Live.client(); Client watcher = Live.client();
                EventStream<LeaderChange> changes = watcher.observe(name)) {
            assertTrue(next(changes).leader().isEmpty(), "the first message is the state: nobody leads");

            Leadership first = a.campaign(name, CampaignOptions.defaults().candidate("node-a").value("10.0.0.5:8080")
                    .ttl(Duration.ofSeconds(10)));
            assertEquals(1, first.term());
            LeaderChange elected = next(changes);
            assertEquals("node-a", elected.leader().orElseThrow().candidate());
            assertEquals("10.0.0.5:8080", elected.leader().orElseThrow().value());

            ElectionHeldException held = assertThrows(ElectionHeldException.class,
                    () -> b.campaign(name, CampaignOptions.defaults().candidate("node-b")));
            assertEquals(first.token(), held.leader().orElseThrow().token());

            CompletableFuture<Leadership> second = CompletableFuture.supplyAsync(() -> b.campaign(name,
                    CampaignOptions.defaults().candidate("node-b").value("10.0.0.6:8080").waitFor(Duration.ofSeconds(20))));
            Live.waitFor(() -> a.leader(name).candidates().size() == 1, Duration.ofSeconds(10), "node-b in line");
            assertFalse(second.isDone());

            first.proclaim(java.util.Map.of("addr", "10.0.0.7:8080"));
            LeaderChange proclaimed = next(changes);
            assertEquals(first.token(), proclaimed.leader().orElseThrow().token());
            assertEquals(java.util.Map.of("addr", "10.0.0.7:8080"), proclaimed.leader().orElseThrow().value());

            first.resign();
            first.resign(); // the same outcome: nothing more
            Leadership now = second.get(10, TimeUnit.SECONDS);
            assertEquals(2, now.term());
            assertTrue(now.token() > first.token());
            assertFalse(first.isLost(), "a resignation is no loss");
            LeaderChange handover = next(changes);
            assertEquals("node-b", handover.leader().orElseThrow().candidate());
            assertTrue(handover.revision() > proclaimed.revision());

            // The new leader fences its writes with its leadership.
            String res = Live.name("billing-state");
            b.putFenced(res, now.token(), "state", FenceOptions.election(name));
            assertThrows(NotHolderException.class, () -> a.putFenced(res, first.token(), "stale", FenceOptions.election(name)));

            // Revoked: lost within a second.
            Live.waitFor(b::watching, Duration.ofSeconds(10), "b's event stream");
            a.revokeLeadership(name, "test");
            LockLostException why = now.lost().get(1, TimeUnit.SECONDS);
            assertEquals("election", why.kind());
            assertTrue(next(changes).leader().isEmpty(), "vacant after the revoke");
            assertThrows(NoLeaderException.class, () -> a.leader(name));
        }
    }
}
