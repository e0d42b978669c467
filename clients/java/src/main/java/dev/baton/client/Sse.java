package dev.baton.client;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpResponse.BodySubscribers;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/** Server-Sent Events streams kept connected across broken connections, nodes and restarts. */
final class Sse {
    /**
     * How long a stream may stay silent before it is taken for dead: the
     * server sends a comment every 15 s, so three missed ones mean a
     * connection that died without a word (a half-open TCP connection
     * after a partition never errors by itself).
     */
    static final Duration IDLE = Duration.ofSeconds(45);

    private Sse() {}

    /** What a connection asks for. lastId 0: no Last-Event-ID. */
    record Target(String path, Map<String, String> query, long lastId) {}

    /** One kind of stream: what to ask for, and what to do with each message. */
    interface Source {
        /** Readies the next connection; it may call the API. A throw is why it cannot be made yet. */
        default void prepare() {}

        Target target();

        /** Takes one message; it may block (a slow reader). A throw ends the connection. */
        void dispatch(String id, String type, String data);
    }

    /**
     * Runner keeps a source connected until stop(), or until a node refuses
     * the request itself with a 4xx no reconnection can mend (then
     * refused gets that exception, once). It reconnects to the next
     * endpoint after a backoff whenever a connection breaks or cannot be
     * made. It runs on the client's threads: no thread of its own.
     */
    static final class Runner {
        private final Client c;
        private final String what;
        private final Source src;
        private final Consumer<BatonException> refused;
        private final Duration idle;
        private final Object mu = new Object();
        // conn counts connections: callbacks of any but the current one are ignored.
        private int conn;
        private boolean stopped;
        private int failures;
        private int endpoint;
        private Flow.Subscription sub;
        private CompletableFuture<?> pending;
        private ScheduledFuture<?> watchdog;
        private volatile long lastData;
        private volatile boolean connected;

        Runner(Client c, String what, Source src, Consumer<BatonException> refused, Duration idle) {
            this.c = c;
            this.what = what;
            this.src = src;
            this.refused = refused;
            this.idle = idle;
            this.endpoint = c.preferredEndpoint();
        }

        void start() {
            c.workers().execute(this::connect);
        }

        /** Whether a connection is open now. */
        boolean connected() {
            return connected;
        }

        void stop() {
            synchronized (mu) {
                stopped = true;
                conn++;
                closeLocked();
            }
        }

        private void closeLocked() {
            connected = false;
            if (sub != null) {
                sub.cancel();
                sub = null;
            }
            if (pending != null) {
                pending.cancel(true);
                pending = null;
            }
            if (watchdog != null) {
                watchdog.cancel(false);
                watchdog = null;
            }
        }

        private void connect() {
            int my;
            synchronized (mu) {
                if (stopped) {
                    return;
                }
                my = ++conn;
            }
            String base = c.endpoint(endpoint);
            Target t;
            try {
                src.prepare();
                t = src.target();
            } catch (BatonException e) {
                ended(my, false, e);
                return;
            } catch (RuntimeException e) {
                ended(my, false, new UnavailableException(Problem.unavailable(base, what + ": " + e, what, e)));
                return;
            }
            HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(c.url(base, t.path(), t.query())))
                    .timeout(c.timeout())
                    .header("Accept", "text/event-stream")
                    .header("Cache-Control", "no-cache")
                    .GET();
            c.authorize(rb);
            if (t.lastId() > 0) {
                rb.header("Last-Event-ID", Long.toString(t.lastId()));
            }
            Lines lines = new Lines(my);
            HttpResponse.BodyHandler<Object> handler = info -> {
                if (info.statusCode() == 200) {
                    opened(my);
                    return BodySubscribers.fromLineSubscriber(lines, l -> (Object) null, StandardCharsets.UTF_8, null);
                }
                return BodySubscribers.mapping(BodySubscribers.ofString(StandardCharsets.UTF_8), s -> (Object) s);
            };
            CompletableFuture<HttpResponse<Object>> f = c.http().sendAsync(rb.build(), handler);
            synchronized (mu) {
                if (my != conn) {
                    f.cancel(true);
                    return;
                }
                pending = f;
            }
            f.whenComplete((resp, ex) -> {
                if (ex != null) {
                    ended(my, false, new UnavailableException(Problem.unavailable(base, what + " stream: " + Client.describe(ex), what, ex)));
                } else if (resp.statusCode() != 200) {
                    String ct = resp.headers().firstValue("Content-Type").orElse("");
                    ended(my, false, ProblemCode.decode(resp.statusCode(), (String) resp.body(), Client.isJson(ct),
                            resp.headers().firstValue("Retry-After").orElse(null), what));
                } else {
                    ended(my, true, new UnavailableException(Problem.unavailable(base, what + " stream ended", what, null)));
                }
            });
        }

        private void opened(int my) {
            synchronized (mu) {
                if (my != conn) {
                    return;
                }
                connected = true;
                lastData = System.nanoTime();
                c.setPreferred(endpoint);
                long every = Math.max(idle.toMillis() / 3, 10);
                watchdog = c.scheduler().scheduleAtFixedRate(() -> {
                    if (System.nanoTime() - lastData > idle.toNanos()) {
                        ended(my, true, new UnavailableException(Problem.unavailable(c.endpoint(endpoint),
                                what + ": silent for " + idle.toMillis() + " ms", what, null)));
                    }
                }, every, every, TimeUnit.MILLISECONDS);
            }
        }

        /** ended takes the end of connection my, and reconnects after a pause unless the node refused the request itself. */
        private void ended(int my, boolean wasConnected, BatonException why) {
            long pause;
            boolean stop;
            synchronized (mu) {
                if (my != conn || stopped) {
                    return;
                }
                conn++;
                closeLocked();
                // A 401 when the token file has a new token (a JWT renewed
                // before the old one expired, which ended the stream): the
                // same node again, at once.
                boolean renewed = Client.refused(why) && why.status() == 401 && c.reloadToken();
                stop = Client.refused(why) && !renewed;
                if (stop) {
                    stopped = true;
                } else if (!renewed) {
                    failures = wasConnected ? 0 : failures + 1;
                    endpoint = (endpoint + 1) % c.endpointCount();
                }
                // Even after a stream that worked there is a short pause: a
                // node that accepts and at once drops the stream must not
                // make us spin.
                long ra = why.retryAfter().map(Duration::toMillis).orElse(0L);
                pause = renewed ? 0 : Math.max(c.backoffMillis(failures), Math.min(ra, Client.MAX_RETRY_AFTER_MS));
            }
            if (stop) {
                refused.accept(why);
                return;
            }
            try {
                c.scheduler().schedule(() -> c.workers().execute(this::connect), pause, TimeUnit.MILLISECONDS);
            } catch (RejectedExecutionException closed) {
                // The client is closed: so is the stream.
            }
        }

        /** Lines parses one connection's text/event-stream body and hands each message to the source. */
        private final class Lines implements Flow.Subscriber<String> {
            private final int my;
            private Flow.Subscription s;
            private final List<String> data = new ArrayList<>();
            private String id = "";
            private String type = "";

            Lines(int my) {
                this.my = my;
            }

            @Override
            public void onSubscribe(Flow.Subscription s) {
                synchronized (mu) {
                    if (my != conn) {
                        s.cancel();
                        return;
                    }
                    sub = s;
                }
                this.s = s;
                s.request(1);
            }

            @Override
            public void onNext(String line) {
                lastData = System.nanoTime();
                try {
                    take(line);
                } catch (RuntimeException e) {
                    BatonException why = e instanceof BatonException b ? b
                            : new UnavailableException(Problem.unavailable(c.endpoint(endpoint), what + ": " + e, what, e));
                    ended(my, true, why);
                    return;
                }
                lastData = System.nanoTime();
                s.request(1);
            }

            private void take(String line) {
                if (line.endsWith("\r")) {
                    line = line.substring(0, line.length() - 1);
                }
                if (line.isEmpty()) {
                    // A blank line ends a message.
                    if (!data.isEmpty()) {
                        String d = String.join("\n", data);
                        data.clear();
                        String i = id;
                        String ty = type;
                        id = "";
                        type = "";
                        synchronized (mu) {
                            if (my != conn) {
                                return;
                            }
                        }
                        src.dispatch(i, ty, d);
                    }
                    id = "";
                    type = "";
                    return;
                }
                if (line.startsWith(":")) {
                    return; // a comment: a heartbeat, or why the server ends the stream
                }
                int colon = line.indexOf(':');
                String field = colon < 0 ? line : line.substring(0, colon);
                String v = colon < 0 ? "" : line.substring(colon + 1);
                if (v.startsWith(" ")) {
                    v = v.substring(1);
                }
                switch (field) {
                    case "data" -> data.add(v);
                    case "id" -> id = v;
                    case "event" -> type = v;
                    default -> { }
                }
            }

            @Override
            public void onError(Throwable t) {
                ended(my, true, new UnavailableException(Problem.unavailable(c.endpoint(endpoint),
                        what + " stream: " + Client.describe(t), what, t)));
            }

            @Override
            public void onComplete() {
                ended(my, true, new UnavailableException(Problem.unavailable(c.endpoint(endpoint), what + " stream ended", what, null)));
            }
        }
    }
}
