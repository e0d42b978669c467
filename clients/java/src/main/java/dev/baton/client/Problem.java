package dev.baton.client;

import java.time.Duration;
import java.util.Collections;
import java.util.Map;

/** What an error answer said: a problem document (RFC 9457), or what stood in for one, and the call it answered. */
final class Problem {
    final int status;
    final String code;
    final String title;
    final String detail;
    final Map<String, Object> members;
    final Duration retryAfter;
    final String op;
    final Throwable cause;

    Problem(int status, String code, String title, String detail, Map<String, Object> members, Duration retryAfter, String op,
            Throwable cause) {
        this.status = status;
        this.code = code == null ? "" : code;
        this.title = title == null ? "" : title;
        this.detail = detail == null ? "" : detail;
        this.members = members == null ? Collections.emptyMap() : Collections.unmodifiableMap(members);
        this.retryAfter = retryAfter;
        this.op = op == null ? "" : op;
        this.cause = cause;
    }

    /** A failure to get any answer from base: the node's trouble, an {@link UnavailableException}. */
    static Problem unavailable(String base, String what, String op, Throwable cause) {
        return new Problem(0, "", "Service unavailable", base + ": " + what, null, null, op, cause);
    }

    Problem withOp(String op) {
        return new Problem(status, code, title, detail, members, retryAfter, op, cause);
    }

    Problem withDetail(String detail) {
        return new Problem(status, code, title, detail, members, retryAfter, op, cause);
    }

    /**
     * The one-line message: the call, what the server said, and its status
     * and code, as in {@code revoke "wlock": lock not held (404 not_held)}.
     */
    String message() {
        String msg = detail.isEmpty() ? title : detail;
        if (!op.isEmpty()) {
            msg = op + ": " + (msg.startsWith(op + ": ") ? msg.substring(op.length() + 2) : msg);
        }
        msg = msg.replaceAll("\\s+", " ");
        if (status != 0) {
            msg += " (" + status + (code.isEmpty() ? "" : " " + code) + ")";
        }
        return "baton: " + msg;
    }
}
