// Reading a Server-Sent Events stream (the text/event-stream format) from
// a fetch() body.

// readEvents reads body to its end. It calls on.chunk() for every chunk
// that arrives (heartbeats too), on.message({lastEventId, type, data}) for
// every message and on.retry(ms) for every retry field. It throws when the
// connection breaks or is aborted.
export async function readEvents(body, on) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const msg = { type: "", data: [] };
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    on.chunk();
    buf += value;
    // Lines end with \n (baton's) or \r\n; a chunk may end mid-line.
    for (let nl = buf.indexOf("\n"); nl >= 0; nl = buf.indexOf("\n")) {
      const line = buf.slice(0, nl).replace(/\r$/, "");
      buf = buf.slice(nl + 1);
      readLine(line, msg, on);
    }
  }
}

// readLine takes one line: fields build a message, and a blank line
// dispatches it.
function readLine(line, msg, on) {
  if (line === "") {
    if (msg.data.length) on.message({ lastEventId: msg.id || "", type: msg.type || "message", data: msg.data.join("\n") });
    msg.type = "";
    msg.data = [];
    return;
  }
  if (line.startsWith(":")) return; // a comment: heartbeat, or why the server ends the stream
  const colon = line.indexOf(":");
  const field = colon < 0 ? line : line.slice(0, colon);
  let value = colon < 0 ? "" : line.slice(colon + 1);
  if (value.startsWith(" ")) value = value.slice(1);
  switch (field) {
    case "data":
      msg.data.push(value);
      break;
    case "event":
      msg.type = value;
      break;
    case "id":
      if (!value.includes("\0")) msg.id = value;
      break;
    case "retry":
      if (/^\d+$/.test(value)) on.retry(Number(value));
      break;
  }
}
