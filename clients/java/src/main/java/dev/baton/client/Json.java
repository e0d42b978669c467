package dev.baton.client;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The client's JSON: a strict reader and a writer, on the JDK alone, for
 * the small documents the API exchanges.
 *
 * <p>Values are plain Java: an object is a {@code Map<String, Object>}
 * (insertion-ordered), an array a {@code List<Object>}, a string a
 * {@link String}, a number a {@link Long} when it is an integer that fits,
 * else a {@link BigInteger}; any other number a {@link Double} (a
 * {@link BigDecimal} beyond a double's range), {@code true}/{@code false} a {@link Boolean},
 * and {@code null} Java's null. The writer takes those, and any
 * {@link Number}, {@link Iterable}, array of objects, {@link Map} with
 * string keys or {@link CharSequence}.
 *
 * <p>The reader accepts exactly RFC 8259: no trailing commas, comments,
 * single quotes, leading zeros, NaN or control characters in strings; a
 * duplicate member keeps its last value. Nesting is capped at
 * {@value #MAX_DEPTH} levels so that a hostile answer cannot exhaust the
 * stack. Every failure is an {@link IllegalArgumentException} saying where.
 * {@code JsonTest} fuzzes both directions.
 */
public final class Json {
    /** How deep arrays and objects may nest in a document read. */
    public static final int MAX_DEPTH = 256;

    private Json() {}

    /**
     * Reads one JSON document.
     *
     * @param text the document; whitespace around it is allowed
     * @return the value, as the class comment describes
     * @throws IllegalArgumentException when text is not exactly one JSON value
     */
    public static Object parse(String text) {
        Reader r = new Reader(text);
        r.space();
        Object v = r.value(0);
        r.space();
        if (r.at < text.length()) {
            throw r.fail("data after the value");
        }
        return v;
    }

    /**
     * Writes a value as compact JSON.
     *
     * @param value a value as the class comment describes
     * @return its JSON text
     * @throws IllegalArgumentException for a value JSON cannot carry: a
     *     non-finite double, a map key that is not a string, another type
     */
    public static String write(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value, 0);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object v, int depth) {
        if (depth > MAX_DEPTH) {
            throw new IllegalArgumentException("json: nested deeper than " + MAX_DEPTH + " (a cycle?)");
        }
        if (v == null) {
            sb.append("null");
        } else if (v instanceof CharSequence s) {
            quote(sb, s.toString());
        } else if (v instanceof Boolean b) {
            sb.append(b.booleanValue());
        } else if (v instanceof Double || v instanceof Float) {
            double d = ((Number) v).doubleValue();
            if (Double.isNaN(d) || Double.isInfinite(d)) {
                throw new IllegalArgumentException("json: " + d + " has no JSON form");
            }
            // Always with a point or an exponent ("3.0", "1.0E20"), so that
            // it reads back as a double, not a long.
            sb.append(Double.toString(d));
        } else if (v instanceof BigDecimal bd) {
            sb.append(bd.toString());
        } else if (v instanceof Number n) {
            // Long, Integer, Short, Byte, BigInteger, AtomicLong…: integers.
            sb.append(n instanceof BigInteger ? n.toString() : Long.toString(n.longValue()));
        } else if (v instanceof Map<?, ?> m) {
            sb.append('{');
            boolean first = true;
            for (Map.Entry<?, ?> e : m.entrySet()) {
                if (!(e.getKey() instanceof String k)) {
                    throw new IllegalArgumentException("json: a map key that is not a string: " + e.getKey());
                }
                if (!first) {
                    sb.append(',');
                }
                first = false;
                quote(sb, k);
                sb.append(':');
                write(sb, e.getValue(), depth + 1);
            }
            sb.append('}');
        } else if (v instanceof Iterable<?> it) {
            sb.append('[');
            boolean first = true;
            for (Object o : it) {
                if (!first) {
                    sb.append(',');
                }
                first = false;
                write(sb, o, depth + 1);
            }
            sb.append(']');
        } else if (v instanceof Object[] a) {
            write(sb, java.util.Arrays.asList(a), depth);
        } else {
            throw new IllegalArgumentException("json: cannot write a " + v.getClass().getName());
        }
    }

    private static void quote(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    // Control characters must be escaped; U+2028 and U+2029
                    // are, so that the text is also valid JavaScript; a lone
                    // surrogate is, so that the text stays valid UTF-8.
                    boolean lone = Character.isSurrogate(c) && !(Character.isHighSurrogate(c) && i + 1 < s.length()
                            && Character.isLowSurrogate(s.charAt(i + 1)));
                    if (lone && Character.isLowSurrogate(c) && i > 0 && Character.isHighSurrogate(s.charAt(i - 1))) {
                        lone = false;
                    }
                    if (c < 0x20 || c == 0x2028 || c == 0x2029 || lone) {
                        sb.append(String.format("\\u%04x", (int) c));
                    } else {
                        sb.append(c);
                    }
                }
            }
        }
        sb.append('"');
    }

    private static final class Reader {
        private final String s;
        private int at;

        Reader(String s) {
            if (s == null) {
                throw new IllegalArgumentException("json: no text");
            }
            this.s = s;
        }

        IllegalArgumentException fail(String why) {
            return new IllegalArgumentException("json: " + why + " at offset " + at);
        }

        void space() {
            while (at < s.length()) {
                char c = s.charAt(at);
                if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
                    at++;
                } else {
                    return;
                }
            }
        }

        Object value(int depth) {
            if (at >= s.length()) {
                throw fail("unexpected end");
            }
            char c = s.charAt(at);
            switch (c) {
                case '{':
                    return object(depth + 1);
                case '[':
                    return array(depth + 1);
                case '"':
                    return string();
                case 't':
                    return literal("true", Boolean.TRUE);
                case 'f':
                    return literal("false", Boolean.FALSE);
                case 'n':
                    return literal("null", null);
                default:
                    if (c == '-' || (c >= '0' && c <= '9')) {
                        return number();
                    }
                    throw fail("unexpected character " + describe(c));
            }
        }

        private static String describe(char c) {
            return c < 0x20 || c > 0x7e ? String.format("U+%04X", (int) c) : "'" + c + "'";
        }

        private Object literal(String word, Object v) {
            if (!s.startsWith(word, at)) {
                throw fail("unexpected character " + describe(s.charAt(at)));
            }
            at += word.length();
            return v;
        }

        private Map<String, Object> object(int depth) {
            if (depth > MAX_DEPTH) {
                throw fail("nested deeper than " + MAX_DEPTH);
            }
            at++; // {
            Map<String, Object> m = new LinkedHashMap<>();
            space();
            if (at < s.length() && s.charAt(at) == '}') {
                at++;
                return m;
            }
            for (;;) {
                space();
                if (at >= s.length() || s.charAt(at) != '"') {
                    throw fail("expected a member name");
                }
                String k = string();
                space();
                if (at >= s.length() || s.charAt(at) != ':') {
                    throw fail("expected ':'");
                }
                at++;
                space();
                m.put(k, value(depth));
                space();
                if (at >= s.length()) {
                    throw fail("unexpected end in an object");
                }
                char c = s.charAt(at++);
                if (c == '}') {
                    return m;
                }
                if (c != ',') {
                    at--;
                    throw fail("expected ',' or '}'");
                }
            }
        }

        private List<Object> array(int depth) {
            if (depth > MAX_DEPTH) {
                throw fail("nested deeper than " + MAX_DEPTH);
            }
            at++; // [
            List<Object> l = new ArrayList<>();
            space();
            if (at < s.length() && s.charAt(at) == ']') {
                at++;
                return l;
            }
            for (;;) {
                space();
                l.add(value(depth));
                space();
                if (at >= s.length()) {
                    throw fail("unexpected end in an array");
                }
                char c = s.charAt(at++);
                if (c == ']') {
                    return l;
                }
                if (c != ',') {
                    at--;
                    throw fail("expected ',' or ']'");
                }
            }
        }

        private String string() {
            at++; // "
            StringBuilder sb = null;
            int start = at;
            for (;;) {
                if (at >= s.length()) {
                    throw fail("unterminated string");
                }
                char c = s.charAt(at);
                if (c == '"') {
                    String out = sb == null ? s.substring(start, at) : sb.append(s, start, at).toString();
                    at++;
                    return out;
                }
                if (c < 0x20) {
                    throw fail("control character " + describe(c) + " in a string");
                }
                if (c != '\\') {
                    at++;
                    continue;
                }
                if (sb == null) {
                    sb = new StringBuilder();
                }
                sb.append(s, start, at);
                at++;
                if (at >= s.length()) {
                    throw fail("unterminated escape");
                }
                char e = s.charAt(at++);
                switch (e) {
                    case '"' -> sb.append('"');
                    case '\\' -> sb.append('\\');
                    case '/' -> sb.append('/');
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case 'n' -> sb.append('\n');
                    case 'r' -> sb.append('\r');
                    case 't' -> sb.append('\t');
                    case 'u' -> {
                        if (at + 4 > s.length()) {
                            throw fail("short \\u escape");
                        }
                        int cp = 0;
                        for (int i = 0; i < 4; i++) {
                            int d = Character.digit(s.charAt(at + i), 16);
                            if (d < 0) {
                                throw fail("bad \\u escape");
                            }
                            cp = cp * 16 + d;
                        }
                        at += 4;
                        sb.append((char) cp);
                    }
                    default -> {
                        at--;
                        throw fail("bad escape \\" + describe(e));
                    }
                }
                start = at;
            }
        }

        private Object number() {
            int start = at;
            if (s.charAt(at) == '-') {
                at++;
            }
            if (at >= s.length()) {
                throw fail("a lone '-'");
            }
            char c = s.charAt(at);
            if (c == '0') {
                at++;
            } else if (c >= '1' && c <= '9') {
                digits();
            } else {
                throw fail("expected a digit");
            }
            boolean integral = true;
            if (at < s.length() && s.charAt(at) == '.') {
                integral = false;
                at++;
                if (digits() == 0) {
                    throw fail("expected a digit after '.'");
                }
            }
            if (at < s.length() && (s.charAt(at) == 'e' || s.charAt(at) == 'E')) {
                integral = false;
                at++;
                if (at < s.length() && (s.charAt(at) == '+' || s.charAt(at) == '-')) {
                    at++;
                }
                if (digits() == 0) {
                    throw fail("expected a digit in the exponent");
                }
            }
            String t = s.substring(start, at);
            if (integral) {
                if (t.length() <= 18) {
                    return Long.parseLong(t);
                }
                BigInteger b = new BigInteger(t);
                return b.bitLength() < 64 ? (Object) b.longValue() : b;
            }
            // A double when it can carry the number at all (correctly
            // rounded, -0.0 kept); only one out of its range stays a
            // BigDecimal.
            double d = Double.parseDouble(t);
            if (!Double.isInfinite(d)) {
                return d;
            }
            BigDecimal bd;
            try {
                bd = new BigDecimal(t);
            } catch (NumberFormatException | ArithmeticException e) {
                throw fail("number out of range");
            }
            return bd;
        }

        private int digits() {
            int n = 0;
            while (at < s.length() && s.charAt(at) >= '0' && s.charAt(at) <= '9') {
                at++;
                n++;
            }
            return n;
        }
    }

    // ---- reading members of a decoded answer ----

    @SuppressWarnings("unchecked")
    static Map<String, Object> obj(Object v) {
        return v instanceof Map<?, ?> m ? (Map<String, Object>) m : Collections.emptyMap();
    }

    static Map<String, Object> obj(Map<String, Object> m, String k) {
        return obj(m.get(k));
    }

    static List<Object> list(Map<String, Object> m, String k) {
        Object v = m.get(k);
        if (v instanceof List<?> l) {
            return Collections.unmodifiableList(new ArrayList<>(l));
        }
        return Collections.emptyList();
    }

    static String str(Map<String, Object> m, String k) {
        Object v = m.get(k);
        return v instanceof String s ? s : "";
    }

    static long lng(Map<String, Object> m, String k) {
        Object v = m.get(k);
        if (v instanceof Long l) {
            return l;
        }
        if (v instanceof Number n) {
            double d = n.doubleValue();
            if (d == Math.rint(d) && Math.abs(d) < 9.2e18) {
                return n.longValue();
            }
        }
        return 0;
    }

    static List<String> strings(Map<String, Object> m, String k) {
        List<String> out = new ArrayList<>();
        for (Object o : list(m, k)) {
            if (o instanceof String s) {
                out.add(s);
            }
        }
        return Collections.unmodifiableList(out);
    }

    static Map<String, String> stringMap(Map<String, Object> m, String k) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Map.Entry<String, Object> e : obj(m, k).entrySet()) {
            if (e.getValue() instanceof String s) {
                out.put(e.getKey(), s);
            }
        }
        return Collections.unmodifiableMap(out);
    }
}
