package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The retry rules, through a front that answers 503 where a rule says and
 * forwards the rest to the live node: what is safe to repeat is repeated,
 * an acquire that may have reached a node is not, a node that refuses the
 * connection is skipped, and a lease whose renewals fail is lost by the
 * client's own clock.
 */
@Timeout(60)
class RetryTest {
    private static Client through(String... endpoints) {
        return Client.builder().endpoints(endpoints).retryBackoff(Duration.ofMillis(10)).timeout(Duration.ofSeconds(5)).build();
    }

    @Test
    void whatIsSafeToRepeatIsRetriedAndAnAcquireIsNot() throws Exception {
        String name = Live.name("retry");
        try (Front f = new Front(); Client c = through(f.url); Client direct = Live.client()) {
            try (Lock lk = direct.acquire(name)) {
                int[] n = {0};
                f.refuse = r -> r.startsWith("GET /v1/locks/") && n[0]++ < 2;
                assertEquals(lk.token(), c.getLock(name).token(), "a read is retried through two 503s");
                assertEquals(3, f.count("GET /v1/locks/"));
            }
            f.refuse = r -> r.startsWith("POST /v1/locks/");
            UnavailableException e = assertThrows(UnavailableException.class, () -> c.acquire(name));
            assertTrue(e.outcomeUnknown(), e.getMessage());
            assertTrue(e.getMessage().contains("the outcome is unknown"), e.getMessage());
            assertEquals(1, f.count("POST /v1/locks/"), "an acquire outside a session is sent once");
        }
    }

    @Test
    void aNodeThatRefusesTheConnectionIsSkippedEvenForAnAcquire() throws Exception {
        String dead = "http://127.0.0.1:" + Live.ports(1)[0];
        try (Client c = through(dead, Live.addr()); Lock lk = c.acquire(Live.name("skip"))) {
            assertTrue(lk.token() > 0);
        }
    }

    @Test
    void aLeaseWhoseRenewalsFailIsLostByTheClientsClock() throws Exception {
        try (Front f = new Front(); Client c = through(f.url)) {
            // The stream and the renewals get 503s: only the clock can tell.
            f.refuse = r -> r.startsWith("GET /v1/events") || r.endsWith("/renew");
            Lock lk = c.acquire(Live.name("clock"), AcquireOptions.defaults().ttl(Duration.ofSeconds(2)));
            LockLostException why = lk.lost().get(5, TimeUnit.SECONDS);
            assertTrue(why.getMessage().contains("ran out by this client's clock"), why.getMessage());
            assertTrue(f.count("POST /v1/locks/") > 1, "it tried to renew");
            assertFalse(why.event().isPresent());
        }
    }
}
