package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node run with --auth-file, of the test's own: a token scoped to a name
 * prefix is refused outside it, with the role the call needs and its
 * prefixes, and lists only the locks under it.
 */
@Timeout(60)
class AuthTest {
    private static final String WRITE = "java-client-write-token";
    /** A write token scoped to the names under team-a. */
    private static final String TEAM_A = "java-client-team-a-token";

    @Test
    void aTokenScopedToAPrefixActsAndListsUnderItOnly() throws Exception {
        try (Live.Node node = new Live.Node("write " + WRITE + "\nwrite " + TEAM_A + " team-a.\n");
                Client c = Client.builder().endpoints(node.addr).token(WRITE).build();
                Client scoped = Client.builder().endpoints(node.addr).token(TEAM_A).build()) {
            Lock a = c.acquire("team-a.x");
            Lock b = c.acquire("team-b.x");
            try {
                ForbiddenException e = assertThrows(ForbiddenException.class, () -> scoped.acquire("team-b.x"));
                assertEquals(403, e.status());
                assertEquals("forbidden", e.code());
                assertEquals("write", e.role());
                assertEquals(List.of("team-a."), e.prefixes());
                List<String> names = scoped.listLocks("", 0, "").items().stream().map(LockInfo::name).toList();
                assertTrue(names.contains("team-a.x"), names.toString());
                assertEquals(List.of(), names.stream().filter(n -> !n.startsWith("team-a.")).toList(), names.toString());
            } finally {
                a.release();
                b.release();
            }
        }
    }

    /**
     * A token replaced in its file (a JWT renewed before it expires) is read
     * again when a node refuses the one the client sends, and the refused
     * call, an acquire too, is sent again with it.
     */
    @Test
    void aTokenFileIsReadAgainAfterA401(@TempDir Path dir) throws Exception {
        Path file = dir.resolve("token");
        Files.writeString(file, "java-client-unknown-token\n");
        try (Live.Node node = new Live.Node("write " + WRITE + "\n");
                Client c = Client.builder().endpoints(node.addr).tokenFile(file).build()) {
            UnauthorizedException e = assertThrows(UnauthorizedException.class, () -> c.acquire("tokenfile"));
            assertEquals(401, e.status());
            // As a renewer does: a new file renamed over the old one.
            Path tmp = dir.resolve("token.new");
            Files.writeString(tmp, WRITE + "\n");
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            Lock lk = c.acquire("tokenfile");
            assertEquals(lk.token(), c.getLock("tokenfile").token());
            lk.release();
            assertThrows(NotHeldException.class, () -> c.getLock("tokenfile"));
        }
    }
}
