// The empty states: how to take a first lock, campaign in a first
// election, take a first permit and a first read hold, from a terminal, on this server.

import { $, setText } from "./dom.js";

// fillEmptyState writes the examples, and wires their copy button.
export function fillEmptyState() {
  examplesUnder("");
  const copy = $("copy-curl");
  if (navigator.clipboard && window.isSecureContext) {
    copy.hidden = false;
    copy.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText($("empty-curl").textContent);
        setText(copy, "Copied");
      } catch {
        setText(copy, "Copy failed");
      }
      setTimeout(() => setText(copy, "Copy"), 2000);
    });
  }
}

// examplesUnder names the examples' locks, elections, semaphores,
// read/write locks and keys under prefix: one the signed-in credential may
// write (access.js), so that they run as shown.
export function examplesUnder(prefix) {
  const origin = location.origin;
  const p = prefix || "";
  $("empty-curl").textContent =
    `curl -s -X POST ${origin}/v1/locks/${p}my-first-lock \\\n` +
    `     -H 'Content-Type: application/json' -d '{"owner":"me","ttl":"60s"}'`;
  $("empty-release").textContent = `curl -s -X DELETE '${origin}/v1/locks/${p}my-first-lock?token=TOKEN'`;
  $("elections-empty-curl").textContent =
    `curl -s -X POST ${origin}/v1/elections/${p}my-first-election/campaign \\\n` +
    `     -H 'Content-Type: application/json' -d '{"candidate":"me","value":{"addr":"10.0.0.5:8080"},"ttl":"15s"}'`;
  $("semaphores-empty-curl").textContent =
    `curl -s -X POST ${origin}/v1/semaphores/${p}my-first-semaphore \\\n` +
    `     -H 'Content-Type: application/json' -d '{"limit":3,"owner":"me","ttl":"60s"}'`;
  $("rwlocks-empty-curl").textContent =
    `curl -s -X POST ${origin}/v1/rwlocks/${p}my-first-rwlock \\\n` +
    `     -H 'Content-Type: application/json' -d '{"mode":"read","owner":"me","ttl":"60s"}'`;
  $("keys-empty-curl").textContent =
    `curl -s -X PUT ${origin}/v1/kv/${p}config/my-first-key \\\n` +
    `     -H 'Content-Type: application/json' -d '{"value":{"replicas":3}}'`;
}
