package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.fail;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The client's JSON, fuzzed: random values survive a write and a read;
 * random and mutated text is either read or refused with an
 * IllegalArgumentException, never another exception, a hang or a stack
 * overflow; and what is read writes back to text that reads the same.
 * The seed is printed on a failure, to replay it.
 */
class JsonTest {
    private static final long SEED = Long.getLong("json.seed", System.nanoTime());

    @Test
    void examples() {
        assertEquals(Map.of("a", List.of(1L, 2.5, "x", true, false), "b", Map.of()), Json.parse(" {\"a\":[1,2.5,\"x\",true,false],\"b\":{}} "));
        assertEquals(null, Json.parse("null"));
        assertEquals("é\u0000\ud83d\ude00/", Json.parse("\"\\u00e9\\u0000\\ud83d\\ude00\\/\""));
        assertEquals(new BigInteger("123456789012345678901234567890"), Json.parse("123456789012345678901234567890"));
        assertEquals(Long.MIN_VALUE, Json.parse("-9223372036854775808"));
        assertEquals(1e300, Json.parse("1e300"));
        assertEquals("[3.0,3,1.0E20]", Json.write(List.of(3.0, 3, 1e20)));
        assertEquals(List.of(3.0, 3L, 1e20), Json.parse("[3.0,3,1.0E20]"));
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("k", "a\"b\\c\n\u0001");
        doc.put("n", java.util.Arrays.asList(1, -2L, 0.5, null));
        assertEquals("{\"k\":\"a\\\"b\\\\c\\n\\u0001\",\"n\":[1,-2,0.5,null]}", Json.write(doc));
        for (String bad : new String[] {"", " ", "01", "1.", ".5", "-", "+1", "1e", "[1,]", "{\"a\":1,}", "{'a':1}", "[1 2]", "tru",
            "nul", "\"\\x\"", "\"\u0001\"", "\"abc", "[", "{", "{\"a\"}", "{\"a\":}", "1 2", "NaN", "Infinity", "/*c*/1", "\"\\u12\"",
            "[" .repeat(Json.MAX_DEPTH + 1) + "]".repeat(Json.MAX_DEPTH + 1)}) {
            assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
        }
        assertThrows(IllegalArgumentException.class, () -> Json.write(Double.NaN));
        assertThrows(IllegalArgumentException.class, () -> Json.write(Map.of(1, 2)));
        assertThrows(IllegalArgumentException.class, () -> Json.write(new Object()));
    }

    @Test
    void randomValuesRoundTrip() {
        Random r = new Random(SEED);
        for (int i = 0; i < 5000; i++) {
            Object v = value(r, 0);
            String text = Json.write(v);
            Object back;
            try {
                back = Json.parse(text);
            } catch (IllegalArgumentException e) {
                throw new AssertionError("seed " + SEED + ": wrote what it cannot read: " + text, e);
            }
            assertEquals(v, back, "seed " + SEED + ": " + text);
            assertEquals(text, Json.write(back), "seed " + SEED);
        }
    }

    @Test
    void garbageAndMutationsAreReadOrRefusedCleanly() {
        Random r = new Random(SEED + 1);
        String alphabet = "{}[]\":,.-+eE0123456789 \t\n\\/utrfalsn\u00e9\u2028\ud83d";
        for (int i = 0; i < 20000; i++) {
            String text;
            if (i % 2 == 0) {
                StringBuilder sb = new StringBuilder();
                int n = r.nextInt(40);
                for (int j = 0; j < n; j++) {
                    sb.append(alphabet.charAt(r.nextInt(alphabet.length())));
                }
                text = sb.toString();
            } else {
                // A valid document with one character changed, inserted or removed.
                StringBuilder sb = new StringBuilder(Json.write(value(r, 0)));
                int at = sb.length() == 0 ? 0 : r.nextInt(sb.length());
                switch (r.nextInt(3)) {
                    case 0 -> {
                        if (sb.length() > 0) {
                            sb.setCharAt(at, alphabet.charAt(r.nextInt(alphabet.length())));
                        }
                    }
                    case 1 -> sb.insert(at, alphabet.charAt(r.nextInt(alphabet.length())));
                    default -> {
                        if (sb.length() > 0) {
                            sb.deleteCharAt(at);
                        }
                    }
                }
                text = sb.toString();
            }
            Object v;
            try {
                v = Json.parse(text);
            } catch (IllegalArgumentException e) {
                continue;
            } catch (RuntimeException | StackOverflowError e) {
                fail("seed " + SEED + ": " + e + " reading " + text);
                return;
            }
            assertEquals(v, Json.parse(Json.write(v)), "seed " + SEED + ": " + text);
        }
    }

    private static Object value(Random r, int depth) {
        int kind = r.nextInt(depth > 4 ? 6 : 8);
        switch (kind) {
            case 0:
                return null;
            case 1:
                return r.nextBoolean();
            case 2:
                return r.nextInt(3) == 0 ? r.nextLong() : (long) r.nextInt(1000) - 500;
            case 3: {
                double d = r.nextInt(2) == 0 ? r.nextDouble() * Math.pow(10, r.nextInt(40) - 20) : r.nextGaussian();
                return r.nextInt(4) == 0 ? Math.rint(d) : d; // integral doubles stay doubles
            }
            case 4:
            case 5:
                return string(r);
            case 6: {
                List<Object> l = new ArrayList<>();
                for (int i = r.nextInt(5); i > 0; i--) {
                    l.add(value(r, depth + 1));
                }
                return l;
            }
            default: {
                Map<String, Object> m = new LinkedHashMap<>();
                for (int i = r.nextInt(5); i > 0; i--) {
                    m.put(string(r), value(r, depth + 1));
                }
                return m;
            }
        }
    }

    private static String string(Random r) {
        StringBuilder sb = new StringBuilder();
        for (int i = r.nextInt(12); i > 0; i--) {
            int k = r.nextInt(10);
            if (k < 5) {
                sb.append((char) ('a' + r.nextInt(26)));
            } else if (k < 7) {
                sb.append("\"\\/\b\f\n\r\t\u0000\u001f\u2028".charAt(r.nextInt(11)));
            } else if (k < 9) {
                sb.append((char) r.nextInt(0xd800));
            } else {
                sb.appendCodePoint(0x10000 + r.nextInt(0x100000));
            }
        }
        return sb.toString();
    }
}
