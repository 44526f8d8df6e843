"""The ``dprisk`` argument parsers: one-line errors with exit status 2, and suggestions.

:class:`Parser` (a subcommand's parser) and :class:`TopParser` (``dprisk`` itself) print
every error as one stderr line and exit with status 2. The line helps to fix the mistake:

* a mistyped option (``dprisk posterior --x1-str 3``) is reported by the subcommand's own
  parser -- its usage, not the top-level one -- with the nearest option of that subcommand
  (:func:`nearest`: ``difflib.get_close_matches``, similarity ratio >= :data:`CUTOFF`), e.g.
  ``unrecognized arguments: --x1-str 3; did you mean --x1-star?``;
* a mistyped subcommand (``dprisk postrior``) gets the nearest subcommand
  (``invalid choice: 'postrior'; did you mean posterior?``) and the usage listing them all.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import sys

__all__ = ["CUTOFF", "Parser", "TopParser", "nearest", "option_suggestion", "subparser"]

EXIT_BAD_INPUT = 2
#: Smallest ``difflib`` similarity ratio of a suggestion (difflib's own default).
CUTOFF = 0.6


def nearest(word: str, choices) -> str | None:
    """The entry of ``choices`` closest to ``word`` (difflib ratio >= :data:`CUTOFF`), or None."""
    matches = difflib.get_close_matches(word, list(choices), n=1, cutoff=CUTOFF)
    return matches[0] if matches else None


def _option_strings(parser: argparse.ArgumentParser) -> list[str]:
    """The long options of ``parser`` (``--x1-star``, ...), ``--help`` included."""
    return [s for action in parser._actions for s in action.option_strings if s.startswith("--")]


def option_suggestion(parser: argparse.ArgumentParser, extras: list[str]) -> str:
    """``"; did you mean --x1-star?"`` for the first unknown option of ``extras`` ("" if none)."""
    for word in extras:
        if word.startswith("-"):
            guess = nearest(word.split("=", 1)[0], _option_strings(parser))
            if guess is not None:
                return f"; did you mean {guess}?"
    return ""


def subparser(parser: argparse.ArgumentParser, name: str) -> argparse.ArgumentParser | None:
    """The parser of subcommand ``name`` registered on ``parser`` (None if there is none)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices.get(name)
    return None


def _one_line_usage(parser: argparse.ArgumentParser) -> str:
    return " ".join(parser.format_usage().split())


class Parser(argparse.ArgumentParser):
    """ArgumentParser whose errors are one line on stderr and exit status 2."""

    def error(self, message: str):  # pragma: no cover - exercised through the CLI tests
        """Exit with status 2 and one line on stderr."""
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: error: {message}\n")

    def print_help(self, file=None):
        """Print the help and flush it, so that a failed write (a full disk) raises here.

        (argparse's own ``print_help`` ignores an ``OSError`` of the write: ``dprisk help >
        /dev/full`` exited 0 with nothing written.)

        Raises
        ------
        OSError
            The write failed; standard output is then replaced by ``os.devnull`` so that the
            interpreter's final flush does not fail again (the caller reports one line).
        """
        stream = sys.stdout if file is None else file
        try:
            stream.write(self.format_help())
            stream.flush()
        except OSError:
            if stream is sys.stdout:
                sys.stdout = open(os.devnull, "w")  # lives to the end of the process
            raise

    def unknown_options(self, words: list[str]) -> list[str]:
        """The words of ``words`` that look like long options this parser does not know.

        Checked before parsing, so that a mistyped option is reported even when a required
        option is missing too; an unambiguous prefix counts as known (argparse's
        abbreviations). Words after a bare ``--`` are values.
        """
        known = _option_strings(self)
        unknown = []
        for word in words:
            if word == "--":
                break
            if not word.startswith("--"):
                continue
            name = word.split("=", 1)[0]
            matches = [s for s in known if s == name or (self.allow_abbrev and s.startswith(name))]
            if not matches:
                unknown.append(word)
        return unknown

    def unrecognized(self, extras: list[str]):
        """Refuse unknown arguments: one line with the nearest option and this parser's usage."""
        self.error(f"unrecognized arguments: {' '.join(extras)}"
                   f"{option_suggestion(self, extras)}; {_one_line_usage(self)} "
                   f"({self.prog} --help shows every option)")


class TopParser(Parser):
    """The ``dprisk`` parser: bare ``dprisk`` prints, on its one line, usage and commands."""

    def error(self, message: str):  # pragma: no cover - exercised through the CLI tests
        """Exit with status 2; the line also holds the usage, which lists the subcommands."""
        match = re.search(r"invalid choice: '([^']*)'", message)
        if match:
            guess = nearest(match[1], self._commands())
            if guess is not None:
                message = f"{message}; did you mean {guess}?"
        super().error(f"{message}; {_one_line_usage(self)} "
                      "(dprisk COMMAND --help or dprisk help COMMAND shows a command's options)")

    def _commands(self) -> list[str]:
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction):
                return list(action.choices)
        return []
