package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Every problem code of the server is mapped to an exception class of its
 * own, with its status and retry class: checked against package problem's
 * table (problem/problem.go, where codes are defined) and against every
 * code the OpenAPI document (openapi/openapi.json) names in an error
 * response, with that response's status.
 */
class ProblemCodeTest {
    /** The net/http status constants problem.go's table uses; a new one fails the test until added here. */
    private static final Map<String, Integer> HTTP = Map.ofEntries(Map.entry("StatusBadRequest", 400),
            Map.entry("StatusUnauthorized", 401), Map.entry("StatusForbidden", 403), Map.entry("StatusNotFound", 404),
            Map.entry("StatusMethodNotAllowed", 405), Map.entry("StatusConflict", 409), Map.entry("StatusRequestEntityTooLarge", 413),
            Map.entry("StatusUnsupportedMediaType", 415), Map.entry("StatusMisdirectedRequest", 421),
            Map.entry("StatusTooManyRequests", 429), Map.entry("StatusInternalServerError", 500),
            Map.entry("StatusServiceUnavailable", 503), Map.entry("StatusInsufficientStorage", 507));

    private record Row(int status, String retry) {}

    /** problemGo parses problem.go: its Code constants and its table's rows, by code. */
    private static Map<String, Row> problemGo() throws IOException {
        String src = Files.readString(Live.repo().resolve("problem/problem.go"));
        Map<String, String> consts = new HashMap<>();
        Matcher m = Pattern.compile("(?m)^\\s*(\\w+)\\s+Code\\s*=\\s*\"([a-z_]+)\"").matcher(src);
        while (m.find()) {
            consts.put(m.group(1), m.group(2));
        }
        String table = src.substring(src.indexOf("var table = []Info{"));
        table = table.substring(0, table.indexOf("\n}\n"));
        Map<String, Row> rows = new LinkedHashMap<>();
        Matcher r = Pattern.compile("(?m)^\\s*\\{(\\w+),\\s*(http\\.\\w+|\\d+),\\s*\"[^\"]*\",\\s*(Final|Later|Elsewhere),\\s*\\w+\\},")
                .matcher(table);
        while (r.find()) {
            String st = r.group(2);
            Integer status = st.startsWith("http.") ? HTTP.get(st.substring(5)) : Integer.valueOf(st);
            assertTrue(status != null, "status " + st + ": add it to HTTP");
            assertTrue(consts.containsKey(r.group(1)), "table row " + r.group(1) + " names no Code constant");
            rows.put(consts.get(r.group(1)), new Row(status, r.group(3).toUpperCase()));
        }
        assertTrue(rows.size() >= 30, "parsed only " + rows.size() + " rows of problem.go");
        assertEquals(consts.size(), rows.size(), "every Code constant has a table row");
        return rows;
    }

    @Test
    void everyCodeOfProblemGoIsMappedWithItsStatusAndRetry() throws IOException {
        Map<String, Row> rows = problemGo();
        for (Map.Entry<String, Row> e : rows.entrySet()) {
            ProblemCode pc = ProblemCode.of(e.getKey()).orElseThrow(() -> new AssertionError("code " + e.getKey() + " is not in ProblemCode"));
            assertEquals(e.getValue().status(), pc.status(), "status of " + e.getKey());
            assertEquals(e.getValue().retry(), pc.retry().name(), "retry class of " + e.getKey());
        }
        Set<String> ours = new TreeSet<>();
        for (ProblemCode pc : ProblemCode.values()) {
            ours.add(pc.code());
        }
        assertEquals(new TreeSet<>(rows.keySet()), ours, "ProblemCode lists exactly the server's codes");
    }

    /** Every error response of openapi.json names its codes in its description, as "not_held: …" or "rate_limited, or …". */
    @Test
    void everyCodeTheOpenApiDocumentNamesIsMappedAndAnsweredWithItsStatus() throws IOException {
        Map<String, Object> doc = Json.obj(Json.parse(Files.readString(Live.repo().resolve("openapi/openapi.json"))));
        Set<String> known = new HashSet<>();
        for (ProblemCode pc : ProblemCode.values()) {
            known.add(pc.code());
        }
        Pattern word = Pattern.compile("\\b[a-z]+(?:_[a-z]+)*\\b");
        Set<String> named = new TreeSet<>();
        int responses = 0;
        for (Object ops : Json.obj(doc, "paths").values()) {
            for (Object op : Json.obj(ops).values()) {
                for (Map.Entry<String, Object> resp : Json.obj(Json.obj(op), "responses").entrySet()) {
                    int status = resp.getKey().matches("\\d{3}") ? Integer.parseInt(resp.getKey()) : 0;
                    if (status < 400) {
                        continue;
                    }
                    responses++;
                    String desc = Json.str(Json.obj(resp.getValue()), "description");
                    Matcher m = word.matcher(desc);
                    boolean any = false;
                    while (m.find()) {
                        ProblemCode pc = ProblemCode.of(m.group()).orElse(null);
                        if (pc == null) {
                            // Snake-case words are codes: one this client lacks fails here.
                            assertTrue(!m.group().contains("_") || isMember(m.group()),
                                    "openapi.json names " + m.group() + " (a " + status + "), which ProblemCode lacks");
                            continue;
                        }
                        any = true;
                        named.add(pc.code());
                        // too_many_streams is a 429 for the client's cap and a 503 for the node's.
                        assertTrue(pc.status() == status || pc.code().equals("too_many_streams")
                                || (pc.code().equals("too_many_locks_in_session") && status == 429) || anotherCodeHas(desc, status),
                                pc.code() + " documented under " + status + ", mapped as " + pc.status());
                    }
                    assertTrue(any, "a " + status + " response that names no code: " + desc);
                }
            }
        }
        assertTrue(responses > 100, "parsed only " + responses + " error responses");
        assertTrue(named.size() >= 30, "openapi.json named only " + named);
        assertTrue(known.containsAll(named));
    }

    /** Problem members and request fields the descriptions name beside codes. */
    private static boolean isMember(String w) {
        return Set.of("max_token", "delayed_until", "retry_after", "lock_delay").contains(w);
    }

    /** A description may name several codes of several statuses ("forbidden …; or cross_origin"): one of its codes has status. */
    private static boolean anotherCodeHas(String desc, int status) {
        Matcher m = Pattern.compile("\\b[a-z]+(?:_[a-z]+)*\\b").matcher(desc);
        while (m.find()) {
            if (ProblemCode.of(m.group()).map(pc -> pc.status() == status).orElse(false)) {
                return true;
            }
        }
        return false;
    }

    @Test
    void everyCodeHasAnExceptionClassOfItsOwn() {
        Set<Class<?>> classes = new HashSet<>();
        for (ProblemCode pc : ProblemCode.values()) {
            Class<? extends BatonException> cls = pc.exceptionClass();
            assertTrue(classes.add(cls), "two codes share " + cls);
            assertTrue(Modifier.isPublic(cls.getModifiers()));
            BatonException e = ProblemCode.decode(pc.status(), "{\"code\":\"" + pc.code() + "\",\"title\":\"t\",\"status\":"
                    + pc.status() + ",\"detail\":\"d\"}", true, null, "op");
            assertSame(cls, e.getClass(), pc.code());
            assertEquals(pc, e.problemCode().orElseThrow());
            if (pc.retry() == ProblemCode.Retry.ELSEWHERE || pc.status() >= 500) {
                assertInstanceOf(UnavailableException.class, e, pc.code());
            }
        }
        assertSame(HeldException.class, ProblemCode.LOCK_HELD.exceptionClass());
        assertSame(ForbiddenException.class, ProblemCode.CROSS_ORIGIN.exceptionClass().getSuperclass());
    }

    @Test
    void anAnswerDecodesWithItsMembers() {
        String body = "{\"type\":\"urn:baton:problem:lock_held\",\"title\":\"Lock held\",\"status\":409,\"code\":\"lock_held\","
                + "\"detail\":\"held by \\\"w1\\\"\",\"holder\":{\"name\":\"x\",\"owner\":\"w1\",\"token\":7,\"ttl\":\"30s\","
                + "\"acquired_at\":\"2026-01-02T03:04:05.678Z\",\"expires_at\":\"2026-01-02T03:04:35.678Z\",\"metadata\":{}}}";
        HeldException e = (HeldException) ProblemCode.decode(409, body, true, "3", "acquire \"x\"");
        assertEquals(7, e.holder().orElseThrow().token());
        assertEquals(Duration.ofSeconds(30), e.holder().orElseThrow().ttl());
        assertEquals(Duration.ofSeconds(3), e.retryAfter().orElseThrow());
        assertEquals("baton: acquire \"x\": held by \"w1\" (409 lock_held)", e.getMessage());

        BatonException stale = ProblemCode.decode(409, "{\"code\":\"stale_token\",\"max_token\":4712,\"retry_after\":2}", true, null, "");
        assertEquals(4712, stale.maxToken().orElseThrow());
        assertEquals(Duration.ofSeconds(2), stale.retryAfter().orElseThrow());
    }

    @Test
    void forbiddenAndQuotaExceededDecodeTheirRolePrefixesAndQuota() {
        BatonException f = ProblemCode.decode(403, "{\"type\":\"urn:baton:problem:forbidden\",\"title\":\"Forbidden\",\"status\":403,"
                + "\"code\":\"forbidden\",\"detail\":\"d\",\"role\":\"write\",\"prefixes\":[\"team-a.\",\"shared.\"]}", true, null, "");
        assertSame(ForbiddenException.class, f.getClass());
        assertEquals("write", f.role());
        assertEquals(List.of("team-a.", "shared."), f.prefixes());
        assertEquals("", f.quota());

        BatonException q = ProblemCode.decode(429, "{\"type\":\"urn:baton:problem:quota_exceeded\",\"title\":\"Quota exceeded\","
                + "\"status\":429,\"code\":\"quota_exceeded\",\"detail\":\"d\",\"quota\":\"holds\",\"limit\":10,\"retry_after\":1}",
                true, null, "");
        assertSame(QuotaExceededException.class, q.getClass());
        assertEquals("holds", q.quota());
        assertEquals(10, q.limit().orElseThrow());
        assertEquals(Duration.ofSeconds(1), q.retryAfter().orElseThrow());
        assertEquals(ProblemCode.Retry.LATER, q.problemCode().orElseThrow().retry());
        assertEquals("", q.role());
        assertEquals(List.of(), q.prefixes());
    }

    @Test
    void anAnswerWithoutAKnownCodeIsClassedByItsStatus() {
        assertInstanceOf(UnavailableException.class, ProblemCode.decode(502, "<html>bad gateway</html>", false, null, ""));
        assertEquals("<html>bad gateway</html>", ProblemCode.decode(502, "<html>bad gateway</html>", false, null, "").detail());
        assertSame(UnauthorizedException.class, ProblemCode.decode(401, "", false, null, "").getClass());
        assertSame(ForbiddenException.class, ProblemCode.decode(403, "", false, null, "").getClass());
        BatonException future = ProblemCode.decode(409, "{\"code\":\"from_the_future\",\"title\":\"New\"}", true, null, "");
        assertSame(BatonException.class, future.getClass());
        assertEquals("from_the_future", future.code());
        assertInstanceOf(UnavailableException.class, ProblemCode.decode(500, "not json", true, null, ""));
    }

    @Test
    void aRealAnswerOfTheNodeIsTyped() {
        try (Client c = Live.client()) {
            InvalidRequestException e = org.junit.jupiter.api.Assertions.assertThrows(InvalidRequestException.class,
                    () -> c.acquire("bad name with spaces"));
            assertEquals(400, e.status());
            assertTrue(!e.requestId().isEmpty(), "the request id is carried");
            RouteNotFoundException r = org.junit.jupiter.api.Assertions.assertThrows(RouteNotFoundException.class,
                    () -> c.call(new Client.Req("nowhere", "GET", "/v1/nowhere", null, null, true, null)));
            assertEquals(404, r.status());
        }
    }
}
