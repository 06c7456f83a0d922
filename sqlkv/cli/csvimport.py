"""``.import data.csv items``: load a CSV file into a table, with a progress bar on a terminal.

If ``items`` does not exist, the file's first row names its columns and the table is created
with the types a first pass over the file infers (`infer_types`): INT when every non-empty
field of the column is an integer that fits 64 bits, FLOAT when every one is a number, DATE
when every one is an ISO date (2024-01-31), TIMESTAMP when they are ISO dates and times
without a zone, else TEXT (empty fields become NULL in the typed columns). If it exists, a first row equal to its column names is taken as a header
and skipped; every other row fills the columns in order. CSV fields are text, and sqlkv's
assignment casts are strict, so each field is converted here to the column's type first
(empty field -> NULL for non-text columns; ``"12"`` -> 12 for INT). Rows go in with
``Session.executemany`` in batches of `BATCH_ROWS`, each batch its own transaction (unless a
transaction is already open): memory stays bounded for big files, and an error reports how
many rows were loaded before it.
"""

from __future__ import annotations

import codecs
import csv
import datetime
import io
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal, InvalidOperation
from typing import Any

from sqlkv.cli.progress import progress as bar_for
from sqlkv.cli.progress import stderr_is_terminal
from sqlkv.dbapi.schema import SchemaReader, quote_ident
from sqlkv.errors import DataError, Error, OperationalError

BATCH_ROWS = 1000

_TRUE = {"true", "t", "1", "yes", "y", "on"}
_FALSE = {"false", "f", "0", "no", "n", "off"}


def _to_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(text)


def _to_bytes(text: str) -> bytes:
    if text.startswith("\\x"):
        return bytes.fromhex(text[2:])
    return text.encode("utf-8")


_CONVERTERS: dict[str, Callable[[str], Any]] = {
    "INT": lambda s: int(s.strip()),
    "FLOAT": lambda s: float(s.strip()),
    "DECIMAL": lambda s: Decimal(s.strip()),
    "BOOL": _to_bool,
    "DATE": lambda s: datetime.date.fromisoformat(s.strip()),
    "TIMESTAMP": lambda s: datetime.datetime.fromisoformat(s.strip()),
    "BYTES": _to_bytes,
}


def _converter(kind: str) -> Callable[[str], Any]:
    convert = _CONVERTERS.get(kind)
    if convert is None:  # TEXT (and anything unknown) takes the field as it is
        return lambda s: s

    def typed(text: str) -> Any:
        return None if text == "" else convert(text)

    return typed


_INT_RE = re.compile(r"[+-]?\d+")
_INT64 = (-(1 << 63), (1 << 63) - 1)


_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
# ISO timestamps without a zone (TIMESTAMP holds none): 2024-01-02 10:30, ...T10:30:00.5
_TIMESTAMP_RE = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?")


def _kind_of(text: str) -> str:
    """The narrowest of INT, FLOAT, DATE, TIMESTAMP, TEXT that reads ``text`` back exactly."""
    text = text.strip()
    if _INT_RE.fullmatch(text):
        return "INT" if _INT64[0] <= int(text) <= _INT64[1] else "TEXT"
    if _DATE_RE.fullmatch(text) or _TIMESTAMP_RE.fullmatch(text):
        return _calendar_kind(text)
    try:
        number = float(text)
    except ValueError:
        return "TEXT"
    return "FLOAT" if math.isfinite(number) else "TEXT"  # 'nan', 'inf' stay words


def _calendar_kind(text: str) -> str:
    kind = "DATE" if len(text) == 10 else "TIMESTAMP"
    try:
        _CONVERTERS[kind](text)
    except ValueError:  # 2024-02-30
        return "TEXT"
    return kind


def _wider(known: str | None, seen: str) -> str:
    """The type a column needs to hold both kinds: numbers widen to FLOAT, dates to
    TIMESTAMP, and a mix of numbers, dates and words is TEXT."""
    if known is None or known == seen:
        return seen
    pair = {known, seen}
    if pair == {"INT", "FLOAT"}:
        return "FLOAT"
    if pair == {"DATE", "TIMESTAMP"}:
        return "TIMESTAMP"
    return "TEXT"


class _TextBytes(io.RawIOBase):
    """A file read through this refuses its first NUL byte and its first byte that is not
    UTF-8, naming the offset in the file: a CSV file is text, and a device that never ends
    (``/dev/zero``) would otherwise be read into memory as one endless line."""

    def __init__(self, path: str) -> None:
        self._file = open(path, "rb", buffering=0)  # noqa: SIM115 (closed with this object)
        self._path = path
        self._offset = 0
        self._utf8 = codecs.getincrementaldecoder("utf-8")()

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        n = self._file.readinto(buffer) or 0
        data = bytes(buffer[:n])
        nul = data.find(b"\0")
        if nul >= 0:
            raise DataError(f"{self._path}: not a text file (NUL byte at offset {self._offset + nul})")
        held = len(self._utf8.getstate()[0])  # an incomplete character from the last read
        try:
            self._utf8.decode(data, final=n == 0)
        except UnicodeDecodeError as exc:
            at = self._offset - held + exc.start
            raise DataError(f"{self._path}: not UTF-8 text (invalid byte at offset {at})") from None
        self._offset += n
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


def open_csv(path: str) -> io.TextIOWrapper:
    """``path`` as UTF-8 text (a BOM is skipped), lines as the csv module wants them."""
    return io.TextIOWrapper(io.BufferedReader(_TextBytes(path)), encoding="utf-8-sig", newline="")


def csv_records(fh: io.TextIOWrapper) -> Iterator[list[str]]:
    """Strict: an unterminated quoted field or text after a closing quote is an error, not a
    record silently read some other way."""
    return csv.reader(fh, strict=True)


def infer_types(path: str, width: int) -> list[str]:
    """Column types of a CSV file after its header row: one streaming pass over the file."""
    kinds: list[str | None] = [None] * width
    with open_csv(path) as fh:
        rows = csv_records(fh)
        next(rows, None)
        for fields in rows:
            for i, text in enumerate(fields[:width]):
                if text == "" or kinds[i] == "TEXT":
                    continue
                kinds[i] = _wider(kinds[i], _kind_of(text))
    return [kind or "TEXT" for kind in kinds]


def _count_lines(path: str) -> int:
    count = 0
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            count += block.count(b"\n")
    return count


def import_csv(session: Any, path: str, table_name: str, progress: bool = False) -> int:
    """Load ``path`` into ``table_name``; return the number of rows inserted.

    All or nothing: the table it creates and every batch run in one transaction (a savepoint
    inside the user's open transaction), undone if any record is refused. A file that cannot be
    read, is not UTF-8 or is not well-formed CSV is a DataError/OperationalError naming it.
    """
    with _atomically(session):
        try:
            return _import(session, path, table_name, progress)
        except OSError as exc:
            raise OperationalError(f"cannot read {path}: {exc.strerror or exc}") from None
        except UnicodeDecodeError as exc:
            raise DataError(f"{path}: not UTF-8 text (invalid byte at offset {exc.start})") from None
        except csv.Error as exc:
            raise DataError(f"{path}: malformed CSV: {exc}") from None


@contextmanager
def _atomically(session: Any) -> Iterator[None]:
    if session.in_transaction:
        session.execute("SAVEPOINT sqlkv_import")
        try:
            yield
        except BaseException:
            session.execute("ROLLBACK TO SAVEPOINT sqlkv_import")
            raise
        session.execute("RELEASE SAVEPOINT sqlkv_import")
        return
    session.execute("BEGIN")
    try:
        yield
    except BaseException:
        session.rollback()
        raise
    session.commit()


def _import(session: Any, path: str, table_name: str, progress: bool) -> int:
    reader = SchemaReader(session)
    with open_csv(path) as fh:
        rows = csv_records(fh)
        first = next(rows, None)
        table = reader.find_table(table_name)
        if first is None:
            if table is None:
                raise DataError(f"{path}: empty file: no header row to name the columns of a new "
                                f"table {table_name}")
            return 0
        if table is None:
            types = infer_types(path, len(first))
            columns = ", ".join(f"{quote_ident(name)} {kind}" for name, kind in zip(first, types))
            session.execute(f"CREATE TABLE {quote_ident(table_name)} ({columns})")
            table = reader.find_table(table_name)
            pending: list[list[str]] = []
        else:
            visible = [c.name.lower() for c in table.columns if not c.hidden]
            pending = [] if [f.strip().lower() for f in first] == visible else [first]
        columns = [c for c in table.columns if not c.hidden]
        converters = [_converter(c.type.kind) for c in columns]
        names = ", ".join(quote_ident(c.name) for c in columns)
        marks = ", ".join("?" for _ in columns)
        insert = f"INSERT INTO {quote_ident(table.name)} ({names}) VALUES ({marks})"
        source = _chain(pending, rows)
        if progress and stderr_is_terminal():
            records = _count_lines(path) - (0 if pending else 1)  # the header is not a row
            with bar_for(f"importing {path} into {table.name}") as bar:
                source = bar(source, total=records)
                return _load(session, insert, source, converters, columns, path)
        return _load(session, insert, source, converters, columns, path)


def _chain(first: list[list[str]], rest: Iterator[list[str]]) -> Iterator[list[str]]:
    yield from first
    yield from rest


def _load(session: Any, insert: str, source: Any, converters: list, columns: list, path: str) -> int:
    loaded = 0
    batch: list[tuple] = []
    for line_no, fields in enumerate(source, start=1):
        batch.append(_convert(fields, converters, columns, path, line_no))
        if len(batch) >= BATCH_ROWS:
            loaded += _insert(session, insert, batch, loaded)
            batch = []
    if batch:
        loaded += _insert(session, insert, batch, loaded)
    return loaded


def _insert(session: Any, insert: str, batch: list[tuple], loaded: int) -> int:
    try:
        session.executemany(insert, batch)
    except Error as exc:
        raise type(exc)(f"{exc} ({loaded} rows were imported before this batch)") from None
    return len(batch)


def _convert(fields: list[str], converters: list, columns: list, path: str, line_no: int) -> tuple:
    if len(fields) != len(columns):
        raise DataError(f"{path}: record {line_no} has {len(fields)} fields, expected {len(columns)}")
    out = []
    for text, convert, col in zip(fields, converters, columns):
        try:
            out.append(convert(text))
        except (ValueError, InvalidOperation):
            raise DataError(
                f'{path}: record {line_no}: value "{text}" is not valid for column "{col.name}" '
                f"of type {col.type.sql()}"
            ) from None
    return tuple(out)
