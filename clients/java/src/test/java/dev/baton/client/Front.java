package dev.baton.client;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Predicate;

/**
 * A front for the live node, for the tests that count requests or fail
 * them: refuse(method + " " + path) answers 503; the rest is forwarded.
 * seen records every request's method and path. An event stream is
 * relayed as it comes; cut() ends the streams it relays, as a proxy
 * that drops them would.
 */
final class Front implements AutoCloseable {
    final HttpServer srv;
    final String url;
    final List<String> seen = new CopyOnWriteArrayList<>();
    volatile Predicate<String> refuse = r -> false;
    private final HttpClient up = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final ExecutorService pool = Executors.newCachedThreadPool();
    private final Set<InputStream> streams = ConcurrentHashMap.newKeySet();

    Front() throws IOException {
        srv = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        srv.createContext("/", this::handle);
        srv.setExecutor(pool);
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
        for (String h : List.of("Content-Type", "Accept", "Last-Event-ID")) {
            String v = ex.getRequestHeaders().getFirst(h);
            if (v != null) {
                rb.header(h, v);
            }
        }
        try {
            HttpResponse<InputStream> r = up.send(rb.build(), HttpResponse.BodyHandlers.ofInputStream());
            String ct = r.headers().firstValue("Content-Type").orElse("");
            if (!ct.isEmpty()) {
                ex.getResponseHeaders().set("Content-Type", ct);
            }
            if (r.statusCode() == 200 && ct.startsWith("text/event-stream")) {
                relay(ex, r.body());
                return;
            }
            byte[] b;
            try (InputStream in = r.body()) {
                b = in.readAllBytes();
            }
            ex.sendResponseHeaders(r.statusCode(), r.statusCode() == 204 ? -1 : b.length);
            if (r.statusCode() != 204) {
                ex.getResponseBody().write(b);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            ex.close();
        }
    }

    /** relay copies an event stream as it comes, until either side ends it or cut() does. */
    private void relay(HttpExchange ex, InputStream in) {
        streams.add(in);
        try (in) {
            ex.sendResponseHeaders(200, 0);
            OutputStream out = ex.getResponseBody();
            byte[] buf = new byte[8192];
            for (int n; (n = in.read(buf)) >= 0;) {
                out.write(buf, 0, n);
                out.flush();
            }
        } catch (IOException e) {
            // One side hung up, or cut() ended it.
        } finally {
            streams.remove(in);
        }
    }

    /** cut ends every event stream the front relays. */
    void cut() {
        for (InputStream in : streams) {
            try {
                in.close();
            } catch (IOException e) {
                // Closed already.
            }
        }
    }

    long count(String what) {
        return seen.stream().filter(s -> s.startsWith(what)).count();
    }

    @Override
    public void close() {
        cut();
        srv.stop(0);
        pool.shutdownNow();
    }
}
