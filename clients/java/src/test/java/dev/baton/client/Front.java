package dev.baton.client;

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
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Predicate;

/**
 * A front for the live node, for the tests that count requests or fail
 * them: refuse(method + " " + path) answers 503; the rest is forwarded.
 * seen records every request's method and path. No streaming.
 */
final class Front implements AutoCloseable {
    final HttpServer srv;
    final String url;
    final List<String> seen = new CopyOnWriteArrayList<>();
    volatile Predicate<String> refuse = r -> false;
    private final HttpClient up = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final ExecutorService pool = Executors.newCachedThreadPool();

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
        pool.shutdownNow();
    }
}
