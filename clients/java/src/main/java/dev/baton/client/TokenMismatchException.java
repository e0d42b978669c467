package dev.baton.client;

/**
 * The lock (or leadership) is held, but by another token.
 *
 * <p>Problem code {@code token_mismatch}, status 409.
 */
public class TokenMismatchException extends BatonException {
    private static final long serialVersionUID = 1L;

    TokenMismatchException(Problem p) {
        super(p);
    }
}
