package dev.baton.client;

/**
 * The data store is full: writes fail until an operator recovers it; reads work.
 *
 * <p>Problem code {@code insufficient_storage}, status 507.
 */
public class InsufficientStorageException extends UnavailableException {
    private static final long serialVersionUID = 1L;

    InsufficientStorageException(Problem p) {
        super(p);
    }
}
