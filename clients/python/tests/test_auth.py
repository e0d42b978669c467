"""A node run with --auth-file: the client sends the bearer token from
its argument, BATON_AUTH_TOKEN or BATON_TOKEN_FILE, on calls and on the
event stream that watches its locks, and reads a token file again when
the node refuses its token."""

import os
import sys
import tempfile
import unittest
from unittest import mock

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from live import Front, LiveTest, baton, server  # noqa: E402

WRITE, READ, ADMIN = "python-client-write-token", "python-client-read-token", "python-client-admin-token"
UNKNOWN = "python-client-unknown-token"
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


class TokenFileTest(LiveTest):
    """A token replaced in its file (a JWT renewed before it expires) is
    read again when a node refuses the one the client sends."""

    def setUp(self):
        self.addr = server(AUTH).addr
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.file = os.path.join(d.name, "token")
        self.front = Front(self.addr, lambda n, m, p: "forward")
        self.addCleanup(self.front.close)

    def put(self, token):
        # As a renewer does: a new file renamed over the old one.
        with open(self.file + ".new", "w") as f:
            f.write(token + "\n")
        os.replace(self.file + ".new", self.file)

    def test_the_call_a_node_refused_is_sent_again_once_with_the_new_token(self):
        name = self.name()
        self.put(UNKNOWN)
        c = self.client(self.front.url, token_file=self.file)
        with self.assertRaises(baton.UnauthorizedError) as cm:
            c.acquire(name)
        self.assertEqual(cm.exception.status, 401)
        # The file read again after that 401 held the same token: sent once.
        self.assertEqual(self.front.count("POST", "/v1/locks/"), 1)
        self.put(WRITE)
        lk = c.acquire(name)
        # Refused with the token read before, then sent again, though it
        # is an acquire: a 401 did nothing.
        self.assertEqual(self.front.count("POST", "/v1/locks/"), 3)
        self.assertEqual(c.get(name).token, lk.token)
        lk.release()
        with self.assertRaises(baton.NotHeldError):
            c.get(name)

    def test_an_event_stream_refused_with_401_connects_again_with_the_new_token(self):
        name = self.name()
        writer = self.client(token=WRITE)
        writer.acquire(name).release()
        self.put(UNKNOWN)
        c = self.client(self.front.url, token_file=self.file)
        self.put(WRITE)
        # since is given, so the stream's first request is its own, with
        # the token read at construction.
        with c.events(lock=name, since=0) as stream:
            self.assertEqual([next(stream).type, next(stream).type], ["acquired", "released"])
        self.assertEqual(self.front.count("GET", "/v1/events"), 2)


if __name__ == "__main__":
    unittest.main()
