package dev.baton.client;

/**
 * The server cannot take the request as sent; {@link BatonException#field()} names the member at fault.
 *
 * <p>Problem code {@code invalid_request}, status 400.
 */
public class InvalidRequestException extends BatonException {
    private static final long serialVersionUID = 1L;

    InvalidRequestException(Problem p) {
        super(p);
    }
}
