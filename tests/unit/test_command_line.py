"""The ``harness`` command line explains itself: every option of every command has its help."""

from __future__ import annotations

import argparse

from harness.commands.cli import command_line


def _commands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    # argparse keeps its subcommands in the one _SubParsersAction of the parser's actions
    subcommands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(subcommands.choices)


def test_every_option_of_every_command_has_help() -> None:
    commands = _commands(command_line())
    assert {"list", "run", "score", "certify", "cts", "fuzz", "replay"} <= set(commands)
    unexplained = [f"harness {name} {action.option_strings[-1]}"
                   for name, command in commands.items() for action in command._actions
                   if action.option_strings and not action.help]
    assert not unexplained, f"options with no help text: {unexplained}"


def test_list_says_what_the_catalog_knows_and_when_capabilities_are_asked(monkeypatch, capsys) -> None:
    """`harness list` imports no driver: it shows what the plugins declare, and says that a driver
    whose plugin declares no capabilities is asked for them when its service starts."""
    from harness.api.hal import Capabilities, OperationType
    from harness.commands.cli import _list
    from harness.drivers import catalog

    declared = Capabilities(frozenset(), False, frozenset({OperationType.ADD}), frozenset(), False)
    entries = {"asked": catalog.DriverEntry("asked", "asks at start", "plugin-a"),
               "declaring": catalog.DriverEntry("declaring", "declares", "plugin-b", declared,
                                                declares=frozenset({"custom_call_targets"})),
               "refused": catalog.DriverEntry("refused", "broken", "plugin-c", declaration_error="bad field")}
    monkeypatch.setattr(catalog, "load_catalog", lambda driver="": catalog.Catalog(entries, {"plugin-d": "exited"}))
    assert _list(argparse.Namespace(all=False)) == 0
    out, err = capsys.readouterr()
    blocks = {line.split(":")[0]: line for line in out.split("\n") if line and not line.startswith(" ")}
    assert set(blocks) >= {"asked", "declaring", "refused"}
    lines = out.splitlines()
    after = {name: lines[lines.index(blocks[name]) + 1].strip() for name in ("asked", "declaring", "refused")}
    assert after["asked"] == "capabilities: not declared by its plugin; a run asks the driver when its service starts"
    assert after["declaring"].startswith("declared capabilities: ") and "ADD" in after["declaring"]
    assert "declares custom-call targets" in out
    assert after["refused"] == "declarations refused: bad field"
    assert err.strip() == "plugin plugin-d failed to load: exited"


def test_list_keeps_the_drivers_made_to_measure_the_harness_apart(monkeypatch, capsys) -> None:
    """Seeded bugs, deep bugs and correct variants are shown only with --all: a vendor's list is
    the drivers to use."""
    from harness.commands.cli import _list
    from harness.drivers import catalog

    entries = {"product": catalog.DriverEntry("product", "a driver", "plugin-a"),
               "mutant-x": catalog.DriverEntry("mutant-x", "a seeded bug", "plugin-b", breaks="OPS-1"),
               "deep-y": catalog.DriverEntry("deep-y", "a deep bug", "plugin-c", deep_bug=True),
               "variant-z": catalog.DriverEntry("variant-z", "a variant", "plugin-d", exercises="CHOICE-1")}
    monkeypatch.setattr(catalog, "load_catalog", lambda driver="": catalog.Catalog(entries, {}))
    assert _list(argparse.Namespace(all=False)) == 0
    shown = {line.split(":")[0] for line in capsys.readouterr().out.splitlines() if ": " in line}
    assert "product" in shown and not shown & {"mutant-x", "deep-y", "variant-z"}
    assert _list(argparse.Namespace(all=True)) == 0
    shown = {line.split(":")[0] for line in capsys.readouterr().out.splitlines() if ": " in line}
    assert shown >= {"product", "mutant-x", "deep-y", "variant-z"}
