package dev.baton.client;

import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Durations as the server reads and writes them: Go's syntax ("30s", "1m30s", "500ms"). */
final class Durations {
    private static final Pattern PART = Pattern.compile("(\\d+(?:\\.\\d*)?|\\.\\d+)(ns|us|µs|μs|ms|s|m|h)");

    private Durations() {}

    /** wire writes d for the server: whole seconds as "30s", else milliseconds, rounded up ("1500ms"). */
    static String wire(Duration d) {
        if (d.isNegative()) {
            throw new IllegalArgumentException("baton: negative duration " + d);
        }
        if (d.getNano() == 0) {
            return d.getSeconds() + "s";
        }
        long ms = d.toMillis() + (d.toNanos() % 1_000_000 != 0 ? 1 : 0);
        return ms + "ms";
    }

    /** parse reads a Go duration; null for an empty or malformed one (the server's answers are trusted, not fatal). */
    static Duration parse(String s) {
        if (s == null || s.isEmpty()) {
            return null;
        }
        String body = s;
        boolean neg = false;
        if (body.startsWith("-") || body.startsWith("+")) {
            neg = body.charAt(0) == '-';
            body = body.substring(1);
        }
        if (body.equals("0")) {
            return Duration.ZERO;
        }
        Matcher m = PART.matcher(body);
        double nanos = 0;
        int at = 0;
        while (at < body.length() && m.find(at) && m.start() == at) {
            double n = Double.parseDouble(m.group(1));
            nanos += n * switch (m.group(2)) {
                case "ns" -> 1;
                case "ms" -> 1e6;
                case "s" -> 1e9;
                case "m" -> 60e9;
                case "h" -> 3600e9;
                default -> 1e3; // us, µs, μs
            };
            at = m.end();
        }
        if (at == 0 || at != body.length()) {
            return null;
        }
        Duration d = Duration.ofNanos(Math.round(nanos));
        return neg ? d.negated() : d;
    }
}
