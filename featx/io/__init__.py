"""Reading input files, shared by both stages: the extraction's corpus and the probe's ``--labels`` files.

``sources``        the bytes of a file or of standard input, gzip unwrapped (with size and ratio limits), other
                   compressions and JSON arrays refused by name, decoding with the bad byte's line and column
``tables``         header, rows and line numbers of CSV/TSV (delimiter sniffed), JSON Lines or Parquet; at most
                   ``MAX_COLUMNS`` columns, JSON nested too deeply refused in one line
``label_columns``  a column of label values typed once: codes, class names, missing markers, continuous or not
``csv_files``      the one CSV writer (``write_csv``): formula-like cells neutralised for spreadsheets, written whole
                   or not at all, ``-`` to standard output; ``read_csv`` reads featx's own CSVs back

Only the standard library and numpy are imported here (pyarrow when a Parquet file is read, pandas when a CSV is
written or read back).
"""

from .csv_files import FORMULA_STARTS, STDOUT, csv_text, neutral_cell, read_csv, restored_cell, writable_hint, write_csv
from .label_columns import (
    CONTINUOUS_MIN_DISTINCT,
    CONTINUOUS_MIN_FRACTION,
    MISSING_PRESETS,
    MISSING_VALUES,
    NUMBER,
    PANDAS_MISSING,
    LabelColumn,
    label_column,
    looks_continuous,
    missing_markers,
    odd_cells,
)
from .sources import (
    COMPRESSED,
    CONLLU_SUFFIXES,
    CORPUS_SUFFIXES,
    GZIP_SUFFIXES,
    MAX_CORPUS_BYTES,
    MAX_GZIP_RATIO,
    STDIN,
    TABLE_SUFFIXES,
    corpus_name,
    corpus_stem,
    decode_text,
    is_stdin,
    naming_stdin,
    read_source,
    refuse_other_formats,
    rereadable,
    source_name,
    unwrap_gzip,
)
from .tables import (
    DELIMITER_NAMES,
    MAX_COLUMNS,
    SEP_ALIASES,
    Table,
    blank_text,
    check_width,
    choose_delimiter,
    normalise_sep,
    parse_table,
    refuse_non_text,
    structured_note,
)

__all__ = [
    "COMPRESSED",
    "CONLLU_SUFFIXES",
    "CONTINUOUS_MIN_DISTINCT",
    "CONTINUOUS_MIN_FRACTION",
    "CORPUS_SUFFIXES",
    "DELIMITER_NAMES",
    "FORMULA_STARTS",
    "GZIP_SUFFIXES",
    "MAX_COLUMNS",
    "MAX_CORPUS_BYTES",
    "MAX_GZIP_RATIO",
    "MISSING_PRESETS",
    "MISSING_VALUES",
    "NUMBER",
    "PANDAS_MISSING",
    "SEP_ALIASES",
    "STDIN",
    "STDOUT",
    "TABLE_SUFFIXES",
    "LabelColumn",
    "Table",
    "blank_text",
    "check_width",
    "choose_delimiter",
    "corpus_name",
    "corpus_stem",
    "csv_text",
    "decode_text",
    "is_stdin",
    "label_column",
    "looks_continuous",
    "missing_markers",
    "odd_cells",
    "naming_stdin",
    "neutral_cell",
    "normalise_sep",
    "parse_table",
    "read_csv",
    "read_source",
    "refuse_non_text",
    "refuse_other_formats",
    "rereadable",
    "restored_cell",
    "source_name",
    "structured_note",
    "unwrap_gzip",
    "writable_hint",
    "write_csv",
]
