package dev.baton.client;

import java.util.List;
import java.util.Map;

/**
 * Who a client's token speaks for and what it may do (the API's Whoami).
 *
 * @param authentication false when the node checks no token: every request may then do everything (rules is one rule
 *     {@code ""}: {@code admin})
 * @param credential the credential's ID: its name in the node's policy file, or {@code cred-…} for a line of the line
 *     format; never the token. Null without authentication
 * @param rules a role on the names under each prefix, sorted by prefix: of those a name starts with, the longest
 *     decides, and a name none covers may be neither touched nor seen
 * @param quotas the credential's quotas that are set, or null when none is
 * @param usage what the quotas of holds, sessions and waiters count now, or null when none of them is set
 */
public record Whoami(boolean authentication, String credential, List<Rule> rules, Quotas quotas, QuotaUsage usage) {
    static Whoami from(Map<String, Object> m) {
        return new Whoami(Boolean.TRUE.equals(m.get("authentication")), Wire.opt(m, "credential"),
                Wire.records(m, "rules", Rule::from), m.get("quotas") instanceof Map<?, ?> q ? Quotas.from(Json.obj(q)) : null,
                m.get("usage") instanceof Map<?, ?> u ? QuotaUsage.from(Json.obj(u)) : null);
    }
}
