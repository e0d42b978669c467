import type { CallOptions, Client } from "./client.js";
import { SessionNotFoundError, UnavailableError } from "./errors.js";
import { runStream, type SseSource } from "./sse.js";
import type { Session } from "./types.js";
import { background, linked, toMillis, type Duration } from "./util.js";

/** The server's default and least grace of a stream-bound session, ms. */
export const defaultStreamGrace = 2000;
export const minStreamGrace = 500;

/** SessionSource asks for nothing but a session's stream, and ends it when the server says the session is over. */
class SessionSource implements SseSource {
  constructor(
    private readonly path: string,
    private readonly onAttached: () => void,
  ) {}

  async prepare(): Promise<boolean> {
    return true;
  }

  target() {
    // No Last-Event-ID: a session's stream has nothing to resume.
    return { path: this.path, query: {}, lastId: 0 };
  }

  dispatch(_id: string, type: string): void {
    if (type === "attached") this.onAttached();
    // A refusal: no reconnection mends it.
    else if (type === "ended") throw new SessionNotFoundError(404, "session_not_found", "Session not found", "the session ended");
  }
}

/** StreamSessionOptions say how to open a stream-bound session. */
export interface StreamSessionOptions extends CallOptions {
  /** Labels the session; default: the client's address. */
  owner?: string;
  /** How long the session outlives its last stream: 500 ms to 1 m; default 2 s. */
  grace?: Duration;
}

/**
 * StreamSession is a session bound to a stream, as ZooKeeper's is to its
 * connection (Client.openStreamSession): it lives while this client holds
 * its stream open, on any node, and ends, with every hold in it, once no
 * stream of it has been open for its grace. So the holds of a process
 * that dies, or loses the network, go to the next waiter about a grace
 * later, not a TTL later. Acquire in it with its id as session.
 *
 * The client reopens the stream at once, on the next endpoint, when it
 * breaks or goes silent for half the grace (the server sends heartbeats
 * at least four times a grace); the session ends only when that fails
 * for the whole grace.
 */
export class StreamSession {
  /** Resolves once the stream is no longer held: close() was called, or the session ended (err says why). It never rejects. */
  readonly done: Promise<void>;
  private readonly ctl: AbortController;
  private error?: unknown;
  private ended = false;
  private closingFlag = false;
  private closing?: Promise<void>;
  private attached = false;
  private wake: () => void = () => {};

  /** @internal */
  constructor(
    private readonly c: Client,
    /** The session as created, with bind and grace. */
    readonly info: Session,
    path: string,
  ) {
    this.ctl = new AbortController();
    const grace = info.grace ? toMillis(info.grace) : defaultStreamGrace;
    const src = new SessionSource(path, () => {
      this.attached = true;
      this.wake();
    });
    this.done = runStream(c, `session ${info.id} stream`, src, this.ctl.signal, Math.max(grace / 2, minStreamGrace / 2)).then(
      () => {},
      (e) => {
        if (!this.closingFlag) this.error = e;
      },
    ).finally(() => {
      this.ended = true;
      this.wake();
    });
  }

  /** The session's ID: pass it as a hold's session. */
  get id(): string {
    return this.info.id;
  }

  /** Why the session ended without close() (a SessionNotFoundError when a node said it is over), or undefined. */
  get err(): unknown {
    return this.error;
  }

  /** @internal open resolves once the stream is open; one that opens nowhere within the client's timeout ends the session and rejects. */
  async open(signal?: AbortSignal): Promise<this> {
    const { ctl, unlink } = linked(signal);
    const t = background(setTimeout(() => ctl.abort(new UnavailableError(0, "", "Service unavailable", `session ${this.id}: its stream did not open within ${this.c.timeoutMs} ms`)), this.c.timeoutMs));
    try {
      await new Promise<void>((resolve) => {
        this.wake = resolve;
        if (this.attached || this.ended) resolve();
        ctl.signal.addEventListener("abort", () => resolve(), { once: true });
      });
    } finally {
      clearTimeout(t);
      unlink();
      this.wake = () => {};
    }
    if (this.attached) return this;
    const why = this.error ?? ctl.signal.reason ?? new UnavailableError(0, "", "Service unavailable", `session ${this.id}: its stream ended before it opened`);
    await this.close().catch(() => {});
    throw why;
  }

  /**
   * close stops holding the stream and deletes the session, releasing
   * every hold in it at once rather than after the grace. Calling it
   * again, or after the session ended, does nothing. When the delete gets
   * no answer it rejects, and the session still ends, by its grace.
   */
  close(o: CallOptions = {}): Promise<void> {
    if (this.closing) return this.closing;
    if (this.ended && this.error !== undefined) return Promise.resolve();
    // Before the delete: the stream's ended message is its doing.
    this.closingFlag = true;
    this.closing = (async () => {
      try {
        await this.c.deleteSession(this.id, o);
      } catch (e) {
        if (!(e instanceof SessionNotFoundError)) throw e;
      } finally {
        this.ctl.abort();
        await this.done;
      }
    })();
    return this.closing;
  }
}
