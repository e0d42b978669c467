package dev.baton.client;

/**
 * A maintenance recover freed too little: the store is still full.
 *
 * <p>Problem code {@code still_full}, status 409.
 */
public class StillFullException extends BatonException {
    private static final long serialVersionUID = 1L;

    StillFullException(Problem p) {
        super(p);
    }
}
