// baton-client: the TypeScript client of baton, the distributed lock
// service with fencing tokens. See README.md.
export { TOKEN_FILE_MAX_AGE } from "./bearer.js";
export { Client, defaultAddr, maxRequestWait, waitForever } from "./client.js";
export type { AcquireOptions, CallOptions, CampaignOptions, ClientOptions, DeleteKeyOptions, Fence, HistoryOptions, ListOptions, LockSetOptions, PermitOptions, PutFencedOptions, PutKeyOptions, RWOptions, WaitKeyOptions, WatchKeysOptions, YieldOptions } from "./client.js";
export { Lock, Leadership, Permit, RWHold } from "./lock.js";
export { LockSet } from "./lockset.js";
export { Stream } from "./sse.js";
export { StreamSession, defaultStreamGrace, minStreamGrace } from "./streamsession.js";
export type { StreamSessionOptions } from "./streamsession.js";
export type { EventsOptions } from "./sse.js";
export * from "./errors.js";
export type * from "./types.js";
export type { Duration } from "./util.js";
