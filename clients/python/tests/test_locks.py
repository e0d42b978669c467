"""Locks against a live baton: acquire, release, the holder in a held
error, loss within a second, the context manager."""

import datetime
import os
import queue
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import LiveTest, baton  # noqa: E402


class LockTest(LiveTest):
    def test_acquire_then_release(self):
        name = self.name()
        lk = self.c.acquire(name, ttl="10s", owner="w1", metadata={"job": "nightly"})
        self.assertGreater(lk.token, 0)
        self.assertEqual(lk.name, name)
        got = self.c.get(name)
        self.assertEqual((got.token, got.owner, got.metadata, got.ttl), (lk.token, "w1", {"job": "nightly"}, 10.0))
        lk.release()
        lk.release()  # again: the same result
        with self.assertRaises(baton.NotHeldError):
            self.c.get(name)
        self.assertFalse(lk.lost.is_set())
        self.assertTrue(lk.done.is_set())

    def test_a_held_lock_raises_held_error_with_the_holder(self):
        name = self.name()
        lk = self.c.acquire(name, owner="first")
        self.addCleanup(lk.release)
        with self.assertRaises(baton.HeldError) as cm:
            self.client().acquire(name, owner="second")
        e = cm.exception
        self.assertEqual((e.code, e.status), ("lock_held", 409))
        self.assertEqual((e.holder.token, e.holder.owner), (lk.token, "first"))
        self.assertIn("held by", e.detail)

    def test_a_revoke_sets_lost_within_a_second(self):
        name = self.name()
        lk = self.c.acquire(name, ttl="30s")
        self.client().revoke(name, reason="test")
        self.assertTrue(lk.lost.wait(1.0), "lost not set within a second of the revoke")
        self.assertIsInstance(lk.error, baton.LockLostError)
        self.assertIsInstance(lk.error.cause, baton.NotHeldError)
        self.assertIn("revoked", str(lk.error))
        with self.assertRaises(baton.LockLostError):
            lk.release()

    def test_a_release_by_token_elsewhere_sets_lost_within_a_second(self):
        name = self.name()
        lk = self.c.acquire(name)
        self.client().release(name, lk.token)
        self.assertTrue(lk.lost.wait(1.0))
        self.assertIn("released", str(lk.error))

    def test_locks_of_several_names_share_one_stream_that_narrows_again(self):
        a, b = self.name("a"), self.name("b")
        la = self.c.acquire(a)
        lb = self.c.acquire(b)
        self.addCleanup(lb._hold.release_quietly)
        self.assertEqual(self.c._watch._filter, ("", ""), "two locks: the stream carries every event")
        self.client().revoke(a)
        self.assertTrue(la.lost.wait(1.0))
        self.assertFalse(lb.lost.is_set())
        self.assertEqual(self.c._watch._filter, ("lock", b), "one lock left: the stream narrows to it")
        self.client().revoke(b)
        self.assertTrue(lb.lost.wait(1.0), "the narrowed stream missed the revoke")

    def test_a_stale_token_cannot_release_a_newer_holder(self):
        name = self.name()
        old = self.c.acquire_once(name, ttl="2s")
        self.c.release(name, old.token)
        lk = self.c.acquire(name)
        self.addCleanup(lk.release)
        with self.assertRaises(baton.TokenMismatchError):
            self.c.release(name, old.token)
        self.assertFalse(lk.lost.wait(0.2))

    def test_a_release_inside_the_at_least_window_keeps_the_lock_until_its_end(self):
        name = self.name()
        lk = self.c.acquire(name, min_hold=datetime.timedelta(seconds=60))
        self.assertEqual(lk.info.min_hold, 60.0)
        lk.release()
        with self.assertRaises(baton.HeldError) as cm:
            self.client().acquire(name)
        e = cm.exception
        self.assertEqual((e.code, e.status), ("lock_held", 409))
        self.assertIsNotNone(e.retry_after)
        self.assertTrue(0 < e.retry_after <= 60, e.retry_after)
        with self.assertRaises(baton.NotHeldError) as cm:
            self.c.get(name)
        end = lk.info.acquired_at + datetime.timedelta(seconds=60)
        self.assertEqual(cm.exception.problem.delayed_until, end)

    def test_renewal_keeps_a_short_lock_held_past_its_ttl(self):
        name = self.name()
        lk = self.c.acquire(name, ttl="2s")
        self.addCleanup(lk.release)
        self.assertFalse(lk.lost.wait(2.6), f"lost: {lk.error}")
        self.assertEqual(self.c.get(name).token, lk.token)
        self.assertGreater(lk.info.expires_at, self.c.get(name).acquired_at)

    def test_a_waiting_acquire_gets_the_lock_when_it_is_released(self):
        name = self.name()
        first = self.c.acquire(name)
        got = queue.Queue()
        other = self.client()
        threading.Thread(target=lambda: got.put(other.acquire(name, wait="10s")), daemon=True).start()
        baton_wait = lambda: any(w for w in self.c.get(name).waiters)  # noqa: E731
        from live import wait_until
        wait_until(baton_wait, what="second acquire queued")
        first.release()
        second = got.get(timeout=5)
        self.addCleanup(second.release)
        self.assertGreater(second.token, first.token)

    def test_a_wait_that_runs_out_raises_held_error(self):
        name = self.name()
        lk = self.c.acquire(name)
        self.addCleanup(lk.release)
        t = time.monotonic()
        with self.assertRaises(baton.HeldError):
            self.client().acquire(name, wait=0.5)
        self.assertGreaterEqual(time.monotonic() - t, 0.4)


class ContextManagerTest(LiveTest):
    def test_the_lock_is_released_on_exit(self):
        name = self.name()
        with self.c.lock(name, ttl="10s") as lk:
            self.assertEqual(self.c.get(name).token, lk.token)
        with self.assertRaises(baton.NotHeldError):
            self.c.get(name)

    def test_the_lock_is_released_when_the_block_raises_and_the_error_propagates(self):
        name = self.name()
        with self.assertRaises(ZeroDivisionError):
            with self.c.lock(name):
                1 / 0
        with self.assertRaises(baton.NotHeldError):
            self.c.get(name)

    def test_a_lock_lost_in_the_block_raises_on_exit(self):
        name = self.name()
        with self.assertRaises(baton.LockLostError):
            with self.c.lock(name) as lk:
                self.client().revoke(name)
                self.assertTrue(lk.lost.wait(1.0))


if __name__ == "__main__":
    unittest.main()
