package dev.baton.client;

import java.util.Map;

/**
 * A role on the names that start with a prefix (the API's Rule).
 *
 * @param prefix the names' prefix; empty: every name
 * @param role {@code read}, {@code write} or {@code admin}
 */
public record Rule(String prefix, String role) {
    static Rule from(Map<String, Object> m) {
        return new Rule(Json.str(m, "prefix"), Json.str(m, "role"));
    }
}
