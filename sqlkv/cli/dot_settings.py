"""Dot commands that change how the shell shows things: ``.mode``, ``.headers``, ``.nullvalue``,
``.width``, ``.separator``, ``.expand``, ``.pager``, ``.echo``, ``.bail``, ``.changes``,
``.timer``, ``.explain``, ``.print`` and ``.show``, which lists them all.

``.mode insert orders`` makes the next query print ``INSERT INTO orders VALUES(...);`` lines;
``.nullvalue -`` shows NULL as ``-`` in every text mode; ``.width 10 -8`` makes the first two
columns of the aligned modes at least 10 and 8 wide, the second right-aligned (sqlite3's rule).
"""

from __future__ import annotations

from typing import Any

from sqlkv.cli.render import MODES
from sqlkv.errors import ProgrammingError


class DotError(ProgrammingError):
    """A dot command's usage error (printed as ``Error: ...`` like any statement error)."""


def on_off(args: list[str], what: str) -> bool:
    if len(args) != 1 or args[0].lower() not in ("on", "off", "1", "0", "yes", "no", "true", "false"):
        raise DotError(f"usage: .{what} on|off")
    return args[0].lower() in ("on", "1", "yes", "true")


def cmd_mode(shell: Any, args: list[str]) -> None:
    opts = shell.state.render
    if not args:
        shell.state.out.write(f"current output mode: {opts.mode}\n")
        return
    mode = args[0].lower()
    if mode not in MODES or len(args) > (2 if mode == "insert" else 1):
        raise DotError(f"usage: .mode {'|'.join(MODES)} (insert takes a TABLE name)")
    opts.mode = mode
    if mode == "insert":
        opts.table = args[1] if len(args) == 2 else "table"


def cmd_headers(shell: Any, args: list[str]) -> None:
    shell.state.render.headers = on_off(args, "headers")


def cmd_nullvalue(shell: Any, args: list[str]) -> None:
    if len(args) != 1:
        raise DotError("usage: .nullvalue STRING")
    shell.state.render.null = args[0]


def cmd_separator(shell: Any, args: list[str]) -> None:
    if len(args) != 1:
        raise DotError("usage: .separator STRING")
    shell.state.render.separator = args[0].encode().decode("unicode_escape")  # '\t' as a tab


def cmd_width(shell: Any, args: list[str]) -> None:
    try:
        shell.state.render.widths = [int(a) for a in args]
    except ValueError:
        raise DotError("usage: .width NUM1 NUM2 ... (0: automatic, negative: right-aligned)") from None


def _flag(attr: str) -> Any:
    def command(shell: Any, args: list[str]) -> None:
        setattr(shell.state, attr, on_off(args, attr))

    return command


def cmd_pager(shell: Any, args: list[str]) -> None:
    shell.state.pager = on_off(args, "pager")


def cmd_print(shell: Any, args: list[str]) -> None:
    shell.state.out.write(" ".join(args) + "\n")


def cmd_show(shell: Any, args: list[str]) -> None:
    state, opts = shell.state, shell.state.render

    def word(flag: bool) -> str:
        return "on" if flag else "off"

    settings = [
        ("echo", word(state.echo)), ("bail", word(state.bail)), ("changes", word(state.changes)),
        ("explain", word(state.explain)), ("expand", word(state.expand)),
        ("headers", word(opts.headers)),
        ("mode", opts.mode + (f" {opts.table}" if opts.mode == "insert" else "")),
        ("nullvalue", f'"{opts.null}"'), ("output", state.output_name),
        ("pager", word(state.pager)), ("separator", f'"{opts.separator}"'),
        ("timer", word(state.timer)), ("width", " ".join(map(str, opts.widths))),
        ("filename", state.database),
    ]
    label = max(len(name) for name, _ in settings)
    for name, value in settings:
        state.out.write(f"{name.rjust(label)}: {value}\n")


SETTINGS_COMMANDS: dict[str, tuple[Any, str, str]] = {
    "mode": (cmd_mode, ".mode MODE [TABLE]", f"output mode: {'|'.join(MODES)}"),
    "headers": (cmd_headers, ".headers on|off", "print column names"),
    "nullvalue": (cmd_nullvalue, ".nullvalue STRING", "text shown for NULL"),
    "separator": (cmd_separator, ".separator STRING", "column separator of list mode"),
    "width": (cmd_width, ".width NUM ...", "minimum column widths of aligned modes (negative: right)"),
    "expand": (_flag("expand"), ".expand on|off", "vertical output, one line per column (also ...\\G)"),
    "pager": (cmd_pager, ".pager on|off", "page results taller than the terminal ($PAGER, less)"),
    "echo": (_flag("echo"), ".echo on|off", "print each command before running it"),
    "bail": (_flag("bail"), ".bail on|off", "stop a script at the first error"),
    "changes": (_flag("changes"), ".changes on|off", "print the rows each statement changed"),
    "timer": (_flag("timer"), ".timer on|off", "print the run time of each statement"),
    "explain": (_flag("explain"), ".explain on|off", "print each statement's plan before running it"),
    "print": (cmd_print, ".print TEXT ...", "print the arguments"),
    "show": (cmd_show, ".show", "show the current settings"),
}
