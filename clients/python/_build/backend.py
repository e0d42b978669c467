"""A PEP 517 build backend of the standard library only.

The package has no dependencies, to run or to build: this backend lets
`pip install ./clients/python` work without fetching setuptools or wheel,
on a machine with no access to a package index. It builds a pure-Python
wheel of the baton package (and an sdist of this directory), with the
name, version and metadata of pyproject.toml.
"""

import base64
import hashlib
import io
import os
import re
import tarfile
import tomllib
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "baton"


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        return tomllib.load(f)["project"]


def _metadata() -> str:
    p = _project()
    lines = ["Metadata-Version: 2.1", f"Name: {p['name']}", f"Version: {p['version']}",
             f"Summary: {p.get('description', '')}", f"Requires-Python: {p.get('requires-python', '')}"]
    if "text" in p.get("license", {}):
        lines.append(f"License: {p['license']['text']}")
    lines += [f"Classifier: {c}" for c in p.get("classifiers", [])]
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(ROOT, p.get("readme", "README.md")), encoding="utf-8") as f:
        return "\n".join(lines) + "\n\n" + f.read()


def _filename_name() -> str:
    """The project's name as file names spell it: runs of -_. as one _,
    lower case (the wheel and sdist specifications)."""
    return re.sub(r"[-_.]+", "_", _project()["name"]).lower()


def _dist_info() -> str:
    return f"{_filename_name()}-{_project()['version']}.dist-info"


def _files():
    """The package's source files, as (path in the wheel, bytes)."""
    for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, PACKAGE)):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for name in sorted(filenames):
            if name.endswith(".py"):
                full = os.path.join(dirpath, name)
                with open(full, "rb") as f:
                    yield os.path.relpath(full, ROOT).replace(os.sep, "/"), f.read()


def _write_wheel(wheel_directory, extra=()):
    p = _project()
    name = f"{_filename_name()}-{p['version']}-py3-none-any.whl"
    di = _dist_info()
    entries = list(extra) or list(_files())
    entries += [(f"{di}/METADATA", _metadata().encode()),
                (f"{di}/WHEEL", b"Wheel-Version: 1.0\nGenerator: baton-build\nRoot-Is-Purelib: true\nTag: py3-none-any\n")]
    record = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            z.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        record.append(f"{di}/RECORD,,")
        z.writestr(f"{di}/RECORD", "\n".join(record) + "\n")
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _write_wheel(wheel_directory)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file puts this directory on the path: edits take effect at once.
    return _write_wheel(wheel_directory, [(f"__editable__.{PACKAGE}.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = f"{_filename_name()}-{p['version']}"
    with tarfile.open(os.path.join(sdist_directory, base + ".tar.gz"), "w:gz") as t:
        for rel in ["pyproject.toml", "README.md", "_build/backend.py"] + [f for f, _ in _files()]:
            t.add(os.path.join(ROOT, rel), arcname=f"{base}/{rel}")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        data = _metadata().encode()
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    return base + ".tar.gz"
