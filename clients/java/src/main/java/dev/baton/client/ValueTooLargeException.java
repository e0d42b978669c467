package dev.baton.client;

/**
 * A value (a key's, say) is over its limit; {@link BatonException#limit()} is the limit in bytes.
 *
 * <p>Problem code {@code value_too_large}, status 413.
 */
public class ValueTooLargeException extends BatonException {
    private static final long serialVersionUID = 1L;

    ValueTooLargeException(Problem p) {
        super(p);
    }
}
