package dev.baton.client;

import java.io.IOException;
import java.net.ConnectException;
import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpConnectTimeoutException;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

/**
 * A client of a baton cluster, over HTTP with {@link HttpClient}. It keeps
 * the locks, leaderships, permits, read/write lock holds and lock sets it
 * grants alive in the background and, while it holds any, one event stream
 * that tells it of their loss within milliseconds.
 *
 * <pre>{@code
 * Client c = Client.builder().endpoints("http://10.0.0.1:8080", "http://10.0.0.2:8080").token(secret).build();
 * try (Lock lk = c.acquire("nightly-recon", AcquireOptions.defaults().waitFor(Duration.ofMinutes(1)))) {
 *     c.putFenced("ledger", lk.token(), Map.of("balance", 42), FenceOptions.lock("nightly-recon"));
 * }
 * }</pre>
 *
 * <p>Calls go to the endpoint that answered last and move on when one is
 * unreachable or answers 503. Calls that are safe to repeat (reads,
 * renewals, releases by token, fenced writes, a key's put or delete with
 * ifRevision or a fence, anything in a session that
 * the server makes idempotent) are retried with backoff honouring
 * Retry-After. An acquire, a lock set or a campaign outside a session, any
 * permit, any read hold, a session's creation, a lock's or leadership's
 * revoke and an unconditional put or delete of a key are not repeated once
 * they may have reached a node: they throw
 * {@link UnavailableException} with {@link UnavailableException#outcomeUnknown()}
 * set (a hold taken that way expires after its TTL).
 *
 * <p>Every call blocks the calling thread; every error is an unchecked
 * {@link BatonException} of the class of its problem code. A call whose
 * thread is interrupted throws {@link CancellationException} and leaves the
 * interrupt flag set. The client's own threads are daemons. Thread-safe:
 * share one client in a process.
 */
public final class Client implements AutoCloseable {
    /** Where baton listens by default: the endpoint when BATON_ADDR is unset. */
    public static final String DEFAULT_ADDR = "http://127.0.0.1:8080";

    /**
     * The longest wait one acquire request may carry: the server's cap, and
     * the default of {@link Builder#maxRequestWait(Duration)}. A longer wait
     * of a lock, a campaign, a permit or a read/write hold, up to
     * {@link #WAIT_FOREVER}, needs a session: it is a run of requests, each
     * of which keeps the session's place in line when it runs out (the
     * server's keep_place), while the client renews the session. A release
     * meanwhile grants the hold to the session, and the next request
     * answers with it. Lock sets wait at most this long.
     */
    public static final Duration MAX_REQUEST_WAIT = Duration.ofMinutes(5);

    /**
     * As a wait, waits in line until the hold is granted, the session ends,
     * or the thread is interrupted: as ZooKeeper's and etcd's election
     * recipes wait for as long as their session lives. It needs a session
     * (see {@link #MAX_REQUEST_WAIT}).
     */
    public static final Duration WAIT_FOREVER = Duration.ofNanos(Long.MAX_VALUE);

    static final long MAX_RETRY_AFTER_MS = 30_000;
    /** A blocking read's wait when it gives none: the node's default. */
    private static final Duration DEFAULT_KEY_WAIT = Duration.ofMinutes(1);
    private static final long MAX_BACKOFF_MS = 5_000;
    /**
     * How long the client sends a token read from its token file
     * ({@link Builder#tokenFile}, BATON_TOKEN_FILE) before it reads the file
     * again: a minute. A node's 401 makes it read the file at once.
     */
    public static final Duration TOKEN_FILE_MAX_AGE = Duration.ofMinutes(1);

    private final List<String> endpoints;
    private final Bearer bearer;
    private final Duration timeout;
    private final Duration maxRequestWait;
    private final long backoff0;
    private final int retries;
    private final HttpClient http;
    private final ExecutorService workers;
    private final ScheduledThreadPoolExecutor scheduler;
    private final Watcher watcher;
    private volatile int preferred;

    private Client(Builder b) {
        String list = b.endpoints != null ? String.join(",", b.endpoints) : env("BATON_ADDR");
        if (list == null) {
            list = DEFAULT_ADDR;
        }
        List<String> eps = new ArrayList<>();
        for (String s : list.split(",")) {
            if (!s.isBlank()) {
                eps.add(parseEndpoint(s.strip()));
            }
        }
        if (eps.isEmpty()) {
            throw new IllegalArgumentException("baton client: no endpoints");
        }
        endpoints = Collections.unmodifiableList(eps);
        String token = b.token != null ? b.token : env("BATON_AUTH_TOKEN");
        String file = b.tokenFile != null ? b.tokenFile.toString() : env("BATON_TOKEN_FILE");
        bearer = new Bearer(token, token == null || token.isEmpty() ? (file == null ? null : Path.of(file)) : null);
        timeout = b.timeout;
        if (timeout.isNegative() || timeout.isZero() || b.retryBackoff.isNegative()) {
            throw new IllegalArgumentException("baton client: timeout must be positive and retryBackoff not negative");
        }
        maxRequestWait = b.maxRequestWait;
        if (maxRequestWait.isNegative() || maxRequestWait.isZero() || maxRequestWait.compareTo(MAX_REQUEST_WAIT) > 0) {
            throw new IllegalArgumentException("baton client: maxRequestWait must be positive and at most 5 min");
        }
        backoff0 = b.retryBackoff.toMillis();
        retries = b.maxRetries < 0 ? 0 : b.maxRetries == 0 ? endpoints.size() + 2 : b.maxRetries;
        workers = Executors.newCachedThreadPool(daemons("baton-client"));
        scheduler = new ScheduledThreadPoolExecutor(1, daemons("baton-client-timer"));
        scheduler.setRemoveOnCancelPolicy(true);
        // HTTP/1.1: baton serves plain HTTP/1.1 (or HTTP/2 over TLS); an h2c
        // upgrade attempt would only cost a round of headers.
        http = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).connectTimeout(timeout).executor(workers)
                .followRedirects(HttpClient.Redirect.NEVER).build();
        watcher = new Watcher(this);
    }

    private static ThreadFactory daemons(String name) {
        AtomicInteger n = new AtomicInteger();
        return r -> {
            Thread t = new Thread(r, name + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        };
    }

    /** A builder: endpoints, bearer token, timeouts. */
    public static Builder builder() {
        return new Builder();
    }

    /** A client of BATON_ADDR (comma-separated endpoints), or of {@value #DEFAULT_ADDR}, with BATON_AUTH_TOKEN. */
    public static Client create() {
        return builder().build();
    }

    /** Configures a {@link Client}. Every setting is optional. */
    public static final class Builder {
        private List<String> endpoints;
        private String token;
        private Path tokenFile;
        private Duration timeout = Duration.ofSeconds(10);
        private Duration retryBackoff = Duration.ofMillis(200);
        private Duration maxRequestWait = MAX_REQUEST_WAIT;
        private int maxRetries;

        private Builder() {}

        /**
         * The nodes' base URLs ("http://10.0.0.1:8080"), or host:port (http);
         * each may also be a comma-separated list. Default: BATON_ADDR, else
         * {@value Client#DEFAULT_ADDR}.
         */
        public Builder endpoints(String... endpoints) {
            this.endpoints = List.of(endpoints);
            return this;
        }

        /** The same, as a list. */
        public Builder endpoints(List<String> endpoints) {
            this.endpoints = List.copyOf(endpoints);
            return this;
        }

        /**
         * The bearer token of a node that runs with --auth-file, sent as
         * "Authorization: Bearer …"; default BATON_AUTH_TOKEN. (Not a fencing
         * token.)
         */
        public Builder token(String token) {
            this.token = token;
            return this;
        }

        /**
         * A file holding the bearer token, read when no token is given
         * (neither {@link #token} nor BATON_AUTH_TOKEN); default
         * BATON_TOKEN_FILE. Its content, trimmed, is the token; build()
         * throws when it cannot be read or is empty. It is read again after
         * {@link Client#TOKEN_FILE_MAX_AGE} and at once when a node answers
         * 401, so a token its issuer replaces in the file (a Kubernetes
         * projected service-account token, a JWT a sidecar renews) is sent
         * fresh; the refused call is then sent again, once. A read that
         * fails or finds the file empty keeps the last token.
         */
        public Builder tokenFile(Path tokenFile) {
            this.tokenFile = tokenFile;
            return this;
        }

        /** Bounds each attempt of a request; default 10 s. An acquire's attempt gets its wait on top. */
        public Builder timeout(Duration timeout) {
            this.timeout = Objects.requireNonNull(timeout);
            return this;
        }

        /** The first pause between rounds of retries; it doubles each round, up to 5 s. Default 200 ms. */
        public Builder retryBackoff(Duration retryBackoff) {
            this.retryBackoff = Objects.requireNonNull(retryBackoff);
            return this;
        }

        /** How often a call that is safe to repeat is retried after its first attempt; default the endpoints plus 2; negative: never. */
        public Builder maxRetries(int maxRetries) {
            this.maxRetries = maxRetries;
            return this;
        }

        /**
         * The longest wait one acquire request carries, at most and by
         * default {@link Client#MAX_REQUEST_WAIT} (5 min, the server's cap).
         * A longer wait needs a session and is a run of requests that keep
         * the session's place in line.
         */
        public Builder maxRequestWait(Duration maxRequestWait) {
            this.maxRequestWait = Objects.requireNonNull(maxRequestWait);
            return this;
        }

        /** The client. */
        public Client build() {
            return new Client(this);
        }
    }

    /** The endpoints' base URLs, without a trailing slash. */
    public List<String> endpoints() {
        return endpoints;
    }

    /** The longest wait one acquire request carries: the builder's maxRequestWait, by default {@link #MAX_REQUEST_WAIT}. */
    public Duration maxRequestWait() {
        return maxRequestWait;
    }

    /**
     * close stops the client's threads and its event stream. Holds still
     * held are no longer renewed: release them first, or they expire after
     * their TTL.
     */
    @Override
    public void close() {
        watcher.close();
        scheduler.shutdownNow();
        workers.shutdownNow();
    }

    // ---- locks ----

    /** acquire takes the lock name with the server's defaults: see {@link #acquire(String, AcquireOptions)}. */
    public Lock acquire(String name) {
        return acquire(name, AcquireOptions.defaults());
    }

    /**
     * acquire takes the lock name, waiting up to the options' wait for it,
     * and returns it held, renewing itself in the background until
     * {@link Lock#release()}. A wait over {@link #maxRequestWait()}, up to
     * {@link #WAIT_FOREVER}, needs a session and keeps its place in line
     * over as many requests as it takes (see {@link #MAX_REQUEST_WAIT}).
     *
     * @throws HeldException with the holder, when the wait runs out (at once without a wait)
     * @throws InvalidRequestException at once, when a wait over the maximum has no session
     * @throws UnavailableException when no node answered; outside a session the outcome is then unknown
     * @throws CancellationException when the thread is interrupted; a long wait's place is given up first
     */
    public Lock acquire(String name, AcquireOptions o) {
        String op = "acquire " + quote(name);
        InLine.Granted g = InLine.run(this, op, o.session, o.wait, (wait, keep) -> {
            Map<String, Object> body = holdTerms(o, wait, keep);
            put(body, "lock_delay", o.lockDelay == null ? null : Durations.wire(o.lockDelay));
            return new Req(op, "POST", lockPath(name), null, body, o.session != null, waitTimeout(wait));
        }, r -> release(name, LockInfo.from(r.obj()).token()));
        Resp r = g.resp();
        long sent = g.sent();
        LockInfo info = LockInfo.from(r.obj());
        Lock[] lk = new Lock[1];
        Keeper k = new Keeper(this, new Keeper.Key(Keeper.LOCK, info.name(), info.token()), null, new Keeper.Ops() {
            @Override
            public Duration renew(Duration t) {
                LockInfo i = LockInfo.from(call(new Req("renew " + quote(name), "POST", lockPath(name) + "/renew", null,
                        Map.of("token", info.token()), true, t)).obj());
                lk[0].record(i);
                return i.ttl();
            }

            @Override
            public void release() {
                Client.this.release(name, info.token());
            }
        });
        lk[0] = new Lock(k, info);
        k.start(op, grant(r.status, sent, info.ttl(), info.acquiredAt(), info.expiresAt(), o.session));
        return lk[0];
    }

    /**
     * newLock is a {@link java.util.concurrent.locks.Lock} of the lock name:
     * each lock() acquires with these options (waiting as long as it takes),
     * each unlock() releases. See {@link BatonLock}.
     */
    public BatonLock newLock(String name, AcquireOptions o) {
        return new BatonLock(this, name, o);
    }

    /** getLock returns the lock as its holder has it, with its waiters. Retried. @throws NotHeldException when nobody holds it */
    public LockInfo getLock(String name) {
        return LockInfo.from(call(new Req("get lock " + quote(name), "GET", lockPath(name), null, null, true, null)).obj());
    }

    /** listLocks returns a page of the held locks, sorted by name. Retried. */
    public Page<LockInfo> listLocks(String prefix, int limit, String cursor) {
        return page("list locks", "/v1/locks", "locks", prefix, limit, cursor, LockInfo::from);
    }

    /** renewLock extends the lease of the lock token holds (a {@link Lock} renews itself). Retried. */
    public LockInfo renewLock(String name, long token) {
        return LockInfo.from(call(new Req("renew " + quote(name), "POST", lockPath(name) + "/renew", null, Map.of("token", token), true,
                null)).obj());
    }

    /**
     * release gives back the lock token holds. Retried: it names the token,
     * so a repeat can never release a newer holder.
     *
     * @throws NotHeldException when nobody holds it; {@link TokenMismatchException} when another token does
     */
    public void release(String name, long token) {
        call(new Req("release " + quote(name), "DELETE", lockPath(name), Map.of("token", Long.toString(token)), null, true, null));
    }

    /** revoke ends whoever holds the lock (an operator's action, role admin), audited as revoked. Not retried. */
    public void revoke(String name, String reason) {
        call(new Req("revoke " + quote(name), "POST", lockPath(name) + "/revoke", null, reasonBody(reason), false, null));
    }

    /**
     * yield asks whoever holds the lock to release it, and ends nothing:
     * the holder, told by {@link Hold#onYield}, decides. owner names the
     * asker (null: the client's address); reason says why (may be null).
     * Not retried: a repeat would ask twice.
     *
     * @throws NotHeldException when nobody holds it
     */
    public YieldRequested yield(String name, String reason, String owner) {
        return askToYield("ask lock " + quote(name) + " to yield", lockPath(name), reason, owner, 0);
    }

    /** yieldLeadership asks the leader to resign, as {@link #yield} asks a holder. @throws NoLeaderException when nobody leads */
    public YieldRequested yieldLeadership(String name, String reason, String owner) {
        return askToYield("ask the leader of " + quote(name) + " to yield", electionPath(name), reason, owner, 0);
    }

    /** yieldPermits asks the semaphore's permit holders (token not 0: that permit's alone) to give them back. @throws NotHeldException when none is held */
    public YieldRequested yieldPermits(String name, String reason, String owner, long token) {
        return askToYield("ask the permits of " + quote(name) + " to yield", "/v1/semaphores/" + enc(name), reason, owner, token);
    }

    /** yieldRW asks the read/write lock's holds (token not 0: that hold alone) to release. @throws NotHeldException when nothing holds it */
    public YieldRequested yieldRW(String name, String reason, String owner, long token) {
        return askToYield("ask the holds of rwlock " + quote(name) + " to yield", "/v1/rwlocks/" + enc(name), reason, owner, token);
    }

    private YieldRequested askToYield(String op, String path, String reason, String owner, long token) {
        Map<String, Object> body = new LinkedHashMap<>();
        put(body, "reason", reason == null || reason.isEmpty() ? null : reason);
        put(body, "owner", owner == null || owner.isEmpty() ? null : owner);
        put(body, "token", token == 0 ? null : token);
        return YieldRequested.from(call(new Req(op, "POST", path + "/yield", null, body, false, null)).obj());
    }

    /** clearDelay ends a free lock's lock-delay at once (role admin). @throws NotDelayedException when it has none */
    public void clearDelay(String name) {
        call(new Req("clear the delay of " + quote(name), "DELETE", lockPath(name) + "/delay", null, null, true, null));
    }

    // ---- lock sets ----

    /**
     * acquireSet takes every lock of names (2 to 64 distinct names) in one
     * transaction, with one fencing token, or none of them, waiting up to
     * the options' wait; it returns the set held, renewing itself until
     * {@link LockSet#release()}. With a wait the set queues for all its
     * locks at once, so two sets never deadlock whatever order they name
     * their locks in.
     *
     * @throws HeldException whose holders are the locks held by others, when the wait runs out
     */
    public LockSet acquireSet(List<String> names, AcquireOptions o) {
        List<String> ns = List.copyOf(names);
        String op = "acquire lock set " + quote(String.join(",", ns));
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("names", ns);
        body.putAll(holdTerms(o, o.wait, false));
        long sent = System.nanoTime();
        Resp r = call(new Req(op, "POST", "/v1/locksets", null, body, o.session != null, waitTimeout(o.wait)));
        LockSetInfo info = LockSetInfo.from(r.obj());
        List<Keeper.Key> keys = new ArrayList<>();
        for (String n : info.names()) {
            keys.add(new Keeper.Key(Keeper.LOCK, n, info.token()));
        }
        LockSet[] set = new LockSet[1];
        Keeper k = new Keeper(this, new Keeper.Key(Keeper.LOCKSET, String.join(",", info.names()), info.token()), keys,
                new Keeper.Ops() {
                    @Override
                    public Duration renew(Duration t) {
                        LockSetInfo i = renewSet(ns, info.token(), t);
                        set[0].record(i);
                        return i.locks().isEmpty() ? null : i.locks().get(0).ttl();
                    }

                    @Override
                    public void release() {
                        releaseSet(ns, info.token());
                    }
                });
        set[0] = new LockSet(k, info);
        LockInfo first = info.locks().isEmpty() ? null : info.locks().get(0);
        k.start(op, grant(r.status, sent, first == null ? null : first.ttl(), first == null ? null : first.acquiredAt(),
                first == null ? null : first.expiresAt(), o.session));
        return set[0];
    }

    /** renewSet extends the lease of the set's locks held with token. Retried. */
    public LockSetInfo renewSet(List<String> names, long token) {
        return renewSet(names, token, null);
    }

    private LockSetInfo renewSet(List<String> names, long token, Duration t) {
        return LockSetInfo.from(call(new Req("renew lock set " + quote(String.join(",", names)), "POST", "/v1/locksets/renew", null,
                Map.of("names", names, "token", token), true, t)).obj());
    }

    /** releaseSet ends every lock of the set still held with token, in one transaction. Retried. */
    public void releaseSet(List<String> names, long token) {
        call(new Req("release lock set " + quote(String.join(",", names)), "POST", "/v1/locksets/release", null,
                Map.of("names", names, "token", token), true, null));
    }

    // ---- sessions ----

    /**
     * createSession makes a session: one lease for many holds, which live and
     * die with it. Not retried once it may have reached a node.
     *
     * @param ttl its time to live, or null for the server's 30 s
     * @param owner its label, or null
     */
    public SessionInfo createSession(Duration ttl, String owner) {
        Map<String, Object> body = new LinkedHashMap<>();
        put(body, "ttl", ttl == null ? null : Durations.wire(ttl));
        put(body, "owner", owner);
        return SessionInfo.from(call(new Req("create session", "POST", "/v1/sessions", null, body, false, null)).obj());
    }

    /**
     * openStreamSession makes a session bound to a stream, opens its stream
     * and holds it open in the background until {@link StreamSession#close()},
     * or until the session ends ({@link StreamSession#done()}). It returns
     * once the stream is open, within the client's timeout; otherwise it
     * deletes the session and throws. Not retried, as createSession is not:
     * a session made by a request whose answer was lost ends by itself
     * after its grace.
     *
     * @param owner its label, or null for the client's address
     * @param grace how long it outlives its last stream (500 ms to 1 m), or null for 2 s
     */
    public StreamSession openStreamSession(String owner, Duration grace) {
        Map<String, Object> body = new LinkedHashMap<>();
        put(body, "owner", owner);
        body.put("bind", "stream");
        put(body, "grace", grace == null ? null : Durations.wire(grace));
        SessionInfo info = SessionInfo.from(call(new Req("create stream session", "POST", "/v1/sessions", null, body, false, null)).obj());
        return new StreamSession(this, info, sessionPath(info.id()) + "/stream").open();
    }

    /** session returns the session with the holds it has. Retried. @throws SessionNotFoundException when it is over */
    public SessionInfo session(String id) {
        return SessionInfo.from(call(new Req("get session " + id, "GET", sessionPath(id), null, null, true, null)).obj());
    }

    /** renewSession extends the session's lease. Retried. @throws SessionNotFoundException when it is over */
    public SessionInfo renewSession(String id) {
        return SessionInfo.from(call(new Req("renew session " + id, "POST", sessionPath(id) + "/renew", null, null, true, null)).obj());
    }

    /** deleteSession ends the session and releases every hold it has. Retried. */
    public void deleteSession(String id) {
        call(new Req("delete session " + id, "DELETE", sessionPath(id), null, null, true, null));
    }

    /** listSessions returns a page of the sessions whose owner starts with prefix. Retried. */
    public Page<SessionInfo> listSessions(String prefix, int limit, String cursor) {
        return page("list sessions", "/v1/sessions", "sessions", prefix, limit, cursor, SessionInfo::from);
    }

    // ---- fenced values ----

    /** putFenced writes value to the fenced register resource with token, requiring nothing else of it. */
    public FencedValue putFenced(String resource, long token, Object value) {
        return putFenced(resource, token, value, FenceOptions.none());
    }

    /**
     * putFenced writes value (any value {@link Json} writes) to the fenced
     * register resource, if token is no lower than any token the resource
     * has seen, and holds what o names. Retried: a repeat of a write with
     * the same token is harmless.
     *
     * @throws StaleTokenException with {@link BatonException#maxToken()}, when a newer holder has written
     * @throws NotHolderException when the token does not hold what o names
     * @throws UnknownTokenException when the token was never issued
     */
    public FencedValue putFenced(String resource, long token, Object value, FenceOptions o) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("token", token);
        body.put("value", value);
        put(body, "lock", o.lock());
        put(body, "election", o.election());
        put(body, "rwlock", o.rwlock());
        return FencedValue.from(call(new Req("put fenced " + quote(resource), "PUT", "/v1/fenced/" + enc(resource), null, body, true,
                null)).obj());
    }

    /** getFenced reads the register. Retried. @throws NotFoundException when it holds no value */
    public FencedValue getFenced(String resource) {
        return FencedValue.from(call(new Req("get fenced " + quote(resource), "GET", "/v1/fenced/" + enc(resource), null, null, true,
                null)).obj());
    }

    /** resetFenced removes the register's value and its largest-token record (role admin), audited as fence_reset. */
    public void resetFenced(String resource, String reason) {
        Map<String, String> q = reason == null || reason.isEmpty() ? null : Map.of("reason", reason);
        call(new Req("reset fenced " + quote(resource), "DELETE", "/v1/fenced/" + enc(resource), q, null, true, null));
    }

    // ---- keys ----

    /** putKey writes value under key unconditionally: see {@link #putKey(String, Object, PutKeyOptions)}. */
    public Key putKey(String key, Object value) {
        return putKey(key, value, PutKeyOptions.defaults());
    }

    /**
     * putKey writes value (any value {@link Json} writes) under key, in one
     * transaction with what o compares, and returns the key as written.
     * Retried only with o's ifRevision or fence, which make a repeat refuse
     * what the first attempt did: an unconditional put that may have reached
     * a node throws {@link UnavailableException} with
     * {@link UnavailableException#outcomeUnknown()} set.
     *
     * @throws RevisionMismatchException with the key's {@link BatonException#revision()} (0: absent), when o's ifRevision is not it
     * @throws StaleTokenException when o's fence is not current
     * @throws SessionNotFoundException when o's session is over
     * @throws ValueTooLargeException when the value is over the node's cap
     * @throws TooManyKeysException when the node holds its maximum of keys
     */
    public Key putKey(String key, Object value, PutKeyOptions o) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("value", value);
        put(body, "if_revision", o.ifRevision);
        put(body, "session", o.session);
        if (o.fence != null) {
            body.putAll(o.fence.body());
        }
        return Key.from(call(new Req("put key " + quote(key), "PUT", keyPath(key), null, body, o.ifRevision != null || o.fence != null,
                null)).obj());
    }

    /** getKey reads a key, linearizably. Retried. @throws KeyNotFoundException with the revision it was found missing at */
    public Key getKey(String key) {
        return Key.from(call(new Req("get key " + quote(key), "GET", keyPath(key), null, null, true, null)).obj());
    }

    /**
     * waitKey is a blocking read: it returns the key once its revision
     * passes after, at once if it has already, else at its next put, or
     * when wait runs out (the key as it is then). To follow a key, pass the
     * last revision seen, a missing key's {@link BatonException#revision()}
     * included. It may return early with the key unchanged: ask again.
     * Retried.
     *
     * @param wait at most 5 min; null for the node's default, a minute
     * @throws KeyNotFoundException at the key's delete, or when it is missing
     */
    public Key waitKey(String key, long after, Duration wait) {
        Map<String, String> q = new LinkedHashMap<>();
        q.put("wait_revision", Long.toString(after));
        putQ(q, "wait", wait == null ? null : Durations.wire(wait));
        Duration longest = wait == null || wait.compareTo(DEFAULT_KEY_WAIT) < 0 ? DEFAULT_KEY_WAIT : wait;
        return Key.from(call(new Req("wait key " + quote(key), "GET", keyPath(key), q, null, true, timeout.plus(longest))).obj());
    }

    /** deleteKey deletes a key unconditionally: see {@link #deleteKey(String, DeleteKeyOptions)}. */
    public void deleteKey(String key) {
        deleteKey(key, DeleteKeyOptions.defaults());
    }

    /**
     * deleteKey deletes a key, if o's ifRevision is its revision and o's
     * fence is current. Retried only with either, as {@link #putKey} is.
     *
     * @throws KeyNotFoundException when it does not exist
     * @throws RevisionMismatchException when o's ifRevision is not its revision
     * @throws StaleTokenException when o's fence is not current
     */
    public void deleteKey(String key, DeleteKeyOptions o) {
        Map<String, String> q = o.ifRevision == null ? null : Map.of("if_revision", Long.toString(o.ifRevision));
        call(new Req("delete key " + quote(key), "DELETE", keyPath(key), q, o.fence == null ? null : o.fence.body(),
                o.ifRevision != null || o.fence != null, null));
    }

    /**
     * listKeys returns a page of the keys that start with prefix
     * ("config/": those under config), in key order, with their values,
     * and the revision it was read at. Retried.
     *
     * @param limit at most this many; 0 for the server's default (100)
     * @param cursor a previous page's nextCursor, or null for the first
     */
    public KeyList listKeys(String prefix, int limit, String cursor) {
        Map<String, String> q = new LinkedHashMap<>();
        putQ(q, "prefix", prefix);
        if (limit > 0) {
            q.put("limit", Integer.toString(limit));
        }
        putQ(q, "cursor", cursor);
        return KeyList.from(call(new Req("list keys", "GET", "/v1/kv", q, null, true, null)).obj());
    }

    /**
     * watchKeys streams the changes of the keys under prefix (GET
     * /v1/kv/events) after revision since, in revision order, each once:
     * pass a {@link KeyList#revision()} to watch from a listing; 0 for
     * from now on (its {@link EventStream#ready()} completes once the
     * stream knows the revision it starts after). It reconnects by itself
     * (to the next endpoint, with Last-Event-ID) without a gap or a
     * repeat. Close it when done.
     */
    public EventStream<KeyEvent> watchKeys(String prefix, long since) {
        java.util.concurrent.CompletableFuture<Void> ready = new java.util.concurrent.CompletableFuture<>();
        EventStream<KeyEvent> s = new EventStream<>(ready);
        KeysSource src = new KeysSource(this, prefix, since, s::put);
        src.based.whenComplete((v, e) -> ready.complete(null));
        s.run(new Sse.Runner(this, "key events", src, s::fail, Sse.IDLE));
        return s;
    }

    // ---- elections ----

    /**
     * campaign runs for the election name, waiting in line up to the
     * options' wait, and returns the leadership won, renewing itself until
     * {@link Leadership#resign()}. Not retried outside a session once it may
     * have reached a node. A wait over {@link #maxRequestWait()}, up to
     * {@link #WAIT_FOREVER}, needs a session, as {@link #acquire(String, AcquireOptions)}'s does.
     *
     * @throws ElectionHeldException with the leader, when the wait runs out (at once without one)
     * @throws InvalidRequestException at once, when a wait over the maximum has no session
     * @throws CancellationException when the thread is interrupted; a long wait's place is given up first
     */
    public Leadership campaign(String name, CampaignOptions o) {
        String op = "campaign for " + quote(name);
        InLine.Granted g = InLine.run(this, op, o.session, o.wait, (wait, keep) -> {
            Map<String, Object> body = new LinkedHashMap<>();
            put(body, "candidate", o.candidate);
            if (o.hasValue) {
                body.put("value", o.value);
            }
            put(body, "ttl", o.ttl == null ? null : Durations.wire(o.ttl));
            put(body, "session", o.session);
            put(body, "wait", wait == null ? null : Durations.wire(wait));
            put(body, "keep_place", keep ? Boolean.TRUE : null);
            put(body, "min_hold", o.minHold == null ? null : Durations.wire(o.minHold));
            put(body, "metadata", o.metadata);
            return new Req(op, "POST", electionPath(name) + "/campaign", null, body, o.session != null, waitTimeout(wait));
        }, r -> resignLeadership(name, LeaderInfo.from(r.obj()).token()));
        Resp r = g.resp();
        long sent = g.sent();
        LeaderInfo info = LeaderInfo.from(r.obj());
        Leadership[] ld = new Leadership[1];
        Keeper k = new Keeper(this, new Keeper.Key(Keeper.ELECTION, info.name(), info.token()), null, new Keeper.Ops() {
            @Override
            public Duration renew(Duration t) {
                return ld[0].renew(t);
            }

            @Override
            public void release() {
                resignLeadership(name, info.token());
            }
        });
        ld[0] = new Leadership(k, this, info);
        k.start(op, grant(r.status, sent, info.ttl(), info.electedAt(), info.expiresAt(), o.session));
        return ld[0];
    }

    /** leader returns who leads the election, with the candidates in line. Retried. @throws NoLeaderException when nobody leads */
    public LeaderInfo leader(String name) {
        return LeaderInfo.from(call(new Req("get leader of " + quote(name), "GET", electionPath(name), null, null, true, null)).obj());
    }

    /** listElections returns a page of the elections with a leader, sorted by name. Retried. */
    public Page<LeaderInfo> listElections(String prefix, int limit, String cursor) {
        return page("list elections", "/v1/elections", "elections", prefix, limit, cursor, LeaderInfo::from);
    }

    /** proclaim sets the value of the leadership token holds, keeping token and term. Retried. */
    public LeaderInfo proclaim(String name, long token, Object value) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("token", token);
        body.put("value", value);
        return LeaderInfo.from(call(new Req("proclaim in " + quote(name), "POST", electionPath(name) + "/proclaim", null, body, true,
                null)).obj());
    }

    /**
     * transferLeadership ends the leadership token holds in favour of the
     * candidate to, waiting in line: in one transaction to leads, ahead of
     * the line, with the next term, and its campaign returns that
     * leadership. Retried: a repeat after it applied answers
     * {@link TokenMismatchException}. A {@link Leadership} transfers itself
     * ({@link Leadership#transfer}).
     *
     * @return the new leadership
     * @throws CandidateNotWaitingException when no campaign of to waits (the leader still leads)
     * @throws ElectionHeldException with retryAfter, inside the leadership's at-least window
     * @throws NoLeaderException or {@link TokenMismatchException} when token no longer leads
     */
    public LeaderInfo transferLeadership(String name, long token, String to) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("token", token);
        body.put("to", to);
        return LeaderInfo.from(call(new Req("transfer leadership of " + quote(name) + " to " + quote(to), "POST",
                electionPath(name) + "/leader/transfer", null, body, true, null)).obj());
    }

    /** renewLeadership extends the lease of the leadership token holds (a {@link Leadership} renews itself). Retried. */
    public LeaderInfo renewLeadership(String name, long token) {
        return renewLeadership(name, token, null);
    }

    LeaderInfo renewLeadership(String name, long token, Duration t) {
        return LeaderInfo.from(call(new Req("renew leadership of " + quote(name), "POST", electionPath(name) + "/renew", null,
                Map.of("token", token), true, t)).obj());
    }

    /** resignLeadership ends the leadership token holds; the next candidate leads. Retried. */
    public void resignLeadership(String name, long token) {
        call(new Req("resign from " + quote(name), "DELETE", electionPath(name) + "/leader", Map.of("token", Long.toString(token)), null,
                true, null));
    }

    /** revokeLeadership deposes whoever leads (an operator's action, role admin). Not retried. */
    public void revokeLeadership(String name, String reason) {
        call(new Req("revoke leadership of " + quote(name), "POST", electionPath(name) + "/revoke", null, reasonBody(reason), false,
                null));
    }

    /**
     * observe streams the changes of the election name: first the state it
     * is in now, then each change in order (a leader elected, a value
     * proclaimed, nobody leading). It reconnects by itself with
     * Last-Event-ID and resumes after the last change delivered, without a
     * gap or a repeat. Close it when done.
     */
    public EventStream<LeaderChange> observe(String name) {
        java.util.concurrent.CompletableFuture<Void> ready = java.util.concurrent.CompletableFuture.completedFuture(null);
        EventStream<LeaderChange> s = new EventStream<>(ready);
        ObserveSource src = new ObserveSource(electionPath(name) + "/observe", s::put);
        s.run(new Sse.Runner(this, "observe " + quote(name), src, s::fail, Sse.IDLE));
        return s;
    }

    // ---- semaphores ----

    /**
     * acquirePermit takes one of the limit permits of the semaphore name,
     * waiting in line up to the options' wait, and returns it, renewing
     * itself until {@link Permit#release()}. Every client of a semaphore
     * must ask with the same limit. Each request takes a permit of its own,
     * so it is never repeated once it may have reached a node. A wait over
     * {@link #maxRequestWait()}, up to {@link #WAIT_FOREVER}, needs a
     * session, as {@link #acquire(String, AcquireOptions)}'s does.
     *
     * @throws SemaphoreFullException with the permits held, when the wait runs out
     * @throws LimitMismatchException with the semaphore's limit, when it is held under another
     * @throws InvalidRequestException at once, when a wait over the maximum has no session
     * @throws CancellationException when the thread is interrupted; a long wait's place is given up first
     */
    public Permit acquirePermit(String name, int limit, AcquireOptions o) {
        String op = "acquire a permit of " + quote(name);
        InLine.Granted g = InLine.run(this, op, o.session, o.wait, (wait, keep) -> {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("limit", limit);
            body.putAll(holdTerms(o, wait, keep));
            return new Req(op, "POST", "/v1/semaphores/" + enc(name), null, body, false, waitTimeout(wait));
        }, r -> releasePermit(name, HoldInfo.from(r.obj()).token()));
        Resp r = g.resp();
        long sent = g.sent();
        HoldInfo info = HoldInfo.from(r.obj());
        Permit[] p = new Permit[1];
        Keeper k = new Keeper(this, new Keeper.Key(Keeper.SEMAPHORE, info.name(), info.token()), null, new Keeper.Ops() {
            @Override
            public Duration renew(Duration t) {
                HoldInfo i = renewHeld("semaphores", "permit", name, info.token(), t);
                p[0].record(i);
                return i.ttl();
            }

            @Override
            public void release() {
                releasePermit(name, info.token());
            }
        });
        p[0] = new Permit(k, info);
        k.start(op, grant(r.status, sent, info.ttl(), info.acquiredAt(), info.expiresAt(), o.session));
        return p[0];
    }

    /** semaphore returns the semaphore's limit, permits held and waiters. Retried. @throws NotHeldException when no permit is held */
    public SemaphoreInfo semaphore(String name) {
        return SemaphoreInfo.from(call(new Req("get semaphore " + quote(name), "GET", "/v1/semaphores/" + enc(name), null, null, true,
                null)).obj());
    }

    /** listSemaphores returns a page of the semaphores with permits held. Retried. */
    public Page<SemaphoreInfo> listSemaphores(String prefix, int limit, String cursor) {
        return page("list semaphores", "/v1/semaphores", "semaphores", prefix, limit, cursor, SemaphoreInfo::from);
    }

    /** renewPermit extends the lease of the permit token holds (a {@link Permit} renews itself). Retried. */
    public HoldInfo renewPermit(String name, long token) {
        return renewHeld("semaphores", "permit", name, token, null);
    }

    /** releasePermit gives back the permit token holds; the oldest waiter gets it. Retried. */
    public void releasePermit(String name, long token) {
        releaseHeld("semaphores", "permit", name, token);
    }

    /** revokePermit ends the permit token holds (role admin). Retried: it names the token. */
    public void revokePermit(String name, long token, String reason) {
        revokeHeld("semaphores", "permit", name, token, reason);
    }

    // ---- read/write locks ----

    /**
     * acquireRW takes a hold of the read/write lock name, shared with other
     * readers or alone, waiting in line up to the options' wait, and returns
     * it, renewing itself until {@link RWHold#release()}. The line is first
     * come, first served: a reader behind a waiting writer waits for it.
     * Each read takes a hold of its own, so it is never repeated once it may
     * have reached a node; nor is a write outside a session. A wait over
     * {@link #maxRequestWait()}, up to {@link #WAIT_FOREVER}, needs a
     * session, as {@link #acquire(String, AcquireOptions)}'s does.
     *
     * @throws HeldException whose holders are the holds in the way, when the wait runs out
     * @throws InvalidRequestException at once, when a wait over the maximum has no session
     * @throws CancellationException when the thread is interrupted; a long wait's place is given up first
     */
    public RWHold acquireRW(String name, RWMode mode, AcquireOptions o) {
        String op = "acquire a " + mode.wire() + " hold of " + quote(name);
        InLine.Granted g = InLine.run(this, op, o.session, o.wait, (wait, keep) -> {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("mode", mode.wire());
            body.putAll(holdTerms(o, wait, keep));
            return new Req(op, "POST", "/v1/rwlocks/" + enc(name), null, body, o.session != null && mode == RWMode.WRITE,
                    waitTimeout(wait));
        }, r -> releaseRW(name, HoldInfo.from(r.obj()).token()));
        Resp r = g.resp();
        long sent = g.sent();
        HoldInfo info = HoldInfo.from(r.obj());
        RWHold[] h = new RWHold[1];
        Keeper k = new Keeper(this, new Keeper.Key(Keeper.RWLOCK, info.name(), info.token()), null, new Keeper.Ops() {
            @Override
            public Duration renew(Duration t) {
                HoldInfo i = renewHeld("rwlocks", "rwlock hold", name, info.token(), t);
                h[0].record(i);
                return i.ttl();
            }

            @Override
            public void release() {
                releaseRW(name, info.token());
            }
        });
        h[0] = new RWHold(k, info);
        k.start(op, grant(r.status, sent, info.ttl(), info.acquiredAt(), info.expiresAt(), o.session));
        return h[0];
    }

    /** rwlock returns the read/write lock's mode, holds and waiters. Retried. @throws NotHeldException when nothing holds it */
    public RWLockInfo rwlock(String name) {
        return RWLockInfo.from(call(new Req("get rwlock " + quote(name), "GET", "/v1/rwlocks/" + enc(name), null, null, true, null)).obj());
    }

    /** listRWLocks returns a page of the held read/write locks. Retried. */
    public Page<RWLockInfo> listRWLocks(String prefix, int limit, String cursor) {
        return page("list rwlocks", "/v1/rwlocks", "rwlocks", prefix, limit, cursor, RWLockInfo::from);
    }

    /** renewRW extends the lease of the hold token has. Retried. */
    public HoldInfo renewRW(String name, long token) {
        return renewHeld("rwlocks", "rwlock hold", name, token, null);
    }

    /** releaseRW gives back the hold token has. Retried. */
    public void releaseRW(String name, long token) {
        releaseHeld("rwlocks", "rwlock hold", name, token);
    }

    /** revokeRW ends the hold token has (role admin). Retried: it names the token. */
    public void revokeRW(String name, long token, String reason) {
        revokeHeld("rwlocks", "rwlock hold", name, token, reason);
    }

    private HoldInfo renewHeld(String kind, String noun, String name, long token, Duration t) {
        return HoldInfo.from(call(new Req("renew " + noun + " of " + quote(name), "POST", "/v1/" + kind + "/" + enc(name) + "/renew", null,
                Map.of("token", token), true, t)).obj());
    }

    private void releaseHeld(String kind, String noun, String name, long token) {
        call(new Req("release " + noun + " of " + quote(name), "DELETE", "/v1/" + kind + "/" + enc(name),
                Map.of("token", Long.toString(token)), null, true, null));
    }

    private void revokeHeld(String kind, String noun, String name, long token, String reason) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("token", token);
        put(body, "reason", reason == null || reason.isEmpty() ? null : reason);
        call(new Req("revoke " + noun + " of " + quote(name), "POST", "/v1/" + kind + "/" + enc(name) + "/revoke", null, body, true, null));
    }

    // ---- the cluster, the credential, the audit trail ----

    /** cluster returns the cluster as the node sees it: members, leader, revision. Retried. */
    public ClusterInfo cluster() {
        return ClusterInfo.from(call(new Req("get cluster", "GET", "/v1/cluster", null, null, true, null)).obj());
    }

    /**
     * whoami returns who the client's token speaks for, its rules and its quotas with what they count now (any
     * credential may ask). Retried.
     */
    public Whoami whoami() {
        return Whoami.from(call(new Req("whoami", "GET", "/v1/whoami", null, null, true, null)).obj());
    }

    /**
     * history returns a page of the audit trail, newest first.
     *
     * @param filter which events (its since is ignored)
     * @param limit at most this many; 0 for the server's default
     * @param before only events before this revision (a previous page's nextBefore); 0 for the newest
     */
    public History history(EventsOptions filter, int limit, long before) {
        Map<String, String> q = new LinkedHashMap<>();
        putQ(q, "lock", filter.lock());
        putQ(q, "kind", filter.kind());
        putQ(q, "name", filter.name());
        if (limit > 0) {
            q.put("limit", Integer.toString(limit));
        }
        if (before > 0) {
            q.put("before", Long.toString(before));
        }
        Map<String, Object> m = call(new Req("history", "GET", "/v1/history", q, null, true, null)).obj();
        return new History(Wire.records(m, "events", Event::from), Json.lng(m, "next_before"));
    }

    /**
     * events streams the audit trail's events that o selects, in revision
     * order, each once: from now on, or replaying those after o's since
     * first. It reconnects by itself (to the next endpoint, with
     * Last-Event-ID). Close it when done.
     */
    public EventStream<Event> events(EventsOptions o) {
        java.util.concurrent.CompletableFuture<Void> ready = new java.util.concurrent.CompletableFuture<>();
        EventStream<Event> s = new EventStream<>(ready);
        EventsSource src = new EventsSource(this, new EventsFilter(o.lock(), o.kind(), o.name()), o.since(), s::put);
        src.based.whenComplete((v, e) -> ready.complete(null));
        s.run(new Sse.Runner(this, "events", src, s::fail, Sse.IDLE));
        return s;
    }

    /** Which events a stream asks for. */
    record EventsFilter(String lock, String kind, String name) {}

    /** Whether the client's one event stream for its holds is connected now (for tests and diagnostics). */
    boolean watching() {
        return watcher.streaming();
    }

    // ---- transport ----

    /** One API call; idempotent calls are retried on 503 and transport errors, on the next endpoint. */
    record Req(String op, String method, String path, Map<String, String> query, Object body, boolean idempotent, Duration timeout) {}

    /** An answer: its status and decoded body (null for none). */
    record Resp(int status, Object json) {
        Map<String, Object> obj() {
            return Json.obj(json);
        }
    }

    /** Why one attempt failed: the error, whether another node may do better, and whether the request may have arrived. */
    private record Failure(BatonException err, boolean retryable, boolean sent, boolean settled) {}

    Resp call(Req r) {
        String payload = r.body() == null ? null : Json.write(r.body());
        int n = endpoints.size();
        int start = preferred;
        // unsettled records that an earlier attempt may have taken effect
        // unseen, so that a later answer such as not_held can say so.
        boolean unsettled = false;
        boolean reread = false; // the token file was read again after a 401
        for (int attempt = 0;; attempt++) {
            int i = (start + attempt) % n;
            Object res = attempt(endpoints.get(i), r, payload);
            if (res instanceof Resp ok) {
                preferred = i;
                return ok;
            }
            Failure f = (Failure) res;
            // A 401 did nothing: with a new token from the file, the same
            // node is asked again, once, whatever the call.
            if (f.err().status() == 401 && !reread && bearer.reload()) {
                reread = true;
                attempt--;
                continue;
            }
            Problem p = f.err().data();
            if (unsettled && f.settled()) {
                p = p.withDetail(p.detail + " (an earlier attempt got no answer and may have taken effect)");
            }
            if (!r.idempotent() && f.sent() && !f.settled()) {
                throw new UnavailableException(p.withDetail(p.detail + "; the outcome is unknown: the request may have taken effect"),
                        true);
            }
            if (!f.retryable()) {
                throw p == f.err().data() ? f.err() : ProblemCode.make(p);
            }
            // The next call starts on the next node: this one is in trouble.
            if (preferred == i) {
                preferred = (i + 1) % n;
            }
            if ((!r.idempotent() && attempt + 1 >= n) || (r.idempotent() && attempt >= retries)) {
                throw ProblemCode.make(p.withDetail(p.detail + " (gave up after " + (attempt + 1) + " attempts)"));
            }
            unsettled |= f.sent();
            // A node not yet tried in this round is tried at once; a full
            // round of failures earns a pause, so a cluster without a leader
            // is not hammered.
            if ((attempt + 1) % n == 0) {
                long ra = f.err().retryAfter().map(Duration::toMillis).orElse(0L);
                sleep(Math.max(backoffMillis((attempt + 1) / n - 1), Math.min(ra, MAX_RETRY_AFTER_MS)));
            }
        }
    }

    private Object attempt(String base, Req r, String payload) {
        HttpRequest.Builder rb = HttpRequest.newBuilder(URI.create(url(base, r.path(), r.query())))
                .timeout(r.timeout() != null ? r.timeout() : timeout)
                .header("Accept", "application/json, application/problem+json");
        authorize(rb);
        if (payload != null) {
            rb.header("Content-Type", "application/json");
            rb.method(r.method(), HttpRequest.BodyPublishers.ofString(payload));
        } else {
            rb.method(r.method(), HttpRequest.BodyPublishers.noBody());
        }
        HttpResponse<String> res;
        try {
            res = http.send(rb.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            CancellationException c = new CancellationException(r.op() + ": interrupted");
            c.initCause(e);
            throw c;
        } catch (IOException e) {
            // A connection that could not be made: the request never left,
            // so any call may go to another node.
            boolean dial = e instanceof ConnectException || e instanceof HttpConnectTimeoutException
                    || e.getCause() instanceof ConnectException;
            String why = e instanceof HttpTimeoutException && !dial ? "no answer within the request timeout" : describe(e);
            return new Failure(new UnavailableException(Problem.unavailable(base, why, r.op(), e)), true, !dial, false);
        }
        int st = res.statusCode();
        String ct = res.headers().firstValue("Content-Type").orElse("");
        if (st < 200 || st > 299) {
            BatonException e = ProblemCode.decode(st, res.body(), isJson(ct), res.headers().firstValue("Retry-After").orElse(null), r.op());
            if (st >= 300 && st < 400) {
                e = ProblemCode.make(e.data().withDetail("redirected" + res.headers().firstValue("Location").map(l -> " to " + l).orElse("")
                        + ", which this client does not follow; use that URL as the endpoint"));
            }
            return new Failure(e, st == 502 || st == 503 || st == 504, true, st < 500);
        }
        if (st == 204 || res.body().isEmpty()) {
            return new Resp(st, null);
        }
        try {
            return new Resp(st, Json.parse(res.body()));
        } catch (IllegalArgumentException e) {
            return new Failure(new BatonException(new Problem(st, "", "Bad answer",
                    base + " answered " + st + " with a body that is not what the API describes", null, null, r.op(), e)), false, true, true);
        }
    }

    // ---- for the package ----

    HttpClient http() {
        return http;
    }

    ExecutorService workers() {
        return workers;
    }

    ScheduledThreadPoolExecutor scheduler() {
        return scheduler;
    }

    Watcher watcher() {
        return watcher;
    }

    Duration timeout() {
        return timeout;
    }

    String endpoint(int i) {
        return endpoints.get(i % endpoints.size());
    }

    int endpointCount() {
        return endpoints.size();
    }

    int preferredEndpoint() {
        return preferred;
    }

    void setPreferred(int i) {
        preferred = i;
    }

    void authorize(HttpRequest.Builder rb) {
        String token = bearer.token();
        if (!token.isEmpty()) {
            rb.header("Authorization", "Bearer " + token);
        }
    }

    /** reloadToken reads the token file again at once (after a 401), and reports whether it holds a new token. */
    boolean reloadToken() {
        return bearer.reload();
    }

    String url(String base, String path, Map<String, String> query) {
        StringBuilder sb = new StringBuilder(base).append(path);
        if (query != null) {
            char sep = '?';
            for (Map.Entry<String, String> e : query.entrySet()) {
                if (e.getValue() == null || e.getValue().isEmpty()) {
                    continue;
                }
                sb.append(sep).append(URLEncoder.encode(e.getKey(), StandardCharsets.UTF_8)).append('=')
                        .append(URLEncoder.encode(e.getValue(), StandardCharsets.UTF_8));
                sep = '&';
            }
        }
        return sb.toString();
    }

    /** backoffMillis is the pause after the given number of failed rounds, with jitter: d/2 to d. */
    long backoffMillis(int round) {
        long d = Math.min(backoff0 * (1L << Math.min(Math.max(round, 0), 10)), MAX_BACKOFF_MS);
        return d / 2 + (d > 1 ? ThreadLocalRandom.current().nextLong(d / 2 + 1) : 0);
    }

    /**
     * refused reports whether e is a node's answer about the request itself
     * (a 4xx whose code is final), which no reconnection of a stream can
     * mend; a cap that clears by itself, or a 408, is waited out.
     */
    static boolean refused(BatonException e) {
        int st = e.status();
        if (st < 400 || st >= 500 || st == 408) {
            return false;
        }
        return e.problemCode().map(c -> c.retry() == ProblemCode.Retry.FINAL).orElse(st != 429);
    }

    static boolean isJson(String ct) {
        String mt = ct.split(";", 2)[0].strip().toLowerCase(java.util.Locale.ROOT);
        return mt.equals("application/json") || mt.endsWith("+json");
    }

    static String describe(Throwable e) {
        List<String> parts = new ArrayList<>();
        for (Throwable c = e; c != null && parts.size() < 4; c = c.getCause()) {
            String m = c.getMessage() != null ? c.getMessage() : c.getClass().getSimpleName();
            if (!parts.contains(m)) {
                parts.add(m);
            }
            if (c.getCause() == c) {
                break;
            }
        }
        return String.join(": ", parts);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CancellationException("interrupted");
        }
    }

    private Duration waitTimeout(Duration wait) {
        return wait == null ? timeout : timeout.plus(wait);
    }

    private static Keeper.Grant grant(int status, long sent, Duration ttl, java.time.Instant began, java.time.Instant expires,
            String session) {
        Duration left = began != null && expires != null ? Duration.between(began, expires) : null;
        return new Keeper.Grant(status, sent, ttl, left, session != null);
    }

    /** The terms of a hold's request that waits up to wait and, with keep, keeps the session's place when that runs out. */
    private static Map<String, Object> holdTerms(AcquireOptions o, Duration wait, boolean keep) {
        Map<String, Object> m = new LinkedHashMap<>();
        put(m, "owner", o.owner);
        put(m, "ttl", o.ttl == null ? null : Durations.wire(o.ttl));
        put(m, "session", o.session);
        put(m, "wait", wait == null ? null : Durations.wire(wait));
        put(m, "keep_place", keep ? Boolean.TRUE : null);
        put(m, "min_hold", o.minHold == null ? null : Durations.wire(o.minHold));
        put(m, "metadata", o.metadata);
        return m;
    }

    private static Map<String, Object> reasonBody(String reason) {
        return reason == null || reason.isEmpty() ? null : Map.of("reason", reason);
    }

    private static void put(Map<String, Object> m, String k, Object v) {
        if (v != null) {
            m.put(k, v);
        }
    }

    private static void putQ(Map<String, String> m, String k, String v) {
        if (v != null && !v.isEmpty()) {
            m.put(k, v);
        }
    }

    private <T> Page<T> page(String op, String path, String member, String prefix, int limit, String cursor,
            Function<Map<String, Object>, T> from) {
        Map<String, String> q = new LinkedHashMap<>();
        putQ(q, "prefix", prefix);
        if (limit > 0) {
            q.put("limit", Integer.toString(limit));
        }
        putQ(q, "cursor", cursor);
        Map<String, Object> m = call(new Req(op, "GET", path, q, null, true, null)).obj();
        return new Page<>(Wire.records(m, member, from), Json.str(m, "next_cursor"));
    }

    static String quote(String s) {
        return Json.write(s);
    }

    static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20").replace("%2F", "/");
    }

    private static String lockPath(String name) {
        return "/v1/locks/" + enc(name);
    }

    private static String sessionPath(String id) {
        return "/v1/sessions/" + enc(id);
    }

    /** A key's path: its "/"s escaped too, so that the key is one path parameter, as the OpenAPI document has it. */
    private static String keyPath(String key) {
        return "/v1/kv/" + URLEncoder.encode(key, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private static String electionPath(String name) {
        return "/v1/elections/" + enc(name);
    }

    private static String env(String name) {
        String v = System.getenv(name);
        return v == null || v.isBlank() ? null : v.strip();
    }

    private static String parseEndpoint(String s) {
        String withScheme = s.contains("://") ? s : "http://" + s;
        URI u;
        try {
            u = new URI(withScheme);
        } catch (java.net.URISyntaxException e) {
            throw new IllegalArgumentException("baton client: endpoint " + quote(s) + ": want http(s)://host:port", e);
        }
        if (!Arrays.asList("http", "https").contains(u.getScheme()) || u.getHost() == null || u.getQuery() != null
                || u.getFragment() != null || u.getUserInfo() != null) {
            throw new IllegalArgumentException("baton client: endpoint " + quote(s) + ": want http(s)://host:port, optionally with a path");
        }
        return withScheme.replaceAll("/+$", "");
    }
}
