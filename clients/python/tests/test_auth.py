"""A node run with --auth-file: the client sends the bearer token from
its argument, BATON_AUTH_TOKEN or BATON_TOKEN_FILE, on calls and on the
event stream that watches its locks."""

import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import LiveTest, baton, server  # noqa: E402

WRITE, READ, ADMIN = "python-client-write-token", "python-client-read-token", "python-client-admin-token"
# A write token scoped to the names under team-a.
TEAM_A = "python-client-team-a-token"
AUTH = f"write {WRITE}\nread {READ}\nadmin {ADMIN}\nwrite {TEAM_A} team-a.\n"
CLEAN = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}


class AuthTest(LiveTest):
    def setUp(self):
        self.addr = server(AUTH).addr

    def test_without_a_token_calls_are_unauthorized(self):
        with mock.patch.dict(os.environ, CLEAN, clear=True):
            with self.assertRaises(baton.UnauthorizedError) as cm:
                self.client().acquire(self.name())
        self.assertEqual(cm.exception.status, 401)

    def test_a_read_token_may_not_acquire(self):
        with self.assertRaises(baton.ForbiddenError):
            self.client(token=READ).acquire(self.name())

    def test_a_token_scoped_to_a_prefix_acts_and_lists_under_it_only(self):
        c = self.client(token=WRITE)
        for name in ("team-a.x", "team-b.x"):
            lk = c.acquire(name)
            self.addCleanup(lk.release)
        scoped = self.client(token=TEAM_A)
        with self.assertRaises(baton.ForbiddenError) as cm:
            scoped.acquire("team-b.x")
        e = cm.exception
        self.assertEqual((e.status, e.code), (403, "forbidden"))
        self.assertEqual(e.role, "write")
        self.assertEqual(e.prefixes, ["team-a."])
        locks, _ = scoped.locks()
        names = [lk.name for lk in locks]
        self.assertIn("team-a.x", names)
        self.assertEqual([n for n in names if not n.startswith("team-a.")], [], names)

    def test_the_token_from_the_environment_holds_and_watches_a_lock(self):
        with tempfile.NamedTemporaryFile("w") as f:
            f.write(WRITE + "\n")
            f.flush()
            with mock.patch.dict(os.environ, {**CLEAN, "BATON_ADDR": self.addr, "BATON_TOKEN_FILE": f.name}, clear=True):
                c = baton.Client()
            self.addCleanup(c.close)
        name = self.name()
        lk = c.acquire(name)
        with mock.patch.dict(os.environ, {**CLEAN, "BATON_AUTH_TOKEN": ADMIN}, clear=True):
            baton.Client(self.addr).revoke(name)
        # The revoke reaches lost through the event stream, which carried
        # the token too (renewals would take a third of the 30 s TTL).
        self.assertTrue(lk.lost.wait(1.0))


if __name__ == "__main__":
    unittest.main()
