"""Keys against a live baton: compare-and-set, session-bound keys, fenced
writes, paged listings, blocking reads, a watch that resumes after a
broken connection without a gap or a repeat, and which writes are
repeated after a lost answer."""

import os
import queue
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import Front, LiveTest, baton, wait_until  # noqa: E402
from test_events import reader  # noqa: E402


class KeysTest(LiveTest):
    def test_compare_and_set_create_only_list_and_delete(self):
        d = self.name("cfg")
        key = d + "/db"
        with self.assertRaises(baton.KeyNotFoundError) as cm:
            self.c.get_key(key)
        self.assertGreater(cm.exception.revision, 0, "a missing key's error says the revision it was read at")

        a = self.c.put_key(key, {"host": "a"}, if_revision=0)
        self.assertEqual((a.key, a.value, a.version, a.created_revision), (key, {"host": "a"}, 1, a.revision))
        with self.assertRaises(baton.RevisionMismatchError) as cm:
            self.c.put_key(key, "x", if_revision=0)
        self.assertEqual(cm.exception.revision, a.revision, "a second create names the key's revision")
        with self.assertRaises(baton.RevisionMismatchError) as cm:
            self.c.put_key(d + "/absent", "x", if_revision=a.revision)
        self.assertEqual(cm.exception.revision, 0, "0: the key does not exist")

        b = self.c.put_key(key, {"host": "b"}, if_revision=a.revision)
        self.assertEqual((b.version, b.created_revision), (2, a.revision))
        got = self.c.get_key(key)
        self.assertEqual((got.value, got.revision, got.session), ({"host": "b"}, b.revision, None))

        for i in range(3):
            self.c.put_key(f"{d}/n{i}", i)
        listed, cursor, pages = [], None, 0
        while True:
            page = self.c.keys(prefix=d + "/", limit=2, cursor=cursor)
            pages += 1
            self.assertLessEqual(len(page.keys), 2)
            self.assertGreaterEqual(page.revision, b.revision, "a page is read after the puts before it")
            listed += [(k.key.removeprefix(d + "/"), k.value) for k in page.keys]
            cursor = page.next_cursor
            if not cursor:
                break
        self.assertEqual(listed, [("db", {"host": "b"}), ("n0", 0), ("n1", 1), ("n2", 2)])
        self.assertEqual(pages, 2)

        with self.assertRaises(baton.RevisionMismatchError):
            self.c.delete_key(key, if_revision=a.revision)
        self.c.delete_key(key, if_revision=b.revision)
        with self.assertRaises(baton.KeyNotFoundError):
            self.c.delete_key(key)

    def test_a_fenced_put_is_refused_once_the_lock_changed_hands(self):
        name, key = self.name(), self.name("k")
        old = self.c.acquire(name)
        self.c.put_key(key, 10, fence=baton.Fence("lock", name, old.token))
        old.release()
        new = self.c.acquire(name)
        self.addCleanup(new.release)
        with self.assertRaises(baton.StaleTokenError):
            self.c.put_key(key, 9, fence=baton.Fence("lock", name, old.token))
        with self.assertRaises(baton.StaleTokenError):
            self.c.delete_key(key, fence=baton.Fence("lock", name, old.token))
        self.assertEqual(self.c.get_key(key).value, 10, "the stale holder wrote nothing")
        self.assertEqual(self.c.put_key(key, 11, fence=baton.Fence("lock", name, new.token)).value, 11)
        self.c.delete_key(key, fence=baton.Fence("lock", name, new.token))
        with self.assertRaises(ValueError):
            self.c.put_key(key, 1, fence=baton.Fence("mutex", name, new.token))

    def test_a_session_bound_key_goes_with_its_session(self):
        s = self.c.create_session(owner=self.name("member"), ttl="10s")
        member = self.name("members") + "/m1"
        k = self.c.put_key(member, "10.0.0.1:80", session=s.id)
        self.assertEqual(k.session, s.id)
        self.c.delete_session(s.id)
        with self.assertRaises(baton.KeyNotFoundError):
            self.c.get_key(member)
        with self.assertRaises(baton.SessionNotFoundError):
            self.c.put_key(member, "10.0.0.1:80", session=s.id)

    def test_a_blocking_read_returns_at_the_next_put(self):
        key = self.name("k")
        with self.assertRaises(baton.KeyNotFoundError) as cm:
            self.c.get_key(key)
        got = queue.Queue()
        threading.Thread(target=lambda: got.put(self._try(self.c.wait_key, key, cm.exception.revision, "30s")),
                         daemon=True).start()
        put = self.c.put_key(key, "up")
        k = got.get(timeout=20)
        self.assertIsInstance(k, baton.Key)
        self.assertEqual((k.revision, k.value), (put.revision, "up"))

        # A wait that runs out returns the key as it is.
        same = self.c.wait_key(key, put.revision, wait="200ms")
        self.assertEqual(same.revision, put.revision)

    @staticmethod
    def _try(fn, *a):
        try:
            return fn(*a)
        except Exception as e:  # noqa: BLE001: handed to the test
            return e

    def test_a_watch_sees_every_change_once_across_a_broken_connection(self):
        d = self.name("w")
        self.c.put_key(d + "/before", 0)
        page = self.c.keys(prefix=d + "/")
        self.assertEqual([k.key for k in page.keys], [d + "/before"])
        refusing = threading.Event()

        def rule(n, method, path):
            if refusing.is_set() and path.startswith("/v1/kv/events"):
                return ("status", 503, None)
            return "forward"
        f = Front(self.addr, rule)
        self.addCleanup(f.close)
        wc = self.client(f.url, retry_backoff=0.01)
        last = page.revision

        with wc.watch_keys(d + "/", since=page.revision) as stream:
            q = reader(stream)

            def expect(typ, key, value=None):
                nonlocal last
                ev = q.get(timeout=20)
                if isinstance(ev, Exception):
                    raise ev
                self.assertEqual((ev.type, ev.key, ev.value), (typ, d + "/" + key, value))
                self.assertGreater(ev.revision, last)
                last = ev.revision

            self.c.put_key(d + "/a", 1)
            expect("put", "a", 1)

            # Cut the stream, and keep it away while keys change.
            refusing.set()
            stream._drop()
            self.c.put_key(d + "/b", 2)
            self.c.put_key(d + "/a", 3)
            self.c.delete_key(d + "/b")
            wait_until(lambda: f.count("GET", "/v1/kv/events") >= 2, timeout=10, what="the watch refused")
            refusing.clear()
            expect("put", "b", 2)
            expect("put", "a", 3)
            expect("delete", "b")
            self.c.put_key(d + "/c", {"x": True})
            expect("put", "c", {"x": True})
            self.assertTrue(q.empty(), "no change twice")

    def test_from_now_is_the_default(self):
        d = self.name("now")
        self.c.put_key(d + "/old", 1)
        with self.c.watch_keys(d + "/") as stream:
            q = reader(stream)
            k = self.c.put_key(d + "/new", 2)
            ev = q.get(timeout=20)
            self.assertEqual((ev.type, ev.key, ev.revision, ev.version), ("put", d + "/new", k.revision, 1))


class KeyRetryTest(LiveTest):
    def front(self, fault):
        """A front whose first request gets fault."""
        f = Front(self.addr, lambda n, method, path: fault if n == 1 else "forward")
        self.addCleanup(f.close)
        return f, self.client(f.url, retry_backoff=0.01)

    def test_an_unconditional_put_is_not_repeated_after_a_lost_answer(self):
        key = self.name("k")
        f, c = self.front("forward-drop")
        with self.assertRaises(baton.UnavailableError) as cm:
            c.put_key(key, 1)
        self.assertTrue(cm.exception.outcome_unknown)
        self.assertEqual(f.count("PUT"), 1)
        self.assertEqual(self.c.get_key(key).version, 1, "it did land, once")

    def test_a_conditional_put_and_delete_are_retried(self):
        key = self.name("k")
        f, c = self.front("drop")
        k = c.put_key(key, 1, if_revision=0)
        self.assertEqual((k.version, f.count("PUT")), (1, 2))
        f, c = self.front("drop")
        c.delete_key(key, if_revision=k.revision)
        self.assertEqual(f.count("DELETE"), 2)
        with self.assertRaises(baton.KeyNotFoundError):
            self.c.get_key(key)

    def test_a_conditional_put_whose_first_attempt_landed_says_so(self):
        key = self.name("k")
        f, c = self.front("forward-drop")
        with self.assertRaises(baton.RevisionMismatchError) as cm:
            c.put_key(key, 1, if_revision=0)
        self.assertIn("may have taken effect", str(cm.exception))
        self.assertEqual(cm.exception.revision, self.c.get_key(key).revision)


if __name__ == "__main__":
    unittest.main()
