"""Read/write locks against a live baton: readers share, a writer is
refused with the holders in the way and then waits for the readers, a
reader behind a waiting writer waits for it (first come, first served),
a revoked hold is lost within a second, fenced writes naming the rwlock
take the writer's token only, and the listing, the with block, the
session's rwlocks and the audit trail's kind."""

import os
import queue
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import LiveTest, baton, wait_until  # noqa: E402


class RWLockTest(LiveTest):
    def take(self, name, mode, **kw):
        h = self.c.acquire_rw(name, mode, **kw)
        self.addCleanup(h._hold.release_quietly)
        return h

    def in_background(self, name, mode, **kw):
        """An acquire_rw of another client in a thread; the queue gets
        its RWHold (or its exception)."""
        got = queue.Queue()
        other = self.client()

        def run():
            try:
                h = other.acquire_rw(name, mode, **kw)
                self.addCleanup(h._hold.release_quietly)
                got.put(h)
            except Exception as e:  # noqa: BLE001: handed to the test
                got.put(e)
        threading.Thread(target=run, daemon=True).start()
        return got

    def waiters(self, name):
        return [(w.owner, w.mode) for w in self.c.get_rwlock(name).waiters]

    def test_readers_share_and_a_writer_waits_for_them(self):
        name = self.name("rw")
        a = self.take(name, "read", owner="a", metadata={"job": "x"})
        b = self.take(name, "read", owner="b", ttl="10s")
        self.assertEqual((a.mode, b.mode), ("read", "read"))
        self.assertNotEqual(a.token, b.token)
        got = self.c.get_rwlock(name)
        self.assertEqual((got.name, got.mode), (name, "read"))
        self.assertEqual([(h.token, h.mode) for h in got.holders], [(a.token, "read"), (b.token, "read")])
        self.assertEqual((got.holders[0].metadata, got.holders[1].ttl), ({"job": "x"}, 10.0))
        with self.assertRaises(baton.HeldError) as cm:
            self.client().acquire_rw(name, "write", owner="w")
        e = cm.exception
        self.assertEqual((e.code, e.status, e.holder), ("lock_held", 409, None))
        self.assertEqual(sorted(h.token for h in e.holders), sorted([a.token, b.token]))
        got = self.in_background(name, "write", owner="w", wait="10s")
        wait_until(lambda: self.waiters(name) == [("w", "write")], what="writer queued")
        a.release()
        self.assertEqual(self.waiters(name), [("w", "write")], "one reader still holds")
        b.release()
        w = got.get(timeout=5)
        self.assertIsInstance(w, baton.RWHold)
        self.assertEqual(w.mode, "write")
        self.assertGreater(w.token, b.token)
        info = self.c.get_rwlock(name)
        self.assertEqual((info.mode, [h.token for h in info.holders]), ("write", [w.token]))
        self.assertFalse(a.lost.is_set() or b.lost.is_set(), "a release is no loss")

    def test_a_reader_behind_a_waiting_writer_waits_for_it(self):
        name = self.name("rw")
        r1 = self.take(name, "read", owner="r1")
        writer = self.in_background(name, "write", owner="w", wait="10s")
        wait_until(lambda: self.waiters(name) == [("w", "write")], what="writer queued")
        reader = self.in_background(name, "read", owner="r2", wait="10s")
        wait_until(lambda: self.waiters(name) == [("w", "write"), ("r2", "read")], what="reader queued behind")
        self.assertEqual([h.token for h in self.c.get_rwlock(name).holders], [r1.token],
                         "the reader did not join the reader holding")
        r1.release()
        w = writer.get(timeout=5)
        self.assertIsInstance(w, baton.RWHold)
        self.assertEqual(self.waiters(name), [("r2", "read")])
        w.release()
        r2 = reader.get(timeout=5)
        self.assertIsInstance(r2, baton.RWHold)
        self.assertGreater(r2.token, w.token)
        self.assertEqual(self.c.get_rwlock(name).mode, "read")

    def test_a_revoked_hold_is_lost_within_a_second(self):
        name = self.name("rw")
        h = self.c.acquire_rw(name, "read")
        keep = self.take(name, "read")
        self.client().revoke_rwlock(name, h.token, reason="test")
        self.assertTrue(h.lost.wait(1.0), "lost not set within a second of the revoke")
        self.assertIsInstance(h.error.cause, baton.NotHeldError)
        self.assertIn("revoked", str(h.error))
        self.assertIn("read/write lock", str(h.error))
        with self.assertRaises(baton.LockLostError):
            h.release()
        self.assertFalse(keep.lost.is_set(), "the other reader still holds")
        self.assertEqual([x.token for x in self.c.get_rwlock(name).holders], [keep.token])

    def test_a_fenced_write_naming_the_rwlock_takes_the_writers_token_only(self):
        name, resource = self.name("rw"), self.name("res")
        with self.c.write_lock(name) as w:
            v = self.c.put_fenced(resource, w.token, {"n": 1}, rwlock=name)
            self.assertEqual((v.token, v.value), (w.token, {"n": 1}))
        with self.c.read_lock(name) as r:
            self.assertGreater(r.token, w.token)
            with self.assertRaises(baton.NotHolderError):
                self.c.put_fenced(resource, r.token, {"n": 2}, rwlock=name)
        self.assertEqual(self.c.get_fenced(resource).value, {"n": 1})

    def test_renewal_keeps_a_short_hold_past_its_ttl_and_the_with_block_releases(self):
        name = self.name("rw")
        with self.c.rwlock(name, "write", ttl="2s") as h:
            self.assertFalse(h.lost.wait(2.6), f"lost: {h.error}")
            self.assertEqual(self.c.renew_rwlock(name, h.token).token, h.token)
        with self.assertRaises(baton.NotHeldError):
            self.c.get_rwlock(name)
        with self.assertRaises(baton.LockLostError):
            with self.c.write_lock(name) as h:
                self.client().revoke_rwlock(name, h.token)
                self.assertTrue(h.lost.wait(1.0))

    def test_rwlocks_are_listed_a_page_at_a_time(self):
        prefix = self.name("p")
        names = [prefix + x for x in ("-a", "-b", "-c")]
        for n in names:
            self.take(n, "read")
            self.take(n, "read")
        seen, cursor = [], ""
        for _ in range(len(names) + 1):
            page, cursor = self.c.rwlocks(prefix=prefix, limit=2, cursor=cursor or None)
            self.assertLessEqual(len(page), 2)
            seen += [(x.name, x.mode, len(x.holders), x.waiters) for x in page]
            if not cursor:
                break
        self.assertEqual(seen, [(n, "read", 2, []) for n in names])

    def test_a_sessions_holds_are_in_its_rwlocks_and_end_with_it(self):
        s = self.c.create_session(ttl="10s")
        name, other = self.name("rw"), self.name("rw2")
        w = self.c.acquire_rw(name, "write", session=s.id)
        again = self.c.acquire_rw(name, "write", session=s.id)
        self.assertEqual(again.token, w.token, "the session's write hold, handed back")
        r1 = self.c.acquire_rw(other, "read", session=s.id)
        r2 = self.c.acquire_rw(other, "read", session=s.id)
        self.assertNotEqual(r1.token, r2.token, "each read takes a hold of its own")
        self.assertEqual(sorted(self.c.get_session(s.id).rwlocks), sorted([name, other]))
        self.client().delete_session(s.id)
        for h in (w, again, r1, r2):
            self.assertTrue(h.lost.wait(1.0), f"{h!r} not lost with its session")

    def test_history_and_events_filter_by_kind_rwlock(self):
        name = self.name("rw")
        with self.c.events(since=self.c.cluster().revision, kind="rwlock", name=name) as stream:
            self.c.acquire_rw(name, "read", owner="h").release()
            w = self.c.acquire_rw(name, "write", owner="h")
            w.release()
            it = iter(stream)
            got = [next(it) for _ in range(4)]
        self.assertEqual([(e.type, e.kind, e.name, e.mode) for e in got],
                         [("acquired", "rwlock", name, "read"), ("released", "rwlock", name, "read"),
                          ("acquired", "rwlock", name, "write"), ("released", "rwlock", name, "write")])
        self.assertEqual(got[3].token, w.token)
        events, _ = self.c.history(kind="rwlock", name=name)
        self.assertEqual([e.type for e in events], ["released", "acquired", "released", "acquired"], "newest first")


if __name__ == "__main__":
    unittest.main()
