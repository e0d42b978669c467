"""The audit trail against a live baton: history, and an event stream
that resumes after a broken connection without a gap or a duplicate."""

import os
import queue
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import Front, LiveTest, baton, wait_until  # noqa: E402


def reader(stream):
    """Reads stream in a thread into a queue, so that the test waits on
    it with timeouts; an exception ending the stream is queued too."""
    q = queue.Queue()

    def run():
        try:
            for ev in stream:
                q.put(ev)
        except Exception as e:  # noqa: BLE001: handed to the test
            q.put(e)
    threading.Thread(target=run, daemon=True).start()
    return q


def take(q, n, timeout=5.0):
    out = []
    for _ in range(n):
        v = q.get(timeout=timeout)
        if isinstance(v, Exception):
            raise v
        out.append(v)
    return out


class HistoryTest(LiveTest):
    def test_history_is_newest_first_and_filters_by_lock_and_type(self):
        name = self.name()
        lk = self.c.acquire(name, owner="hist")
        lk.release()
        events, _ = self.c.history(lock=name)
        self.assertEqual([(e.type, e.token, e.owner) for e in events],
                         [("released", lk.token, "hist"), ("acquired", lk.token, "hist")])
        self.assertEqual(events[0].kind, "lock")
        self.assertGreater(events[0].revision, events[1].revision)
        only, _ = self.c.history(lock=name, types=["acquired"])
        self.assertEqual([e.type for e in only], ["acquired"])

    def test_history_pages_with_before(self):
        name = self.name()
        for _ in range(3):
            self.c.acquire(name).release()
        page, before = self.c.history(lock=name, limit=4)
        self.assertEqual(len(page), 4)
        self.assertGreater(before, 0)
        rest, last = self.c.history(lock=name, limit=4, before=before)
        self.assertEqual(len(rest), 2)
        self.assertEqual(last, 0)


class EventsTest(LiveTest):
    def churn(self, name, n):
        """n acquire/release pairs of name: 2n events."""
        for _ in range(n):
            self.c.acquire_once(name, ttl="2s")
            self.c.release(name, self.c.get(name).token)

    def test_a_stream_resumes_after_a_broken_connection_without_a_gap_or_a_duplicate(self):
        name = self.name()
        with self.c.events(lock=name) as stream:
            q = reader(stream)
            self.churn(name, 3)
            got = take(q, 3)
            # Cut the connection, as a node or a proxy would, in the
            # middle of what the stream has to deliver.
            stream._drop()
            self.churn(name, 2)
            stream._drop()
            got += take(q, 7)
            self.assertTrue(q.empty())
        want, _ = self.c.history(lock=name)
        want.reverse()
        self.assertEqual([(e.revision, e.type, e.token) for e in got],
                         [(e.revision, e.type, e.token) for e in want])
        self.assertEqual(len(got), 10)

    def test_a_stream_through_a_proxy_that_closes_after_it_works(self):
        # The front answers a stream with "Connection: close", as an
        # HTTP/1.0-minded proxy may.
        f = Front(self.addr, lambda n, method, path: "forward")
        self.addCleanup(f.close)
        name = self.name()
        with self.client(f.url).events(lock=name) as stream:
            q = reader(stream)
            self.churn(name, 1)
            self.assertEqual([e.type for e in take(q, 2)], ["acquired", "released"])
            stream._drop()
            self.churn(name, 1)
            self.assertEqual([e.type for e in take(q, 2)], ["acquired", "released"])
        self.assertGreaterEqual(f.count("GET", "/v1/events"), 2)

    def test_since_none_streams_from_now_and_since_replays(self):
        name = self.name()
        self.churn(name, 1)
        events, _ = self.c.history(lock=name)
        with self.c.events(lock=name) as live_stream, self.c.events(lock=name, since=events[-1].revision - 1) as replay:
            lq, rq = reader(live_stream), reader(replay)
            self.churn(name, 1)
            self.assertEqual([e.type for e in take(lq, 2)], ["acquired", "released"])
            self.assertEqual([e.type for e in take(rq, 4)], ["acquired", "released"] * 2)
        with self.c.events(lock=name, since=0) as everything:
            self.assertEqual([e.type for e in take(reader(everything), 4)], ["acquired", "released"] * 2)

    def test_a_stream_the_server_refuses_raises(self):
        with self.c.events(kind="bogus") as stream:
            q = reader(stream)
            e = q.get(timeout=5)
            self.assertIsInstance(e, baton.InvalidError)
            self.assertEqual(e.field, "kind")

    def test_close_from_another_thread_ends_the_iteration(self):
        stream = self.c.events(lock=self.name())
        done = threading.Event()

        def run():
            for _ in stream:
                pass
            done.set()
        threading.Thread(target=run, daemon=True).start()
        wait_until(lambda: stream._conn is not None, what="stream connected")
        stream.close()
        self.assertTrue(done.wait(5))


if __name__ == "__main__":
    unittest.main()
