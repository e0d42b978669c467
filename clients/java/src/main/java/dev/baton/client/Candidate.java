package dev.baton.client;

import java.time.Instant;
import java.util.Map;

/**
 * One waiting to lead an election (the API's Candidate).
 *
 * @param candidate its label
 * @param position its place in line, 1 first
 * @param session its session, or null
 * @param since when it joined the line
 */
public record Candidate(String candidate, long position, String session, Instant since) {
    static Candidate from(Map<String, Object> m) {
        return new Candidate(Json.str(m, "candidate"), Json.lng(m, "position"), Wire.opt(m, "session"), Wire.instant(m, "since"));
    }
}
