"""Reading rows through an inverted index (`InvertedScan`).

``SELECT * FROM t WHERE tags @> ARRAY['a', 'b']`` with ``t_tags_idx`` on ``tags`` plans to an
`InvertedScan` whose probe, at execution time, evaluates ``ARRAY['a', 'b']`` and asks for the
rows having the entry ``"a"`` AND the entry ``"b"``: it scans the two prefix spans
``/t/t_tags_idx/"a"`` and ``/t/t_tags_idx/"b"``, takes the primary keys after the element in each
entry key, intersects the two sets, and fetches those rows by primary key (in key order).

Probes are in conjunctive normal form: a list of *groups*, each a list of spans; a row
qualifies when, for every group, one of the group's spans holds an entry of it. ``@>`` gives a
group per element (or per minimal JSON document), ``&&`` and ``= ANY`` one group with a span per
element (``<@`` too, plus the empty array's entry), ``?`` one group of two spans (the object key, the string inside an array). The result
is a superset of the matching rows: the planner leaves every filter to be checked again on the
rows fetched, so the results are exactly those of a full scan. A probe that cannot constrain
anything (``tags @> '{}'``, a value of another type, a top-level JSON scalar) reads the whole
table instead -- still correct, and EXPLAIN says so. So does a probe whose spans hold a large
share of the table, decided per execution by a bounded count (exec/inverted_choice.py); EXPLAIN
runs the same count and shows the choice.

Memory: the encoded primary keys found for one group plus the running intersection, so a
probe matching most of a big table holds that many keys (rows themselves are fetched in
batches, `fetched_rows`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from sqlkv.catalog.descriptors import IndexDescriptor, TableDescriptor
from sqlkv.encoding.keys import decode_key
from sqlkv.encoding.jsonb import Jsonb
from sqlkv.encoding.pretty import pretty_key, pretty_span
from sqlkv.sql.context import Column, ExecContext
from sqlkv.sql.exec.inverted_choice import ReadingChoice, choose_reading
from sqlkv.sql.exec.operator import Operator
from sqlkv.sql.exec.counting import reader_for
from sqlkv.sql.exec.row_fetch import fetched_rows
from sqlkv.sql.rowstore.codec import codec_for
from sqlkv.sql.rowstore.inverted import InvertedCodec
from sqlkv.sql.rowstore.inverted_probe import Probe, probe_groups
from sqlkv.storage.kv import prefix_end

_ASC = [False]


@dataclass
class InvertedSpan:
    start: bytes
    end: bytes

    @staticmethod
    def prefix(start: bytes) -> InvertedSpan:
        return InvertedSpan(start, prefix_end(start))


class InvertedScan(Operator):
    """Rows whose inverted-index entries satisfy a probe (a superset: the caller re-checks)."""

    def __init__(self, table: TableDescriptor, alias: str, columns: list[Column], index: IndexDescriptor,
                 probe: Probe, operand: Callable[[tuple], Any], probe_sql: str, needed: set[int] | None) -> None:
        self.table = table
        self.alias = alias
        self.columns = columns
        self.index = index
        self.probe = probe
        self.operand = operand
        self.probe_sql = probe_sql
        self.codec = codec_for(table)
        self.inverted = InvertedCodec(table, index, self.codec.pk_positions)
        self.decoder = self.codec.decoder(needed)
        self.describe_ctx: ExecContext | None = None  # set by EXPLAIN: describe() probes through it

    def _groups(self) -> list[list[InvertedSpan]] | None:
        starts = probe_groups(self.probe, self.inverted, self.operand(()))
        if starts is None:
            return None
        return [[InvertedSpan.prefix(s) for s in group] for group in starts]

    def rows(self, ctx: ExecContext) -> Iterator[tuple]:
        reader = reader_for(ctx, self)
        groups = self._groups()
        codec = self.codec
        if groups is not None and groups and all(groups) and self._choice(reader, groups).full_scan:
            groups = None
        if groups is None:  # nothing to look up, or too much: every row is a candidate
            n = 0
            for row in self.decoder.rows(reader.scan(codec.prefix, prefix_end(codec.prefix), False, None)):
                n += 1
                if not n & 511:
                    ctx.check_cancelled()
                yield row
            return
        pks: set[bytes] | None = None
        for group in groups:
            found = self._group_pks(reader, group, ctx)
            pks = found if pks is None else pks & found
            if not pks:
                return
        prefixes = (codec.prefix + pk for pk in sorted(pks or ()))
        yield from fetched_rows(codec, self.decoder, reader, prefixes)

    def _choice(self, reader, groups: list[list[InvertedSpan]]) -> ReadingChoice:
        spans = [[(span.start, span.end) for span in group] for group in groups]
        return choose_reading(reader, spans, self.codec.prefix, len(self.codec.families))

    def _group_pks(self, reader, group: list[InvertedSpan], ctx: ExecContext) -> set[bytes]:
        """The encoded primary keys of the rows with an entry in any of the group's spans."""
        start_at = len(self.inverted.prefix)
        out: set[bytes] = set()
        for span in group:
            for n, (key, _value) in enumerate(reader.scan(span.start, span.end, False, None), 1):
                if not n & 511:
                    ctx.check_cancelled()
                _vals, end = decode_key(key, 1, _ASC, start_at)
                out.add(key[end:])
        return out

    def _shown(self, span: InvertedSpan) -> str:
        """A span in key grammar. A JSONB prefix that is no whole key is shown by what follows
        it: ``jsonb:{"k": …}`` (any value under key k: ``doc ? 'k'``) or ``jsonb:{"a": […]}``
        (any array at "a": ``doc @> '{"a": []}'``)."""
        if self.inverted.kind != "JSONB" or _decoded(self.inverted.prefix, span.start, b"") is not None:
            return pretty_span(span.start, span.end)
        where = pretty_key(self.inverted.prefix)
        tree = _decoded(self.inverted.prefix, span.start, b"\x01")  # completed with a null
        if isinstance(tree, dict) and len(tree) == 1 and None in tree.values():
            return f"{where}/jsonb:{{{json.dumps(next(iter(tree)))}: …}}"
        tree = _decoded(self.inverted.prefix, span.start, b"\x00" * 4)  # completed with a count of 0
        if tree is not None:
            text = str(Jsonb(tree))
            cut = max(text.rfind("[]"), text.rfind("{}"))
            return f"{where}/jsonb:{text[:cut + 1]}…{text[cut + 1:]}"
        return pretty_span(span.start, span.end)

    def _shown_group(self, group: list[InvertedSpan]) -> str:
        """One OR group, its first 8 spans (``doc <@ v`` has a span per path of v)."""
        if len(group) == 1:
            return self._shown(group[0])
        more = f" OR … (+{len(group) - 8} more)" if len(group) > 8 else ""
        return "(" + " OR ".join(self._shown(s) for s in group[:8]) + more + ")"

    def describe(self) -> str:
        line = f"inverted scan {self.table.name}@{self.index.name} ({self.probe_sql})"
        try:
            groups = self._groups()
        except Exception:  # parameters not bound yet: show the predicate only
            return line
        if groups is None:
            return line + " spans: full table (the value constrains no entry)"
        if not groups or any(not g for g in groups):
            return line + " spans: (empty)"
        shown = " AND ".join(self._shown_group(g) for g in groups[:8])
        more = f" (+{len(groups) - 8} more)" if len(groups) > 8 else ""
        line = f"{line} spans: {shown}{more}"
        ctx = self.describe_ctx
        if ctx is None or ctx.txn is None:
            return line
        return f"{line}; {self._choice(ctx.txn, groups).explained()}"


def _decoded(prefix: bytes, start: bytes, completion: bytes):
    """The JSONB tree that ``start + completion`` encodes exactly after ``prefix``, else None."""
    key = start + completion
    try:
        (doc,), end = decode_key(key, 1, _ASC, len(prefix))
    except Exception:  # not a whole key: the caller tries another completion
        return None
    return doc.tree if isinstance(doc, Jsonb) and end == len(key) else None
