package dev.baton.client;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * An error answer of a baton node, or no answer at all: the base class of
 * one exception class per problem code of the API ({@link ProblemCode}
 * lists them). An answer whose code this client does not know is a
 * {@code BatonException} itself, or the class its status says (any 5xx an
 * {@link UnavailableException}, any 401 an {@link UnauthorizedException},
 * any 403 a {@link ForbiddenException}).
 *
 * <p>Unchecked, as the calls of {@link java.util.concurrent.locks.Lock}
 * are: catch the class of the code you handle, and let the rest go up.
 */
public class BatonException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final transient Problem p;

    BatonException(Problem p) {
        super(p.message(), p.cause);
        this.p = p;
    }

    /**
     * The HTTP status of the answer; 0 when there was none (a connection
     * refused or cut, a timeout, or a call the client refused itself, such as
     * a wait over the maximum without a session).
     */
    public int status() {
        return p.status;
    }

    /** The problem code, as {@code "lock_held"}; empty when the answer carried none. */
    public String code() {
        return p.code;
    }

    /** The problem's title, as {@code "Lock held"}. */
    public String title() {
        return p.title;
    }

    /** The problem's detail: what happened, in words. */
    public String detail() {
        return p.detail;
    }

    /** The call that failed, as {@code acquire "nightly-recon"}. */
    public String op() {
        return p.op;
    }

    /** The request member at fault, for {@code invalid_request} (400) and {@code value_too_large}; empty otherwise. */
    public String field() {
        return Json.str(p.members, "field");
    }

    /** The largest token the resource has seen, for {@code stale_token}. */
    public OptionalLong maxToken() {
        return p.members.get("max_token") instanceof Number ? OptionalLong.of(Json.lng(p.members, "max_token")) : OptionalLong.empty();
    }

    /** The key's revision ({@code revision_mismatch}; 0: it does not exist), or the revision the key was found missing at ({@code key_not_found}). */
    public OptionalLong revision() {
        return p.members.get("revision") instanceof Number ? OptionalLong.of(Json.lng(p.members, "revision")) : OptionalLong.empty();
    }

    /**
     * The cap reached (the {@code too_many_*} codes, {@code value_too_large}), the value of the credential's quota reached
     * ({@code quota_exceeded}), or a semaphore's limit ({@code limit_mismatch}).
     */
    public OptionalLong limit() {
        return p.members.get("limit") instanceof Number ? OptionalLong.of(Json.lng(p.members, "limit")) : OptionalLong.empty();
    }

    /** The role the refused call needs, {@code read}, {@code write} or {@code admin} ({@code forbidden}); empty otherwise. */
    public String role() {
        return Json.str(p.members, "role");
    }

    /**
     * The prefixes of the credential's rules, for a credential scoped to name prefixes ({@code forbidden}): the names it may
     * act on. Empty otherwise.
     */
    public List<String> prefixes() {
        return Json.strings(p.members, "prefixes");
    }

    /**
     * The credential's quota that was reached ({@code quota_exceeded}): {@code holds}, {@code waiters}, {@code sessions},
     * {@code streams} or {@code rate}, with {@link #limit()} its value (for rate, requests a second, rounded up). Empty
     * otherwise.
     */
    public String quota() {
        return Json.str(p.members, "quota");
    }

    /**
     * Whether a request's wait with keep_place ran out leaving the session's
     * place in line ({@code "place_kept": true} on a 409): the client's own
     * run of requests for a wait over {@link Client#maxRequestWait()} goes
     * on from there. False otherwise.
     */
    public boolean placeKept() {
        return Boolean.TRUE.equals(p.members.get("place_kept"));
    }

    /** The request's X-Request-ID: quote it when reporting a problem, it finds the node's log line. */
    public String requestId() {
        return Json.str(p.members, "request_id");
    }

    /** How long to wait before trying again, from the Retry-After header or the problem's {@code retry_after}. */
    public Optional<Duration> retryAfter() {
        return Optional.ofNullable(p.retryAfter);
    }

    /** Every member of the problem document, as read: for members this client does not name. */
    public Map<String, Object> problem() {
        return p.members;
    }

    /** The code's entry in the table of codes, if this client knows the code. */
    public Optional<ProblemCode> problemCode() {
        return ProblemCode.of(p.code);
    }

    Problem data() {
        return p;
    }
}
