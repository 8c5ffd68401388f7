"""What a driver's plugins declare (custom-call targets, packed-function libraries), served by a
process of the plugins' own.

A declaration carries the plugin's code: a target's numpy reference, its case builder, its failure
message, the builds of its libraries.  The judge needs them, but importing the plugin into the
harness's process would let it change the harness's verdict.  So a long-lived process, sandboxed as
a driver's service is (`harness.tooling.sandbox`), loads only that plugin and answers questions one
connection at a time on a Unix socket the harness made:

    declarations                       every target and library, as data (case spaces included)
    case TARGET VALUES                 the target's case builder on values drawn by the harness
    reference TARGET OPERANDS OPAQUE   the target's numpy reference on the harness's operands
    error TARGET OPAQUE                the message a failing target must report
    library TARGET XLA                 the path of the target's (or its typed-FFI handler's) library
    build LIBRARY                      the path of a packed-function library

Every reply is JSON, read as untrusted data (`harness.drivers.declared_data`), field by field.  In
the harness, the targets and libraries are rebuilt as the API's own types whose callables ask this
process; a process that dies, hangs or answers out of turn is `DeclarationsFailed`, naming the
plugin: the failure of the tests that asked, never the harness's traceback or a pass.

    python -m harness.drivers.declarations --fd N --driver NAME [--plugin LABEL ...] [--sandbox DIRS]
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from typing import Any

from harness.api.custom_calls import (
    CaseSpace, Choice, CustomCallTarget, Integers, Opaque, OperandShapes, Parameter, Text, check_target,
)
from harness.api.errors import DriverLoadError, HarnessError
from harness.api.packed import PackedFunctionLibrary, check_library
from harness.drivers import declared_data
from harness.tooling.build import CompilerMissing

__all__ = ["Declarations", "DeclarationsFailed", "serve_declarations"]

_HEADER = struct.Struct("<Q")
_MAX_MESSAGE = 256 << 20
#: How long one answer may take: a build compiles native code (on a loaded machine, minutes).
_BUILD_DEADLINE_S = 600.0
_CALL_DEADLINE_S = 60.0
_START_DEADLINE_S = 120.0
_SOCKET_PATH_MAX = 107


class DeclarationsFailed(DriverLoadError):
    """The plugin's declarations process died, hung, or answered something that was refused."""


# --------------------------------------------------------------------------- framing (both sides)


def _send(sock: socket.socket, message: Any) -> None:
    data = json.dumps(message).encode("utf-8")
    sock.sendall(_HEADER.pack(len(data)) + data)


def _receive(sock: socket.socket, deadline: float) -> Any:
    """One message; ``None`` when the other side closed before sending one."""

    def exactly(count: int) -> bytes | None:
        chunks, left = [], count
        while left:
            sock.settimeout(max(0.001, deadline - time.monotonic()))
            chunk = sock.recv(min(left, 1 << 20))
            if not chunk:
                return None
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)

    header = exactly(_HEADER.size)
    if header is None:
        return None
    (size,) = _HEADER.unpack(header)
    if size > _MAX_MESSAGE:
        raise declared_data.Refused(f"a message of {size} bytes, over the limit of {_MAX_MESSAGE}")
    data = exactly(size)
    if data is None:
        return None
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise declared_data.Refused("a message that is not JSON") from None


# --------------------------------------------------------------------------- the plugin's side


def _encode_parameter(parameter: Parameter) -> dict:
    if isinstance(parameter, Choice):
        return {"choice": [declared_data.encode(v) for v in parameter.values]}
    if isinstance(parameter, Integers):
        return {"integers": [list(pair) for pair in parameter.ranges]}
    if isinstance(parameter, Opaque):
        return {"opaque": parameter.max_size}
    if isinstance(parameter, Text):
        return {"text": [list(pair) for pair in parameter.lengths]}
    return {"operand_shapes": [list(parameter.count), parameter.max_depth, parameter.max_side]}


def _describe_target(target: CustomCallTarget) -> dict:
    return {"name": target.name, "platform": target.platform, "convention": str(target.convention),
            "symbol": target.symbol, "description": target.description,
            "scratch": [list(path) for path in target.scratch], "xla_symbol": target.xla_symbol,
            "xla_opaque": bool(target.xla_opaque), "xla_library": target.xla_library is not None,
            "reference": target.reference is not None, "error": target.error is not None,
            "cases": None if target.cases is None else
            {"parameters": [[name, _encode_parameter(p)] for name, p in target.cases.parameters.items()]}}


class _Plugin:
    """The plugin's declarations, and the answer to each question about them."""

    def __init__(self, targets: list[CustomCallTarget], libraries: list[PackedFunctionLibrary]) -> None:
        self.targets = targets
        self.libraries = libraries

    def answer(self, question: Any) -> Any:
        ask = question.get("ask") if type(question) is dict else None
        if ask == "declarations":
            return {"targets": [_describe_target(t) for t in self.targets],
                    "libraries": [{"prefix": lib.prefix, "description": lib.description} for lib in self.libraries]}
        if ask == "build":
            return str(self.libraries[question["library"]].build())
        target = self.targets[question["target"]]
        if ask == "case":
            assert target.cases is not None
            values = {name: declared_data.decode(v) for name, v in question["values"].items()}
            return declared_data.encode(target.cases.build(**values))
        if ask == "reference":
            assert target.reference is not None
            operands = declared_data.decode(question["operands"])
            return declared_data.encode(target.reference(operands, declared_data.decode(question["opaque"])))
        if ask == "error":
            assert target.error is not None
            return str(target.error(declared_data.decode(question["opaque"])))
        if ask == "library":
            return target.xla_library_path() if question["xla"] else target.library_path()
        raise ValueError(f"no such question: {str(ask)[:40]!r}")


def _end_with_the_harness() -> None:
    """This process ends when the harness's does (PR_SET_PDEATHSIG): nothing of it is left behind."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    if os.getppid() == 1:
        os._exit(0)


def serve_declarations(listener: socket.socket, plugin: _Plugin) -> None:
    """Answer one question per connection until the harness stops this process."""
    while True:
        connection, _ = listener.accept()
        with connection:
            try:
                question = _receive(connection, time.monotonic() + _CALL_DEADLINE_S)
            except (OSError, declared_data.Refused):
                continue
            if question is None:
                continue
            try:
                reply: dict = {"value": plugin.answer(question)}
            except CompilerMissing as error:
                reply = {"raised": {"kind": "compiler-missing", "message": str(error)}}
            except Exception as error:  # the plugin's code raised: the harness's test reports it
                reply = {"raised": {"kind": type(error).__name__, "message": str(error)}}
            try:
                _send(connection, reply)
            except OSError:
                continue


def _load(driver: str, plugins: list[str]) -> _Plugin:
    from harness.drivers.registry import load_plugins, load_registry

    if plugins:
        registry = load_plugins(plugins)
    else:  # a driver named by module:factory or file.py:factory brings its hooks with it
        registry = load_registry(entry_points=False, repo_plugins=False)
        registry.resolve(driver)
    return _Plugin(registry.custom_call_targets(driver), registry.packed_function_libraries(driver))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="serve a driver plugin's declarations (run by the harness)")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--driver", required=True)
    parser.add_argument("--plugin", action="append", default=[])
    parser.add_argument("--sandbox", default=None, help="the directories it may write, separated by os.pathsep")
    options = parser.parse_args(argv)
    _end_with_the_harness()
    listener = socket.socket(fileno=options.fd)
    if options.sandbox is not None:  # before any of the plugin's code is imported
        from harness.tooling.sandbox import confine

        confine(options.sandbox.split(os.pathsep))
    plugin = _load(options.driver, options.plugin)
    serve_declarations(listener, plugin)
    return 0


# --------------------------------------------------------------------------- the harness's side


def _checked(value: Any, kind: type | tuple[type, ...], where: str) -> Any:
    if not isinstance(value, kind) or isinstance(value, bool) and kind is int:
        raise declared_data.Refused(f"{where} is not a {getattr(kind, '__name__', 'value of its kind')}")
    return value


def _pairs(value: Any, where: str) -> tuple[tuple[int, int], ...]:
    if type(value) is not list:
        raise declared_data.Refused(f"{where} is not a list of ranges")
    pairs = []
    for pair in value:
        if type(pair) is not list or len(pair) != 2 or any(type(v) is not int for v in pair):
            raise declared_data.Refused(f"{where} has a range that is not two integers")
        pairs.append((pair[0], pair[1]))
    return tuple(pairs)


def _decode_parameter(value: Any, where: str) -> Parameter:
    if type(value) is not dict or len(value) != 1:
        raise declared_data.Refused(f"{where} is not a parameter record")
    (kind, fields), = value.items()
    if kind == "choice":
        if type(fields) is not list:
            raise declared_data.Refused(f"{where}: a choice's values are not a list")
        return Choice(tuple(declared_data.decode(v) for v in fields))
    if kind == "integers":
        return Integers(_pairs(fields, where))
    if kind == "opaque":
        return Opaque(_checked(fields, int, f"{where}: max_size"))
    if kind == "text":
        return Text(_pairs(fields, where))
    if kind == "operand_shapes":
        if type(fields) is not list or len(fields) != 3:
            raise declared_data.Refused(f"{where}: operand shapes are not [count, max_depth, max_side]")
        count = _pairs([fields[0]], where)[0]
        return OperandShapes(count, _checked(fields[1], int, f"{where}: max_depth"),
                             _checked(fields[2], int, f"{where}: max_side"))
    raise declared_data.Refused(f"{where} is of kind {str(kind)[:40]!r}, which is no parameter kind")


_TARGET_FIELDS = {"name", "platform", "convention", "symbol", "description", "scratch", "xla_symbol", "xla_opaque",
                  "xla_library", "reference", "error", "cases"}


class Declarations:
    """The harness's handle on a plugin's declarations process: its targets and libraries as the
    API's types, each callable of them a question to the process."""

    def __init__(self, driver: str, plugins: Sequence[str], label: str, sandboxed: Callable[[list[str]], Any]) -> None:
        """Start the process for ``driver`` loading ``plugins`` (none: the driver names its own
        module); ``label`` names the plugin in every failure; ``sandboxed(writable)`` is the
        sandbox plan of the kernel (`harness.tooling.sandbox.plan`)."""
        from harness.tooling.build import cache_directory

        self.label = label
        self.failure = ""
        self._owner = os.getpid()
        self.process: subprocess.Popen | None = None
        self.scratch = tempfile.mkdtemp(prefix="driver-harness-declarations-")
        if len(self.scratch) + 20 > _SOCKET_PATH_MAX:
            os.rmdir(self.scratch)
            self.scratch = tempfile.mkdtemp(prefix="driver-harness-declarations-", dir="/tmp")
        self.address = os.path.join(self.scratch, "declarations.sock")
        self._log = tempfile.TemporaryFile(dir=self.scratch)
        build_cache = cache_directory()
        build_cache.mkdir(parents=True, exist_ok=True)
        self.sandbox = sandboxed([self.scratch, str(build_cache)])
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(self.address)
            listener.listen(16)
            command = [sys.executable, "-m", "harness.drivers.declarations", "--fd", str(listener.fileno()),
                       "--driver", driver, *(a for p in plugins for a in ("--plugin", p))]
            if self.sandbox.enforced:
                command += ["--sandbox", os.pathsep.join(self.sandbox.writable)]
            environment = {**os.environ, "TMPDIR": self.scratch}
            self.process = subprocess.Popen(
                command, pass_fds=[listener.fileno()], stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log,
                env=environment, start_new_session=True)
        except BaseException:
            listener.close()
            self.close()
            raise
        listener.close()  # the process holds it: once it is gone, a connection is refused
        try:
            self.targets, self.libraries = self._declarations()
        except BaseException:
            self.close()
            raise

    # ---------------------------------------------------------------- questions

    def _ended(self) -> str:
        code = self.process.poll() if self.process is not None and os.getpid() == self._owner else None
        how = ("is gone" if code is None else f"was killed by signal {signal.Signals(-code).name}" if code < 0
               else f"exited with code {code}")
        self._log.seek(0, os.SEEK_END)
        size = self._log.tell()
        self._log.seek(max(0, size - 4096))
        lines = [line for line in self._log.read().decode("utf-8", "replace").splitlines() if line.strip()]
        return how + (f" (its last words: {lines[-1][:300]})" if lines else "")

    def _fail(self, problem: str) -> DeclarationsFailed:
        if not self.failure:
            self.failure = f"plugin {self.label}'s declarations process {problem}"
        return DeclarationsFailed(self.failure)

    def ask(self, question: dict, deadline_s: float = _CALL_DEADLINE_S) -> Any:
        """The process's answer to ``question`` (the value, still encoded); what the plugin's code
        raised, raised here; `DeclarationsFailed` for a process that cannot answer."""
        if self.failure:
            raise DeclarationsFailed(self.failure)
        deadline = time.monotonic() + deadline_s
        try:
            with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                sock.settimeout(deadline_s)
                sock.connect(self.address)
                _send(sock, question)
                sock.shutdown(socket.SHUT_WR)
                reply = _receive(sock, deadline)
        except socket.timeout:
            self._stop()
            raise self._fail(f"gave no answer to {question['ask']!r} within {deadline_s:g} s") from None
        except declared_data.Refused as refusal:
            raise self._fail(f"answered {question['ask']!r} with something refused: {refusal}") from None
        except OSError:
            reply = None
        if reply is None:
            time.sleep(0.05)  # a process that just died: let its exit status be known
            raise self._fail(f"{self._ended()} before it answered {question['ask']!r}")
        if type(reply) is not dict or len(reply) != 1 or not ({"value", "raised"} & set(reply)):
            raise self._fail(f"answered {question['ask']!r} with something that is not a reply")
        if "raised" in reply:
            raised = reply["raised"]
            if type(raised) is not dict or set(raised) != {"kind", "message"} or \
                    type(raised["kind"]) is not str or type(raised["message"]) is not str:
                raise self._fail(f"answered {question['ask']!r} with a malformed error")
            message = f"plugin {self.label}: {raised['kind'][:100]}: {raised['message'][:4000]}"
            if raised["kind"] == "compiler-missing":
                raise CompilerMissing(raised["message"][:4000])
            raise HarnessError(message)
        return reply["value"]

    def _value(self, question: dict, decode: Callable[[Any], Any], deadline_s: float = _CALL_DEADLINE_S) -> Any:
        try:
            return decode(self.ask(question, deadline_s))
        except declared_data.Refused as refusal:
            raise self._fail(f"answered {question['ask']!r} with something refused: {refusal}") from None

    def _text(self, value: Any) -> str:
        if type(value) is not str or len(value) > 100_000:
            raise declared_data.Refused("not a string")
        return value

    def _case(self, index: int, **values: Any) -> Any:
        try:
            encoded = {name: declared_data.encode(v) for name, v in values.items()}
        except declared_data.Unencodable as error:
            raise self._fail(f"cannot be sent the values drawn for it: {error}") from None
        return self._value({"ask": "case", "target": index, "values": encoded}, declared_data.decode_case)

    def _reference(self, index: int, operands: tuple, opaque: bytes) -> Any:
        question = {"ask": "reference", "target": index, "operands": declared_data.encode(tuple(operands)),
                    "opaque": declared_data.encode(bytes(opaque))}
        return self._value(question, declared_data.decode)

    def _error(self, index: int, opaque: bytes) -> str:
        return self._value({"ask": "error", "target": index, "opaque": declared_data.encode(bytes(opaque))}, self._text)

    def _library(self, index: int, xla: bool) -> str:
        return self._value({"ask": "library", "target": index, "xla": xla}, self._text, _BUILD_DEADLINE_S)

    def _build(self, index: int) -> str:
        return self._value({"ask": "build", "library": index}, self._text, _BUILD_DEADLINE_S)

    # ---------------------------------------------------------------- the declarations, rebuilt

    def _declarations(self) -> tuple[list[CustomCallTarget], list[PackedFunctionLibrary]]:
        reply = self._value({"ask": "declarations"}, lambda value: value, _START_DEADLINE_S)
        try:
            if type(reply) is not dict or set(reply) != {"targets", "libraries"} or \
                    type(reply["targets"]) is not list or type(reply["libraries"]) is not list:
                raise declared_data.Refused("the declarations are not a record of targets and libraries")
            targets = [self._target(i, value) for i, value in enumerate(reply["targets"])]
            libraries = [self._packed(i, value) for i, value in enumerate(reply["libraries"])]
            for item in targets:
                check_target(item, self.label)
            for library in libraries:
                check_library(library, self.label)
        except declared_data.Refused as refusal:
            raise self._fail(f"declared something refused: {refusal}") from None
        except HarnessError as error:
            raise self._fail(f"declared something invalid: {error}") from None
        return targets, libraries

    def _target(self, index: int, value: Any) -> CustomCallTarget:
        if type(value) is not dict or set(value) != _TARGET_FIELDS:
            raise declared_data.Refused(f"target {index} is not a record of {', '.join(sorted(_TARGET_FIELDS))}")
        where = f"target {str(value.get('name'))[:80]!r}"
        text = {name: self._field_text(value[name], f"{where}: {name}")
                for name in ("name", "platform", "convention", "symbol", "description", "xla_symbol")}
        flags = {name: value[name] for name in ("xla_opaque", "xla_library", "reference", "error")}
        if any(type(flag) is not bool for flag in flags.values()):
            raise declared_data.Refused(f"{where} has a flag that is not true or false")
        if type(value["scratch"]) is not list or any(
                type(path) is not list or any(type(i) is not int or i < 0 for i in path) for path in value["scratch"]):
            raise declared_data.Refused(f"{where}: scratch is not a list of leaf paths")
        cases = None
        if value["cases"] is not None:
            if type(value["cases"]) is not dict or set(value["cases"]) != {"parameters"} or \
                    type(value["cases"]["parameters"]) is not list:
                raise declared_data.Refused(f"{where}: cases is not a record of parameters")
            parameters: dict[str, Parameter] = {}
            for item in value["cases"]["parameters"]:
                if type(item) is not list or len(item) != 2:
                    raise declared_data.Refused(f"{where}: a parameter is not [name, parameter]")
                name = self._field_text(item[0], f"{where}: a parameter's name")
                parameters[name] = _decode_parameter(item[1], f"{where}: parameter {name[:80]!r}")
            cases = CaseSpace(parameters, functools.partial(self._case, index))
        return CustomCallTarget(
            text["name"], text["platform"], text["convention"], functools.partial(self._library, index, False),
            text["symbol"], functools.partial(self._reference, index) if flags["reference"] else None, cases,
            functools.partial(self._error, index) if flags["error"] else None, text["description"],
            tuple(tuple(path) for path in value["scratch"]), functools.partial(self._library, index, True)
            if flags["xla_library"] else None, text["xla_symbol"], flags["xla_opaque"])

    def _packed(self, index: int, value: Any) -> PackedFunctionLibrary:
        if type(value) is not dict or set(value) != {"prefix", "description"}:
            raise declared_data.Refused(f"library {index} is not a record of prefix and description")
        return PackedFunctionLibrary(self._field_text(value["prefix"], f"library {index}: prefix"),
                                     functools.partial(self._build, index),
                                     self._field_text(value["description"], f"library {index}: description"))

    @staticmethod
    def _field_text(value: Any, where: str) -> str:
        if type(value) is not str or len(value) > 20_000:
            raise declared_data.Refused(f"{where} is not a string of at most 20000 characters")
        return value

    # ---------------------------------------------------------------- the end

    def _stop(self) -> None:
        if self.process is not None and os.getpid() == self._owner:
            if self.process.poll() is None:
                self.process.kill()
            self.process.wait()

    def close(self) -> None:
        """Stop the process and remove its directory (only in the process that started it: a
        test forked from it must not end the run's process)."""
        if os.getpid() != self._owner:
            return
        self._stop()
        self.process = None
        self._log.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
