package dev.baton.client;

import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * Every problem code of the API, with the status the server answers it
 * with, what a caller may do about it, and its exception class: package
 * problem's table ({@code problem/problem.go}). {@code ProblemCodeTest}
 * reads that table and {@code openapi/openapi.json}, and fails on a code
 * missing here or differing.
 */
public enum ProblemCode {
    INVALID_REQUEST("invalid_request", 400, Retry.FINAL, InvalidRequestException.class, InvalidRequestException::new),
    BODY_TOO_LARGE("body_too_large", 413, Retry.FINAL, BodyTooLargeException.class, BodyTooLargeException::new),
    VALUE_TOO_LARGE("value_too_large", 413, Retry.FINAL, ValueTooLargeException.class, ValueTooLargeException::new),
    UNSUPPORTED_MEDIA_TYPE("unsupported_media_type", 415, Retry.FINAL, UnsupportedMediaTypeException.class, UnsupportedMediaTypeException::new),
    ROUTE_NOT_FOUND("route_not_found", 404, Retry.FINAL, RouteNotFoundException.class, RouteNotFoundException::new),
    METHOD_NOT_ALLOWED("method_not_allowed", 405, Retry.FINAL, MethodNotAllowedException.class, MethodNotAllowedException::new),
    LOCK_HELD("lock_held", 409, Retry.FINAL, HeldException.class, HeldException::new),
    NOT_HELD("not_held", 404, Retry.FINAL, NotHeldException.class, NotHeldException::new),
    TOKEN_MISMATCH("token_mismatch", 409, Retry.FINAL, TokenMismatchException.class, TokenMismatchException::new),
    STALE_TOKEN("stale_token", 409, Retry.FINAL, StaleTokenException.class, StaleTokenException::new),
    NOT_HOLDER("not_holder", 409, Retry.FINAL, NotHolderException.class, NotHolderException::new),
    UNKNOWN_TOKEN("unknown_token", 409, Retry.FINAL, UnknownTokenException.class, UnknownTokenException::new),
    SESSION_NOT_FOUND("session_not_found", 404, Retry.FINAL, SessionNotFoundException.class, SessionNotFoundException::new),
    NOT_FOUND("not_found", 404, Retry.FINAL, NotFoundException.class, NotFoundException::new),
    NOT_DELAYED("not_delayed", 404, Retry.FINAL, NotDelayedException.class, NotDelayedException::new),
    ELECTION_HELD("election_held", 409, Retry.FINAL, ElectionHeldException.class, ElectionHeldException::new),
    NO_LEADER("no_leader", 404, Retry.FINAL, NoLeaderException.class, NoLeaderException::new),
    CANDIDATE_NOT_WAITING("candidate_not_waiting", 409, Retry.FINAL, CandidateNotWaitingException.class, CandidateNotWaitingException::new),
    SEMAPHORE_FULL("semaphore_full", 409, Retry.FINAL, SemaphoreFullException.class, SemaphoreFullException::new),
    LIMIT_MISMATCH("limit_mismatch", 409, Retry.FINAL, LimitMismatchException.class, LimitMismatchException::new),
    KEY_NOT_FOUND("key_not_found", 404, Retry.FINAL, KeyNotFoundException.class, KeyNotFoundException::new),
    REVISION_MISMATCH("revision_mismatch", 409, Retry.FINAL, RevisionMismatchException.class, RevisionMismatchException::new),
    TOO_MANY_WAITERS("too_many_waiters", 429, Retry.LATER, TooManyWaitersException.class, TooManyWaitersException::new),
    TOO_MANY_LOCKS_IN_SESSION("too_many_locks_in_session", 409, Retry.FINAL, TooManyLocksInSessionException.class, TooManyLocksInSessionException::new),
    TOO_MANY_SESSIONS("too_many_sessions", 429, Retry.LATER, TooManySessionsException.class, TooManySessionsException::new),
    TOO_MANY_LOCKS("too_many_locks", 429, Retry.LATER, TooManyLocksException.class, TooManyLocksException::new),
    TOO_MANY_FENCED_VALUES("too_many_fenced_values", 429, Retry.LATER, TooManyFencedValuesException.class, TooManyFencedValuesException::new),
    TOO_MANY_KEYS("too_many_keys", 507, Retry.FINAL, TooManyKeysException.class, TooManyKeysException::new),
    TOO_MANY_STREAMS("too_many_streams", 429, Retry.LATER, TooManyStreamsException.class, TooManyStreamsException::new),
    RATE_LIMITED("rate_limited", 429, Retry.LATER, RateLimitedException.class, RateLimitedException::new),
    QUOTA_EXCEEDED("quota_exceeded", 429, Retry.LATER, QuotaExceededException.class, QuotaExceededException::new),
    UNAUTHORIZED("unauthorized", 401, Retry.FINAL, UnauthorizedException.class, UnauthorizedException::new),
    FORBIDDEN("forbidden", 403, Retry.FINAL, ForbiddenException.class, ForbiddenException::new),
    CROSS_ORIGIN("cross_origin", 403, Retry.FINAL, CrossOriginException.class, CrossOriginException::new),
    HOST_NOT_ALLOWED("host_not_allowed", 421, Retry.FINAL, HostNotAllowedException.class, HostNotAllowedException::new),
    UNAVAILABLE("unavailable", 503, Retry.ELSEWHERE, UnavailableException.class, UnavailableException::new),
    SHUTTING_DOWN("shutting_down", 503, Retry.ELSEWHERE, ShuttingDownException.class, ShuttingDownException::new),
    INSUFFICIENT_STORAGE("insufficient_storage", 507, Retry.FINAL, InsufficientStorageException.class, InsufficientStorageException::new),
    NOSPACE("nospace", 503, Retry.FINAL, NoSpaceException.class, NoSpaceException::new),
    STILL_FULL("still_full", 409, Retry.FINAL, StillFullException.class, StillFullException::new),
    CLIENT_CLOSED_REQUEST("client_closed_request", 499, Retry.FINAL, ClientClosedRequestException.class, ClientClosedRequestException::new),
    INTERNAL("internal", 500, Retry.FINAL, InternalException.class, InternalException::new);

    /** What a caller may do about a problem. */
    public enum Retry {
        /** The answer is about the request itself: repeating it changes nothing. */
        FINAL,
        /** A cap refused it before it did anything: any request may be sent again after Retry-After. */
        LATER,
        /** This node could not serve it: the outcome may be unknown; only idempotent requests are repeated, on another node. */
        ELSEWHERE
    }

    private final String code;
    private final int status;
    private final Retry retry;
    private final Class<? extends BatonException> exceptionClass;
    private final Function<Problem, BatonException> make;

    ProblemCode(String code, int status, Retry retry, Class<? extends BatonException> exceptionClass,
            Function<Problem, BatonException> make) {
        this.code = code;
        this.status = status;
        this.retry = retry;
        this.exceptionClass = exceptionClass;
        this.make = make;
    }

    /** The code as the API writes it, as {@code "lock_held"}. */
    public String code() {
        return code;
    }

    /** The HTTP status the server answers the code with. */
    public int status() {
        return status;
    }

    /** What a caller may do about it. */
    public Retry retry() {
        return retry;
    }

    /** The exception an answer with this code is. */
    public Class<? extends BatonException> exceptionClass() {
        return exceptionClass;
    }

    /** The entry of code, if this client knows it. */
    public static Optional<ProblemCode> of(String code) {
        for (ProblemCode c : values()) {
            if (c.code.equals(code)) {
                return Optional.of(c);
            }
        }
        return Optional.empty();
    }

    /**
     * decode builds the exception of an error answer: the class of its code,
     * or of its status for a code this client does not know. A body that is
     * no problem document is quoted, briefly, as the detail.
     */
    static BatonException decode(int status, String body, boolean json, String retryAfterHeader, String op) {
        Map<String, Object> m = null;
        if (json && body != null) {
            try {
                Object v = Json.parse(body);
                if (v instanceof Map<?, ?> && Json.obj(v).get("code") instanceof String c && !c.isEmpty()) {
                    m = Json.obj(v);
                }
            } catch (IllegalArgumentException e) {
                // Not JSON after all: quoted below.
            }
        }
        if (m == null) {
            String detail = body == null ? "" : body.strip();
            if (detail.length() > 200) {
                detail = detail.substring(0, 200) + "…";
            }
            return byStatus(new Problem(status, "", "HTTP " + status, detail, null, parseRetryAfter(retryAfterHeader), op, null));
        }
        Duration ra = parseRetryAfter(retryAfterHeader);
        if (ra == null && Json.lng(m, "retry_after") > 0) {
            ra = Duration.ofSeconds(Json.lng(m, "retry_after"));
        }
        Problem p = new Problem(status, Json.str(m, "code"), Json.str(m, "title"), Json.str(m, "detail"), m, ra, op, null);
        return of(p.code).map(c -> c.make.apply(p)).orElseGet(() -> byStatus(p));
    }

    /** make builds the exception of p by its code, or its status. */
    static BatonException make(Problem p) {
        return of(p.code).map(c -> c.make.apply(p)).orElseGet(() -> byStatus(p));
    }

    private static BatonException byStatus(Problem p) {
        if (p.status >= 500 || p.status == 0) {
            return new UnavailableException(p);
        }
        if (p.status == 401) {
            return new UnauthorizedException(p);
        }
        if (p.status == 403) {
            return new ForbiddenException(p);
        }
        return new BatonException(p);
    }

    /** parseRetryAfter reads a Retry-After header: seconds, or an HTTP date. */
    static Duration parseRetryAfter(String h) {
        if (h == null || h.isBlank()) {
            return null;
        }
        String s = h.strip();
        if (s.matches("\\d{1,9}")) {
            long n = Long.parseLong(s);
            return n > 0 ? Duration.ofSeconds(n) : null;
        }
        try {
            Instant t = ZonedDateTime.parse(s, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
            Duration d = Duration.between(Instant.now(), t);
            return d.isNegative() ? Duration.ZERO : d;
        } catch (RuntimeException e) {
            return null;
        }
    }
}
