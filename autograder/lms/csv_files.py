"""Reading an LMS's CSV export as it comes (a byte order mark or none, commas, semicolons or tabs, quoted fields with
commas and line breaks, a decimal point or a decimal comma) and writing one back in the same dialect."""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

BOM = "\ufeff"
SEPARATORS = ",;\t:"  # Moodle's export offers comma, semicolon, tab and colon; Canvas commas, or semicolons
DECIMAL = {".": re.compile(r"^-?\d+\.\d+$"), ",": re.compile(r"^-?\d+,\d+$")}  # `9.00`, or `9,00` in such locales


@dataclass
class Table:
    header: list[str]
    rows: list[list[str]]
    separator: str = ","
    bom: bool = False
    decimal: str = "."  # the decimal mark the file's numbers are written with


def read_table(path: Path) -> Table:
    """The file's header and rows, every row as long as the header."""
    try:
        text = Path(path).read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise SystemExit(f"There is no roster at {path}: download it from the LMS first (the instructor guide, "
                         "section 8, says where) and give its path to --roster.") from None
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
    return Table(header, body, separator, bom, decimal_mark(body))


def decimal_mark(rows: list[list[str]]) -> str:
    """The decimal mark the rows' numbers use: a comma when more cells read `9,00` than `9.00`."""
    cells = [cell.strip() for row in rows for cell in row]
    commas, points = (sum(1 for cell in cells if DECIMAL[mark].match(cell)) for mark in (",", "."))
    return "," if commas > points else "."


def write_table(path: Path, table: Table) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    out = io.StringIO(newline="")
    writer = csv.writer(out, delimiter=table.separator, lineterminator="\r\n")
    writer.writerow(table.header)
    writer.writerows(table.rows)
    path.write_bytes(((BOM if table.bom else "") + out.getvalue()).encode("utf-8"))


def number(value: float | None, decimal: str = ".") -> str:
    """A score as the LMS reads it: `7.5` (or `7,5` with a decimal comma), `10`, blank for none."""
    return "" if value is None else f"{value:g}".replace(".", decimal)


def read_number(text: str) -> float | None:
    """A number as an LMS export writes it, with a decimal point or a decimal comma (`9.00`, `9,00`); None for a
    cell that holds none (blank, `-`, `(read only)`)."""
    text = text.strip()
    for mark, pattern in DECIMAL.items():
        if pattern.match(text):
            return float(text.replace(mark, "."))
    return float(text) if re.fullmatch(r"-?\d+", text) else None
