package dev.baton.client;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The client's bearer token: one given as is, or the content of a file.
 * The tokens kept in files (a Kubernetes projected service-account token,
 * a JWT that a sidecar renews) are replaced in place before they expire,
 * so the file is read again after {@link Client#TOKEN_FILE_MAX_AGE}, and
 * when a node refuses the token: a client that read it once would be
 * refused from its expiry on. Thread-safe.
 */
final class Bearer {
    private final Path file; // null for a token given as is
    private String tok; // guarded by this when file is set
    long read; // System.nanoTime() of the file's last read; guarded by this; tests age it

    /** token, or file's content when token is null or empty; it throws when file cannot be read or holds nothing. */
    Bearer(String token, Path file) {
        if ((token != null && !token.isEmpty()) || file == null) {
            this.file = null;
            this.tok = token == null ? "" : token;
            return;
        }
        this.file = file;
        this.tok = load();
        this.read = System.nanoTime();
    }

    /** The token to send now, "" for none. */
    String token() {
        if (file == null) {
            return tok;
        }
        synchronized (this) {
            if (System.nanoTime() - read >= Client.TOKEN_FILE_MAX_AGE.toNanos()) {
                reread();
            }
            return tok;
        }
    }

    /** Reads the file again at once, and reports whether the token changed: a request a node refused with 401 is then worth sending again. */
    boolean reload() {
        if (file == null) {
            return false;
        }
        synchronized (this) {
            String old = tok;
            reread();
            return !tok.equals(old);
        }
    }

    // A read that fails or finds the file empty (one being replaced by a
    // writer that does not rename) keeps the last token until the next
    // read; it is not tried again before TOKEN_FILE_MAX_AGE, so a file gone
    // for good costs a read a minute, not one a request. Called holding this.
    private void reread() {
        read = System.nanoTime();
        try {
            tok = load();
        } catch (RuntimeException e) {
            // The last token stays.
        }
    }

    private String load() {
        String s;
        try {
            s = Files.readString(file, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            throw new UncheckedIOException("baton client: read token file: " + e, e);
        }
        if (s.isEmpty()) {
            throw new IllegalArgumentException("baton client: token file " + file + " is empty");
        }
        return s;
    }
}
