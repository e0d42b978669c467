package dev.baton.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The retry rules, through a front that answers 503 where a rule says and
 * forwards the rest to the live node: what is safe to repeat is repeated,
 * an acquire that may have reached a node is not, a node that refuses the
 * connection is skipped, and a lease whose renewals fail is lost by the
 * client's own clock.
 */
@Timeout(60)
class RetryTest {
    /** A front for the live node: refuse(method + " " + path) answers 503; the rest is forwarded. No streaming. */
    private static final class Front implements AutoCloseable {
        final HttpServer srv;
        final String url;
        final List<String> seen = new CopyOnWriteArrayList<>();
        volatile Predicate<String> refuse = r -> false;
        private final HttpClient up = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

        Front() throws IOException {
            srv = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
            srv.createContext("/", this::handle);
            srv.setExecutor(java.util.concurrent.Executors.newCachedThreadPool());
            srv.start();
            url = "http://127.0.0.1:" + srv.getAddress().getPort();
        }

        private void handle(HttpExchange ex) throws IOException {
            String what = ex.getRequestMethod() + " " + ex.getRequestURI().getPath();
            seen.add(what);
            byte[] body;
            try (InputStream in = ex.getRequestBody()) {
                body = in.readAllBytes();
            }
            if (refuse.test(what)) {
                byte[] p = "{\"type\":\"urn:baton:problem:unavailable\",\"title\":\"Service unavailable\",\"status\":503,\"code\":\"unavailable\",\"detail\":\"injected\"}"
                        .getBytes(StandardCharsets.UTF_8);
                ex.getResponseHeaders().set("Content-Type", "application/problem+json");
                ex.sendResponseHeaders(503, p.length);
                ex.getResponseBody().write(p);
                ex.close();
                return;
            }
            HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(Live.addr() + ex.getRequestURI()))
                    .method(ex.getRequestMethod(), body.length == 0 ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofByteArray(body));
            String ct = ex.getRequestHeaders().getFirst("Content-Type");
            if (ct != null) {
                rb.header("Content-Type", ct);
            }
            try {
                HttpResponse<byte[]> r = up.send(rb.build(), HttpResponse.BodyHandlers.ofByteArray());
                r.headers().firstValue("Content-Type").ifPresent(v -> ex.getResponseHeaders().set("Content-Type", v));
                ex.sendResponseHeaders(r.statusCode(), r.statusCode() == 204 ? -1 : r.body().length);
                if (r.statusCode() != 204) {
                    ex.getResponseBody().write(r.body());
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                ex.close();
            }
        }

        long count(String what) {
            return seen.stream().filter(s -> s.startsWith(what)).count();
        }

        @Override
        public void close() {
            srv.stop(0);
        }
    }

    private static Client through(String... endpoints) {
        return Client.builder().endpoints(endpoints).retryBackoff(Duration.ofMillis(10)).timeout(Duration.ofSeconds(5)).build();
    }

    @Test
    void whatIsSafeToRepeatIsRetriedAndAnAcquireIsNot() throws Exception {
        String name = Live.name("retry");
        try (Front f = new Front(); Client c = through(f.url); Client direct = Live.client()) {
            try (Lock lk = direct.acquire(name)) {
                int[] n = {0};
                f.refuse = r -> r.startsWith("GET /v1/locks/") && n[0]++ < 2;
                assertEquals(lk.token(), c.getLock(name).token(), "a read is retried through two 503s");
                assertEquals(3, f.count("GET /v1/locks/"));
            }
            f.refuse = r -> r.startsWith("POST /v1/locks/");
            UnavailableException e = assertThrows(UnavailableException.class, () -> c.acquire(name));
            assertTrue(e.outcomeUnknown(), e.getMessage());
            assertTrue(e.getMessage().contains("the outcome is unknown"), e.getMessage());
            assertEquals(1, f.count("POST /v1/locks/"), "an acquire outside a session is sent once");
        }
    }

    @Test
    void aNodeThatRefusesTheConnectionIsSkippedEvenForAnAcquire() throws Exception {
        String dead = "http://127.0.0.1:" + Live.ports(1)[0];
        try (Client c = through(dead, Live.addr()); Lock lk = c.acquire(Live.name("skip"))) {
            assertTrue(lk.token() > 0);
        }
    }

    @Test
    void aLeaseWhoseRenewalsFailIsLostByTheClientsClock() throws Exception {
        try (Front f = new Front(); Client c = through(f.url)) {
            // The stream and the renewals get 503s: only the clock can tell.
            f.refuse = r -> r.startsWith("GET /v1/events") || r.endsWith("/renew");
            Lock lk = c.acquire(Live.name("clock"), AcquireOptions.defaults().ttl(Duration.ofSeconds(2)));
            LockLostException why = lk.lost().get(5, TimeUnit.SECONDS);
            assertTrue(why.getMessage().contains("ran out by this client's clock"), why.getMessage());
            assertTrue(f.count("POST /v1/locks/") > 1, "it tried to renew");
            assertFalse(why.event().isPresent());
        }
    }
}
