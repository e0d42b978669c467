"""The bearer token without a server: a token file is read again after
TOKEN_FILE_MAX_AGE and on reload; a read that fails keeps the last token;
a token given as a value never changes."""

import os
import sys
import tempfile
import unittest
from pathlib import Path
from unittest import mock

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import baton  # noqa: E402
from baton._bearer import Bearer  # noqa: E402

CLEAN = {k: v for k, v in os.environ.items() if not k.startswith("BATON_")}


class BearerTest(unittest.TestCase):
    def setUp(self):
        d = tempfile.TemporaryDirectory()
        self.addCleanup(d.cleanup)
        self.file = os.path.join(d.name, "token")

    def put(self, s):
        # As a renewer does: a new file renamed over the old one.
        with open(self.file + ".new", "w") as f:
            f.write(s)
        os.replace(self.file + ".new", self.file)

    def test_a_token_file_is_read_again_when_old_and_a_failed_read_keeps_the_last_token(self):
        self.put("one\n")
        b = Bearer("", self.file)

        def age():
            # As if the last read were TOKEN_FILE_MAX_AGE ago, without sleeping.
            with b._mu:
                b._read -= baton.TOKEN_FILE_MAX_AGE

        self.put("two")
        self.assertEqual(b.token(), "one", "before TOKEN_FILE_MAX_AGE")
        age()
        self.assertEqual(b.token(), "two", "after TOKEN_FILE_MAX_AGE")
        self.put(" \n")
        age()
        self.assertEqual(b.token(), "two", "an empty file keeps the last token")
        os.remove(self.file)
        age()
        self.assertEqual(b.token(), "two", "a file gone keeps the last token")
        # The failed read counts as a read: none again before the max age.
        self.put("three")
        self.assertEqual(b.token(), "two", "read again before TOKEN_FILE_MAX_AGE")
        age()
        self.assertEqual(b.token(), "three")

    def test_reload_reads_at_once_and_reports_a_change(self):
        self.put("one")
        b = Bearer("", self.file)
        self.assertFalse(b.reload(), "the same token")
        os.remove(self.file)
        self.assertFalse(b.reload(), "a file gone")
        self.assertEqual(b.token(), "one")
        self.put("")
        self.assertFalse(b.reload(), "an empty file")
        self.assertEqual(b.token(), "one")
        self.put("two\n")
        self.assertTrue(b.reload())
        self.assertEqual(b.token(), "two")

    def test_a_token_given_as_a_value_never_changes(self):
        self.put("from-file")
        b = Bearer("as-is", self.file)
        b._read -= baton.TOKEN_FILE_MAX_AGE
        self.assertFalse(b.reload())
        self.assertEqual(b.token(), "as-is")
        self.assertEqual(Bearer("", None).token(), "")
        self.assertFalse(Bearer("", None).reload())

    def test_a_token_file_that_cannot_be_read_or_is_empty_fails_construction(self):
        self.assertRaises(OSError, Bearer, "", self.file)
        self.put(" \n")
        self.assertRaises(ValueError, Bearer, "", self.file)
        with mock.patch.dict(os.environ, CLEAN, clear=True):
            self.assertRaises(OSError, baton.Client, "127.0.0.1:9", token_file=self.file + ".gone")
            self.assertRaises(ValueError, baton.Client, "127.0.0.1:9", token_file=self.file)


if __name__ == "__main__":
    unittest.main()
