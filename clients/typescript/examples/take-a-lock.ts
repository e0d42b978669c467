// Take a lock, show its fencing token, and give it back; on a 409, say
// who holds it.
//
//   BATON_ADDR=http://127.0.0.1:8080 node take-a-lock.js [NAME]
//
// CI compiles it with strict TypeScript in a project that installed the
// package from its npm pack, and runs it against a node.
import { Client, HeldError } from "baton-client";

const name = process.argv[2] ?? "example";
const c = new Client(process.env.BATON_ADDR ?? "http://127.0.0.1:8080");
try {
  const lk = await c.acquire(name, { ttl: "30s", owner: "take-a-lock" });
  try {
    console.log(`${name}: token ${lk.token}`);
  } finally {
    await lk.release();
  }
} catch (e) {
  if (e instanceof HeldError) {
    console.log(`${name} is held by ${e.holder?.owner ?? "another holder"}`);
  }
  throw e;
}
