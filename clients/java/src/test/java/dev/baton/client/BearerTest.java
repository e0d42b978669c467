package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The bearer token without a server: a token file is read again after
 * TOKEN_FILE_MAX_AGE and on reload; a read that fails keeps the last
 * token; a token given as a value never changes.
 */
class BearerTest {
    @TempDir
    Path dir;

    private Path file() {
        return dir.resolve("token");
    }

    /** As a renewer does: a new file renamed over the old one. */
    private void put(String s) throws IOException {
        Path tmp = dir.resolve("token.new");
        Files.writeString(tmp, s);
        Files.move(tmp, file(), StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** As if the last read were TOKEN_FILE_MAX_AGE ago, without sleeping. */
    private static void age(Bearer b) {
        synchronized (b) {
            b.read -= Client.TOKEN_FILE_MAX_AGE.toNanos();
        }
    }

    @Test
    void theMaxAgeIsAMinute() {
        assertEquals(Duration.ofMinutes(1), Client.TOKEN_FILE_MAX_AGE);
    }

    @Test
    void aTokenFileIsReadAgainWhenOldAndAFailedReadKeepsTheLastToken() throws IOException {
        put("one\n");
        Bearer b = new Bearer(null, file());
        put("two");
        assertEquals("one", b.token(), "before TOKEN_FILE_MAX_AGE");
        age(b);
        assertEquals("two", b.token(), "after TOKEN_FILE_MAX_AGE");
        put(" \n");
        age(b);
        assertEquals("two", b.token(), "an empty file keeps the last token");
        Files.delete(file());
        age(b);
        assertEquals("two", b.token(), "a file gone keeps the last token");
        // The failed read counts as a read: none again before the max age.
        put("three");
        assertEquals("two", b.token(), "read again before TOKEN_FILE_MAX_AGE");
        age(b);
        assertEquals("three", b.token());
    }

    @Test
    void reloadReadsAtOnceAndReportsAChange() throws IOException {
        put("one");
        Bearer b = new Bearer("", file());
        assertFalse(b.reload(), "the same token");
        put("two\n");
        assertTrue(b.reload());
        assertEquals("two", b.token());
        Files.delete(file());
        assertFalse(b.reload(), "a file gone keeps the last token");
        assertEquals("two", b.token());
        put("");
        assertFalse(b.reload(), "an empty file keeps the last token");
        assertEquals("two", b.token());
    }

    @Test
    void aTokenGivenAsAValueNeverChangesAndItsFileIsNotRead() throws IOException {
        put("from-file");
        Bearer b = new Bearer("value", file());
        age(b);
        assertEquals("value", b.token());
        assertFalse(b.reload());
        assertEquals("value", b.token());
        Bearer none = new Bearer(null, null);
        assertEquals("", none.token());
        assertFalse(none.reload());
    }

    @Test
    void constructionFailsOnAMissingOrEmptyFile() throws IOException {
        UncheckedIOException missing = assertThrows(UncheckedIOException.class, () -> new Bearer(null, dir.resolve("missing")));
        assertTrue(missing.getMessage().contains("read token file"), missing.getMessage());
        put(" \n");
        IllegalArgumentException empty = assertThrows(IllegalArgumentException.class, () -> new Bearer(null, file()));
        assertTrue(empty.getMessage().contains("is empty"), empty.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Client.builder().endpoints("http://127.0.0.1:1").tokenFile(file()).build());
        // A token given as a value wins: the file is not read.
        Client.builder().endpoints("http://127.0.0.1:1").token("value").tokenFile(dir.resolve("missing")).build().close();
    }
}
