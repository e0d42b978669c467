// Freshness of a list that events change while reads of it are under way
// (the elections, semaphores and read/write locks panels): an answer to a
// read sent before an event about a name must not be taken over what the
// event made of that name.

// freshness keeps the count for one list. count counts the events
// applied, and changed holds, for each name, the count at its latest
// event; reads counts the reads under way, and changed is cleared when
// none is, since no answer older than its events can come then.
export function freshness() {
  let count = 0;
  const changed = new Map();
  let reads = 0;
  return {
    // read runs fn(since), where since is the event count when it
    // started, as one read.
    async read(fn) {
      reads++;
      try {
        return await fn(count);
      } finally {
        if (--reads === 0) changed.clear();
      }
    },
    // applied notes that an event about name was applied.
    applied(name) {
      changed.set(name, ++count);
    },
    // newer says whether an event about name was applied after since.
    newer(name, since) {
      return (changed.get(name) || 0) > since;
    },
    // merge is the list read, except for the names an event changed after
    // since, which keep what the events made of them in current.
    merge(list, current, since) {
      const out = list.filter((x) => !this.newer(x.name, since));
      for (const x of current) if (this.newer(x.name, since)) out.push(x);
      return out.sort(byName);
    },
  };
}

export const byName = (a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);

// putByName places x in list, sorted by name, in place of the one of its
// name.
export function putByName(list, x) {
  const i = list.findIndex((y) => y.name >= x.name);
  if (i < 0) list.push(x);
  else if (list[i].name === x.name) list[i] = x;
  else list.splice(i, 0, x);
}

// dropByName takes the one named name out of list.
export function dropByName(list, name) {
  const i = list.findIndex((x) => x.name === name);
  if (i >= 0) list.splice(i, 1);
}
