"""Every problem code of problem/problem.go is known to this client, with
its status and retry class, and has its exception class."""

import http
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import baton  # noqa: E402
from baton import _problems  # noqa: E402

PROBLEM_GO = Path(__file__).resolve().parents[3] / "problem" / "problem.go"


def go_status(s: str) -> int:
    """http.StatusRequestEntityTooLarge -> 413; a literal stays itself."""
    if s.isdigit():
        return int(s)
    name = re.sub(r"(?<!^)(?=[A-Z])", "_", s.removeprefix("http.Status")).upper()
    # Go's names, where Python (3.13) renamed its constant.
    renamed = {"REQUEST_ENTITY_TOO_LARGE": 413, "UNPROCESSABLE_ENTITY": 422}
    return http.HTTPStatus[name].value if name in http.HTTPStatus.__members__ else renamed[name]


def go_table():
    """The codes of problem.go: its constants, and its table's entries
    as (code, status, title, retry)."""
    src = PROBLEM_GO.read_text()
    consts = dict(re.findall(r"^\s*(\w+)\s+Code\s*=\s*\"([^\"]+)\"", src, re.M))
    body = src[src.index("var table = []Info{"):]
    body = body[:body.index("\n}\n")]
    rows = re.findall(r"\{(\w+),\s*([\w.]+),\s*\"([^\"]*)\",\s*(Final|Later|Elsewhere),\s*\w+\}", body)
    return consts, [(consts[c], go_status(st), title, retry.lower()) for c, st, title, retry in rows]


class ProblemTableTest(unittest.TestCase):
    def test_every_code_of_problem_go_is_known_with_its_status_and_retry(self):
        consts, rows = go_table()
        self.assertGreater(len(consts), 30, "problem.go parsed to too few constants")
        self.assertEqual(len(rows), len(consts), "a constant of problem.go has no table row, or the parser missed one")
        for code, status, title, retry in rows:
            with self.subTest(code=code):
                self.assertIn(code, _problems.BY_CODE, f"code {code} of problem.go is missing from baton/_problems.py")
                self.assertEqual(_problems.BY_CODE[code], (status, title, retry))
        self.assertEqual(set(_problems.BY_CODE), {r[0] for r in rows}, "baton/_problems.py and problem.go list different codes")

    def test_every_code_has_an_exception_class_of_its_own(self):
        for code, status, _, retry in _problems.TABLE:
            with self.subTest(code=code):
                cls = baton.CLASSES[code]
                self.assertEqual(cls.code, code)
                self.assertTrue(issubclass(cls, baton.BatonError))
                self.assertIs(getattr(baton, cls.__name__), cls)
                if status >= 500 or retry == _problems.ELSEWHERE:
                    self.assertTrue(issubclass(cls, baton.UnavailableError))

    def test_the_named_classes_match_their_codes(self):
        for cls, code in [(baton.HeldError, "lock_held"), (baton.NotHeldError, "not_held"),
                          (baton.TokenMismatchError, "token_mismatch"), (baton.StaleTokenError, "stale_token"),
                          (baton.UnavailableError, "unavailable"), (baton.ElectionHeldError, "election_held"),
                          (baton.NoLeaderError, "no_leader"), (baton.NotHolderError, "not_holder"),
                          (baton.SessionNotFoundError, "session_not_found")]:
            self.assertIs(baton.CLASSES[code], cls)

    def test_an_answer_without_a_known_code_is_classed_by_its_status(self):
        self.assertIs(baton.error_class(None, 401), baton.UnauthorizedError)
        self.assertIs(baton.error_class(None, 403), baton.ForbiddenError)
        self.assertIs(baton.error_class("from_a_newer_server", 502), baton.UnavailableError)
        self.assertIs(baton.error_class("from_a_newer_server", 409), baton.BatonError)
        both = baton.error_class("too_many_streams", 503)
        self.assertTrue(issubclass(both, baton.TooManyStreamsError) and issubclass(both, baton.UnavailableError))


class DecodeErrorTest(unittest.TestCase):
    def decode(self, status, ctype, body, **headers):
        from baton._http import decode_error
        return decode_error(status, "Reason", {"Content-Type": ctype, **headers}, body)

    def test_a_problem_document_gives_its_class_members_and_retry_after(self):
        e = self.decode(409, "application/problem+json",
                        b'{"type":"urn:baton:problem:lock_held","title":"Lock held","status":409,"code":"lock_held",'
                        b'"detail":"held","retry_after":3,"holder":{"name":"x","token":7,"ttl":"30s"}}')
        self.assertIsInstance(e, baton.HeldError)
        self.assertEqual((e.status, e.code, e.detail, e.retry_after), (409, "lock_held", "held", 3.0))
        self.assertEqual((e.holder.token, e.holder.ttl), (7, 30.0))

    def test_a_forbidden_problem_gives_its_role_and_prefixes(self):
        e = self.decode(403, "application/problem+json",
                        b'{"type":"urn:baton:problem:forbidden","title":"Forbidden","status":403,"code":"forbidden",'
                        b'"detail":"d","role":"write","prefixes":["team-a.","shared."]}')
        self.assertIsInstance(e, baton.ForbiddenError)
        self.assertEqual((e.role, e.prefixes, e.quota), ("write", ["team-a.", "shared."], None))

    def test_a_quota_exceeded_problem_gives_its_quota_limit_and_retry_after(self):
        e = self.decode(429, "application/problem+json",
                        b'{"type":"urn:baton:problem:quota_exceeded","title":"Quota exceeded","status":429,'
                        b'"code":"quota_exceeded","detail":"d","quota":"holds","limit":10,"retry_after":1}')
        self.assertIsInstance(e, baton.QuotaExceededError)
        self.assertEqual((e.status, e.code, e.quota, e.limit, e.retry_after), (429, "quota_exceeded", "holds", 10, 1.0))
        self.assertEqual((e.role, e.prefixes), (None, []))
        self.assertEqual(_problems.BY_CODE["quota_exceeded"][2], _problems.LATER)

    def test_the_retry_after_header_wins_over_the_body(self):
        e = self.decode(503, "application/problem+json", b'{"code":"unavailable","retry_after":9}', **{"Retry-After": "2"})
        self.assertEqual(e.retry_after, 2.0)

    def test_a_proxys_page_is_quoted_and_a_5xx_is_unavailable(self):
        e = self.decode(502, "text/html", b"<html>bad gateway</html>")
        self.assertIsInstance(e, baton.UnavailableError)
        self.assertEqual(e.detail, "<html>bad gateway</html>")

    def test_a_member_of_an_unexpected_type_keeps_the_code(self):
        e = self.decode(409, "application/json", b'{"code":"lock_held","detail":"d","holder":{"ttl":"forever"}}')
        self.assertIsInstance(e, baton.HeldError)
        self.assertEqual(e.detail, "d")


if __name__ == "__main__":
    unittest.main()
