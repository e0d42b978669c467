"""Sessions bound to a stream against a live baton: one lives while its
stream is held, close() ends it and its holds at once, and a holder cut
off from every node fails over about a grace later, not a TTL later."""

import os
import queue
import sys
import threading
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import Front, LiveTest, baton, wait_until  # noqa: E402


class StreamSessionTest(LiveTest):
    def test_a_stream_session_outlives_its_ttl_while_held_and_close_ends_its_holds(self):
        with self.c.open_stream_session(owner="holder", grace="1s") as ss:
            self.assertEqual((ss.info.bind, ss.info.grace), ("stream", 1.0))
            name = self.name()
            # acquire_once: nothing but the stream keeps the session alive.
            self.c.acquire_once(name, session=ss.id)
            past = time.monotonic() + ss.info.ttl + 1.0

            def outlived():
                self.assertEqual(self.c.get_session(ss.id).id, ss.id, "the session while its stream is held")
                return time.monotonic() > past

            wait_until(outlived, timeout=3 * ss.info.ttl, what="the session outlives its lease's TTL")
        self.assertTrue(ss.done.is_set())
        self.assertIsNone(ss.err)
        with self.assertRaises(baton.NotHeldError):
            self.c.get(name)
        with self.assertRaises(baton.SessionNotFoundError):
            self.c.get_session(ss.id)
        ss.close()  # again: nothing

    def test_a_session_deleted_elsewhere_ends_with_session_not_found(self):
        ss = self.c.open_stream_session(grace="1s")
        self.addCleanup(ss.close)
        self.client().delete_session(ss.id)
        self.assertTrue(ss.done.wait(5), "done not set once the session was deleted")
        self.assertIsInstance(ss.err, baton.SessionNotFoundError)

    def test_a_holder_cut_off_fails_over_within_its_grace(self):
        cut = threading.Event()
        front = Front(self.addr, lambda n, method, path: ("status", 503, None) if cut.is_set() else "forward")
        self.addCleanup(front.close)
        holder = self.client(front.url, max_retries=-1)
        grace = 1.0
        ss = holder.open_stream_session(owner="holder", grace=grace)
        self.addCleanup(ss.close)
        name = self.name()
        lk = holder.acquire(name, session=ss.id)
        self.addCleanup(lk._hold.release_quietly)
        granted = queue.Queue()

        def wait_in_line():
            nxt = self.c.acquire(name, owner="next", wait="30s", ttl="30s")
            granted.put(time.monotonic())
            nxt.release()

        threading.Thread(target=wait_in_line, daemon=True).start()
        wait_until(lambda: len(self.c.get(name).waiters) == 1, timeout=10, what="the waiter in line")
        cut.set()
        front.cut_streams()
        at = time.monotonic()
        took = granted.get(timeout=20) - at
        self.assertGreaterEqual(took, grace, "granted before the holder's grace ran out")
        self.assertLessEqual(took, grace + 1.5, f"granted {took:.2f}s after the holder was cut off")
        cut.clear()
        self.assertTrue(ss.done.wait(15), "done not set once the session ended")
        self.assertIsInstance(ss.err, baton.SessionNotFoundError)


if __name__ == "__main__":
    unittest.main()
