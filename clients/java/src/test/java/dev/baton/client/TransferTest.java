package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Leadership transfers against the live node: to a waiting candidate of the leader's choosing, and to one not waiting. */
@Timeout(60)
class TransferTest {
    @Test
    void aTransferHandsTheLeadershipToTheNamedCandidateAheadOfTheLine() throws Exception {
        String name = Live.name("transfer");
        try (Client a = Live.client(); Client b = Live.client(); Client c = Live.client()) {
            Leadership first = a.campaign(name, CampaignOptions.defaults().candidate("a"));
            CompletableFuture<Leadership> bWaits = CompletableFuture.supplyAsync(() -> b.campaign(name,
                    CampaignOptions.defaults().candidate("b").waitFor(Duration.ofSeconds(20))));
            Live.waitFor(() -> a.leader(name).candidates().size() == 1, Duration.ofSeconds(10), "b in line");
            CompletableFuture<Leadership> cWaits = CompletableFuture.supplyAsync(() -> c.campaign(name,
                    CampaignOptions.defaults().candidate("c").waitFor(Duration.ofSeconds(20))));
            Live.waitFor(() -> a.leader(name).candidates().size() == 2, Duration.ofSeconds(10), "c in line");

            LeaderInfo next = first.transfer("c"); // ahead of b, who waited longer
            assertEquals("c", next.candidate());
            assertEquals(2, next.term());
            Leadership cl = cWaits.get(10, TimeUnit.SECONDS);
            assertEquals(next.token(), cl.token());
            assertEquals(2, cl.term());
            assertFalse(first.isLost(), "a transfer is no loss");
            assertEquals("c", a.leader(name).candidate());
            assertThrows(LockLostException.class, () -> first.transfer("b"));
            cl.resign();
            bWaits.get(10, TimeUnit.SECONDS).resign();
        }
    }

    @Test
    void aTransferToACandidateNotWaitingLeavesTheLeadershipHeldAndRenewing() {
        String name = Live.name("transfer-none");
        try (Client a = Live.client()) {
            Leadership ld = a.campaign(name, CampaignOptions.defaults().candidate("a").ttl(Duration.ofSeconds(2)));
            assertThrows(CandidateNotWaitingException.class, () -> ld.transfer("nobody"));
            // Its renewal resumed: it outlives its TTL, and is not lost.
            long past = System.nanoTime() + Duration.ofSeconds(3).toNanos();
            Live.waitFor(() -> {
                assertEquals(ld.token(), a.leader(name).token());
                assertFalse(ld.isLost(), () -> ld.lostCause().toString());
                return System.nanoTime() > past;
            }, Duration.ofSeconds(10), "the leadership outlives its TTL");
            ld.resign();
        }
    }
}
