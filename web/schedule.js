// When loads run: in bursts coalesced, never overlapping.

// coalesce returns a trigger for fn: calls in a burst run fn once, runs
// never overlap, and a call during a run runs fn again after it, so the
// last state always gets loaded. Runs start at least gap ms apart.
export function coalesce(fn, gap) {
  let running = false;
  let again = false;
  let timer = 0;
  let last = 0;
  const run = async () => {
    timer = 0;
    running = true;
    again = false;
    last = Date.now();
    try {
      await fn();
    } catch (err) {
      console.warn(err); // fn shows its own errors; this is a bug
    } finally {
      running = false;
      if (again) trigger();
    }
  };
  const trigger = () => {
    if (running) {
      again = true;
      return;
    }
    if (!timer) timer = setTimeout(run, Math.max(30, last + gap - Date.now()));
  };
  return trigger;
}

// debounce returns a trigger that runs fn once calls have stopped for ms.
export function debounce(fn, ms) {
  let t = 0;
  return () => {
    clearTimeout(t);
    t = setTimeout(fn, ms);
  };
}
