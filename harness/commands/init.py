"""``harness init NAME``: a driver package to start from, already certifiable.

The skeleton is the templates under ``harness/templates/driver`` with the driver's name filled
in: a ``pyproject.toml`` registering the driver under the ``harness.plugins`` entry-point group,
and a package whose driver runs float32 ADD with numpy and validates models and requests on its
own, so that ``pip install ./NAME && harness certify --driver NAME`` passes before the vendor
changes a line; the TODOs mark where their device goes.
"""

from __future__ import annotations

import os
import re
import string
from importlib import resources
from importlib.resources.abc import Traversable

from harness.api.errors import UsageError

__all__ = ["NAME_PATTERN", "write_skeleton"]

#: A driver name that is also a distribution name, an entry-point name and (with ``-`` as ``_``
#: and ``_driver`` appended) a Python package name: lower case, starting with a letter.
NAME_PATTERN = re.compile(r"[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*")
_MAX_NAME = 40
_SUFFIX = ".tmpl"


def _checked_name(name: str) -> str:
    if len(name) > _MAX_NAME or not NAME_PATTERN.fullmatch(name):
        raise UsageError(f"{name!r} is not a driver name: lower-case letters, digits and single - or _ between them, "
                         f"starting with a letter, at most {_MAX_NAME} characters (e.g. acme or acme-npu)")
    return name


def _files(folder: Traversable, prefix: str = "") -> list[tuple[str, str]]:
    """(relative path without the template suffix, text) of every template under ``folder``."""
    found = []
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.is_dir():
            found += _files(entry, f"{prefix}{entry.name}/")
        elif entry.name.endswith(_SUFFIX):
            found.append((prefix + entry.name.removesuffix(_SUFFIX), entry.read_text(encoding="utf-8")))
    return found


def write_skeleton(name: str, directory: str | None = None) -> list[str]:
    """Write the skeleton of driver ``name`` into ``directory`` (default: ``./NAME``), which must not
    exist; the paths written.  A bad name or an existing directory is a `UsageError`."""
    name = _checked_name(name)
    target = os.path.abspath(directory or name)
    if os.path.lexists(target):
        raise UsageError(f"{directory or name} already exists: give a new directory (harness init {name} --dir PATH)")
    package = name.replace("-", "_") + "_driver"
    values = {"name": name, "package": package,
              "classname": "".join(part.capitalize() for part in re.split(r"[-_]", name))}
    templates = _files(resources.files("harness") / "templates" / "driver")
    written = []
    try:
        for relative, text in templates:
            path = os.path.join(target, relative.replace("package/", f"{package}/", 1))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "x", encoding="utf-8") as file:
                file.write(string.Template(text).substitute(values))
            written.append(path)
    except OSError as error:
        raise UsageError(f"cannot write {error.filename or target}: {error.strerror}") from None
    return written
