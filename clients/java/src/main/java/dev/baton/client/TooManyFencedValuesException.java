package dev.baton.client;

/**
 * The write would make one fenced value too many ({@link BatonException#limit()}); nothing was written.
 *
 * <p>Problem code {@code too_many_fenced_values}, status 429.
 */
public class TooManyFencedValuesException extends BatonException {
    private static final long serialVersionUID = 1L;

    TooManyFencedValuesException(Problem p) {
        super(p);
    }
}
