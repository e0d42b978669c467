"""The bearer token: one given as is, or the content of a file.

The tokens kept in files (a Kubernetes projected service-account token, a
JWT that a sidecar renews) are replaced in place before they expire, so
the file is read again after TOKEN_FILE_MAX_AGE, and when a node refuses
the token: a client that read it once would be refused from its expiry on.
"""

from __future__ import annotations

import threading
import time

# How long, in seconds, the client sends a token read from its token file
# before it reads the file again. A node's 401 makes it read the file at once.
TOKEN_FILE_MAX_AGE = 60.0


class Bearer:
    """token, or the content of file when token is empty."""

    def __init__(self, token: str = "", file: str | None = None):
        self.file = None if token else file or None
        self._tok = token
        self._mu = threading.Lock()
        self._read = 0.0  # time.monotonic() of the file's last read
        if self.file:
            # Construction fails on a file that cannot be read or is empty.
            self._tok, self._read = self._load(), time.monotonic()

    def token(self) -> str:
        """The token to send now, "" for none."""
        if not self.file:
            return self._tok
        with self._mu:
            if time.monotonic() - self._read >= TOKEN_FILE_MAX_AGE:
                self._reload_locked()
            return self._tok

    def reload(self) -> bool:
        """Reads the file again at once, and reports whether the token
        changed: a request a node refused with 401 is then worth sending
        again."""
        if not self.file:
            return False
        with self._mu:
            old = self._tok
            self._reload_locked()
            return self._tok != old

    def _reload_locked(self) -> None:
        # A read that fails or finds the file empty (one being replaced by
        # a writer that does not rename) keeps the last token until the
        # next read; it is not tried again before TOKEN_FILE_MAX_AGE, so a
        # file gone for good costs a read a minute, not one a request.
        self._read = time.monotonic()
        try:
            self._tok = self._load()
        except (OSError, ValueError):
            pass

    def _load(self) -> str:
        with open(self.file, encoding="utf-8") as f:
            tok = f.read().strip()
        if not tok:
            raise ValueError(f"baton client: token file {self.file} is empty")
        return tok
