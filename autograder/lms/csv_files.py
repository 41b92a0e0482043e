"""Reading an LMS's CSV export as it comes (a byte order mark or none, commas, semicolons or tabs, quoted fields with
commas and line breaks) and writing one back in the same dialect."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

BOM = "\ufeff"
SEPARATORS = ",;\t:"  # Moodle's export offers comma, semicolon, tab and colon; Canvas writes commas


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    separator: str = ","
    bom: bool = False


def read_table(path: Path) -> Table:
    """The file's header and rows, every row as long as the header."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise SystemExit(f"There is no roster at {path}: download it from the LMS first (the instructor guide, "
                         "section 5, says where) and give its path to --roster.") from None
    except UnicodeDecodeError:
        raise SystemExit(f"{path} is not UTF-8 text: download it again from the LMS as UTF-8 (Moodle: the export's "
                         "encoding option), without opening it in a spreadsheet first.") from None
    bom = text.startswith(BOM)
    text = text.removeprefix(BOM)
    first = text.split("\n", 1)[0]
    fields = {s: len(next(csv.reader([first], delimiter=s), [])) for s in SEPARATORS}
    separator = max(",;\t", key=fields.get) if max(fields[s] for s in ",;\t") > 1 else ":"  # a colon is in headers
    rows = [row for row in csv.reader(io.StringIO(text, newline=""), delimiter=separator) if any(c.strip() for c in row)]
    if not rows:
        raise SystemExit(f"{path} is empty: download the roster from the LMS again.")
    header, body = rows[0], rows[1:]
    body = [row + [""] * (len(header) - len(row)) for row in body]
    return Table(header, body, separator, bom)


def write_table(path: Path, table: Table) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter=table.separator, lineterminator="\r\n")
    writer.writerow(table.header)
    writer.writerows(table.rows)
    path.write_bytes(((BOM if table.bom else "") + out.getvalue()).encode("utf-8"))


def number(value: float | None) -> str:
    """A score as the LMS reads it: `7.5`, `10`, blank for none."""
    return "" if value is None else f"{value:g}"
