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
