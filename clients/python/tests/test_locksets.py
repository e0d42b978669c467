"""Lock sets against a live baton: every lock granted with one token or
none, the holders in the way of a refused set, a set that waits for a
lock and is granted with the others, a set lost within a second when one
of its locks is revoked on its own, bad names refused naming the field,
renewal, the with block and a session handing the set back."""

import os
import queue
import sys
import threading
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import LiveTest, baton, wait_until  # noqa: E402


class LockSetTest(LiveTest):
    def names(self, n=2):
        return [self.name(f"acct{i}") for i in range(n)]

    def in_background(self, names, **kw):
        """An acquire_set of another client in a thread; the queue gets
        its LockSet (or its exception)."""
        got = queue.Queue()
        other = self.client()

        def run():
            try:
                s = other.acquire_set(names, **kw)
                self.addCleanup(s._hold.release_quietly)
                got.put(s)
            except Exception as e:  # noqa: BLE001: handed to the test
                got.put(e)
        threading.Thread(target=run, daemon=True).start()
        return got

    def test_acquire_takes_every_lock_with_one_token_and_release_ends_them_all(self):
        names = self.names(3)
        s = self.c.acquire_set(names, ttl="10s", owner="transfer-7", metadata={"job": "t"})
        self.assertEqual(s.names, names)
        self.assertGreater(s.token, 0)
        self.assertEqual([x.name for x in s.locks], names)
        for n in names:
            got = self.c.get(n)
            self.assertEqual((got.token, got.owner, got.set, got.metadata, got.ttl),
                             (s.token, "transfer-7", names, {"job": "t"}, 10.0))
        self.assertEqual(s.info.token, s.token)
        s.release()
        s.release()  # again: the same result
        for n in names:
            with self.assertRaises(baton.NotHeldError):
                self.c.get(n)
        self.assertFalse(s.lost.is_set(), "a release is no loss")
        self.assertTrue(s.done.is_set())

    def test_a_set_with_a_lock_held_raises_held_error_with_the_holders_and_takes_nothing(self):
        a, b, c = self.names(3)
        lk = self.c.acquire(b, owner="single")
        self.addCleanup(lk.release)
        with self.assertRaises(baton.HeldError) as cm:
            self.client().acquire_set([a, b, c], owner="set")
        e = cm.exception
        self.assertEqual((e.code, e.status), ("lock_held", 409))
        self.assertEqual([(h.name, h.token, h.owner) for h in e.holders], [(b, lk.token, "single")])
        for n in (a, c):
            with self.assertRaises(baton.NotHeldError, msg=f"{n} was taken"):
                self.c.get(n)

    def test_a_waiting_set_is_granted_when_its_held_lock_is_released(self):
        a, b = self.names()
        first = self.c.acquire(b)
        got = self.in_background([a, b], wait="10s", owner="set")
        wait_until(lambda: [(w.owner, w.set) for w in self.c.get(b).waiters] == [("set", [a, b])],
                   what="the set queued for the held lock")
        first.release()
        s = got.get(timeout=5)
        self.assertIsInstance(s, baton.LockSet)
        self.assertGreater(s.token, first.token)
        self.assertEqual([self.c.get(n).token for n in (a, b)], [s.token, s.token])
        events, _ = self.c.history(kind="lock", name=a, types=["acquired"])
        self.assertEqual([(e.revision, e.set) for e in events], [(s.token, [a, b])],
                         "a set's acquired events are at the revision of its token")

    def test_a_set_is_lost_within_a_second_when_one_of_its_locks_is_revoked(self):
        a, b = self.names()
        s = self.c.acquire_set([a, b], ttl="30s")
        self.client().revoke(b, reason="test")
        self.assertTrue(s.lost.wait(1.0), "lost not set within a second of the revoke")
        self.assertIsInstance(s.error, baton.LockLostError)
        self.assertIsInstance(s.error.cause, baton.NotHeldError)
        self.assertIn("revoked", str(s.error))
        self.assertIn(repr(b), str(s.error), "the error names the lock lost")
        self.assertIn("lock set", str(s.error))
        self.assertEqual(self.c.get(a).token, s.token, "the other lock is still held")
        with self.assertRaises(baton.LockLostError):
            s.release()
        with self.assertRaises(baton.NotHeldError):
            self.c.get(a)
        with self.assertRaises(baton.LockLostError):
            s.renew()

    def test_a_renew_of_a_set_missing_a_lock_finds_it_lost(self):
        a, b = self.names()
        s = self.c.acquire_set([a, b])
        self.addCleanup(s._hold.release_quietly)
        info = s.renew()
        self.assertEqual((info.names, info.token), ([a, b], s.token))
        with self.assertRaises(baton.TokenMismatchError):
            self.c.renew_set([a, b], s.token + 1)
        self.assertFalse(s.lost.is_set(), "another token's renew changes nothing")
        # Released by its token on its own: the set is no longer whole.
        self.client().release(a, s.token)
        with self.assertRaises(baton.NotHeldError):
            self.c.renew_set([a, b], s.token)
        self.assertTrue(s.lost.wait(1.0))
        self.assertIn("released", str(s.error))

    def test_bad_names_are_refused_naming_the_field(self):
        a, b = self.names()
        cases = {"one name": [a], "a repeated name": [a, a], "an invalid name": [a, "no spaces"],
                 "65 names": [f"{a}-{i}" for i in range(65)]}
        for what, names in cases.items():
            with self.subTest(what), self.assertRaises(baton.InvalidError) as cm:
                self.c.acquire_set(names)
            self.assertEqual((cm.exception.status, cm.exception.field), (400, "names"))
        with self.assertRaises(baton.NotHeldError):
            self.c.get(a)
        with self.assertRaises(TypeError):
            self.c.acquire_set(a + "," + b)

    def test_renewal_keeps_a_short_set_past_its_ttl_and_the_with_block_releases(self):
        names = self.names()
        with self.c.lock_set(names, ttl="2s") as s:
            self.assertFalse(s.lost.wait(2.6), f"lost: {s.error}")
            self.assertEqual([self.c.get(n).token for n in names], [s.token] * 2)
        for n in names:
            with self.assertRaises(baton.NotHeldError):
                self.c.get(n)
        with self.assertRaises(baton.LockLostError):
            with self.c.acquire_set(names) as s:
                self.client().revoke(names[0])
                self.assertTrue(s.lost.wait(1.0))

    def test_a_session_gets_its_set_back_and_loses_it_with_the_session(self):
        sess = self.c.create_session(ttl="10s")
        a, b = self.names()
        s = self.c.acquire_set([a, b], session=sess.id)
        again = self.c.acquire_set([b, a], session=sess.id)
        self.assertEqual(again.token, s.token, "the session's set, handed back")
        self.assertEqual(self.c.get(a).session, sess.id)
        self.client().delete_session(sess.id)
        for x in (s, again):
            self.assertTrue(x.lost.wait(1.0), f"{x!r} not lost with its session")


if __name__ == "__main__":
    unittest.main()
