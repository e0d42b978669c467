package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.time.Duration;
import java.util.List;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * whoami: who the client's token speaks for, its rules and its quotas with
 * what they count now, against the node build.sh started (no
 * authentication) and a node of the test's own run with a policy file.
 */
@Timeout(60)
class WhoamiTest {
    private static final String SCOPED = "java-client-whoami-scoped-token";
    private static final String PLAIN = "java-client-whoami-plain-token";
    /**
     * A credential scoped to three prefixes (given out of order: whoami sorts them) with quotas, waiters not among them;
     * one with no quota.
     */
    private static final String POLICY = """
            credentials:
              - name: team-w
                tokens: ["%s"]
                rules: {"w.audit.": read, "w.": write, "shared.": read}
                quotas: {holds: 5, sessions: 2, streams: 3, rate: 50.5, burst: 100}
              - name: plain
                tokens: ["%s"]
                rules: {"": admin}
            """.formatted(SCOPED, PLAIN);

    @Test
    void withoutAuthenticationEveryRequestMayDoEverything() {
        try (Client c = Live.client()) {
            Whoami w = c.whoami();
            assertFalse(w.authentication());
            assertNull(w.credential());
            assertEquals(List.of(new Rule("", "admin")), w.rules());
            assertNull(w.quotas());
            assertNull(w.usage());
        }
    }

    @Test
    void aScopedCredentialReadsItsNameRulesQuotasAndUsage() throws Exception {
        try (Live.Node node = new Live.Node(POLICY, "policy.yaml");
                Client c = Client.builder().endpoints(node.addr).token(SCOPED).build();
                Client plain = Client.builder().endpoints(node.addr).token(PLAIN).build();
                Client none = Client.builder().endpoints(node.addr).build()) {
            Whoami w = c.whoami();
            assertTrue(w.authentication());
            assertEquals("team-w", w.credential());
            assertEquals(List.of(new Rule("shared.", "read"), new Rule("w.", "write"), new Rule("w.audit.", "read")), w.rules());
            assertEquals(new Quotas(5, 2, 0, 3, 50.5, 100), w.quotas());
            assertEquals(new QuotaUsage(OptionalLong.of(0), OptionalLong.of(0), OptionalLong.empty()), w.usage());

            Lock lk = c.acquire(Live.name("w.whoami"), AcquireOptions.defaults().ttl(Duration.ofSeconds(60)));
            try {
                // The node counts its own grant at once; waiting is for a slow machine only.
                QuotaUsage one = new QuotaUsage(OptionalLong.of(1), OptionalLong.of(0), OptionalLong.empty());
                Live.waitFor(() -> one.equals(c.whoami().usage()), Duration.ofSeconds(5), "usage of holds 1");
            } finally {
                lk.release();
            }

            Whoami p = plain.whoami();
            assertEquals("plain", p.credential());
            assertEquals(List.of(new Rule("", "admin")), p.rules());
            assertNull(p.quotas(), "a credential without quotas");
            assertNull(p.usage(), "a credential without quotas");

            assertThrows(UnauthorizedException.class, none::whoami);
        }
    }
}
