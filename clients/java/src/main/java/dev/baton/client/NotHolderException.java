package dev.baton.client;

/**
 * A fenced write named a lock, election or read/write lock that its token does not hold.
 *
 * <p>Problem code {@code not_holder}, status 409.
 */
public class NotHolderException extends BatonException {
    private static final long serialVersionUID = 1L;

    NotHolderException(Problem p) {
        super(p);
    }
}
