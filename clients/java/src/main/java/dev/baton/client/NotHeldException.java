package dev.baton.client;

/**
 * Nobody holds the lock (with this token), or no permit or read/write hold has it; a free lock under lock-delay says until when.
 *
 * <p>Problem code {@code not_held}, status 404.
 */
public class NotHeldException extends BatonException {
    private static final long serialVersionUID = 1L;

    NotHeldException(Problem p) {
        super(p);
    }
}
