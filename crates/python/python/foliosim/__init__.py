"""foliosim from Python: run scenarios on the model of Linux folio-based
memory management and get the results as objects and pandas DataFrames.

>>> import foliosim
>>> r = foliosim.run("scenarios/seed003/anon-scan.toml", arch="arm64",
...                  overrides={"transparent_hugepage.hugepages-64kB.enabled": "always"})
>>> r.value("measured", "hugepages-64kB/anon_fault_alloc")
4096
>>> df = r.to_pandas()     # one row per value: scenario, arch, engine, phase, kind, name, value
>>> table = foliosim.sweep("scenarios/seed003/anon-scan.toml",
...                        grid={"arch": ["x86_64", "arm64"], "folio_size": ["4K", "64K", "2M"]})
>>> table.attrs["provenance"]["commit"]          # where the rows came from
>>> same = foliosim.read_table("t.parquet")      # a table `foliosim sweep -o` wrote
>>> print(foliosim.diff("t.parquet", by="folio_size=4K,64K"))

``foliosim.dask.sweep`` runs the same sweep on a ``dask.distributed``
cluster. The simulator itself is the Rust extension ``foliosim._native``;
it runs with the interpreter's lock released, so threads simulate in
parallel.
"""

from __future__ import annotations

import json
import os
import warnings
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _native
from ._native import (
    ARCHS,
    GuestError,
    HostError,
    KilledError,
    ModelBugError,
    SimulationError,
    UnsupportedError,
    UsageError,
)

__version__: str = _native.__version__

__all__ = [
    "__version__",
    "run",
    "sweep",
    "read_table",
    "diff",
    "Report",
    "SimulationError",
    "UsageError",
    "UnsupportedError",
    "KilledError",
    "ModelBugError",
    "HostError",
    "GuestError",
    "ARCHS",
    "TIDY_COLUMNS",
    "SWEEP_COLUMNS",
]

#: The columns of ``Report.to_pandas()``, in order.
TIDY_COLUMNS = ("scenario", "arch", "engine", "phase", "kind", "name", "value")

#: The columns of a sweep's table after ``point`` and one column per grid
#: key (but ``arch``, which fills the ``arch`` column), in order.
SWEEP_COLUMNS = ("scenario", "arch", "engine", "phase", "kind", "name", "value", "error")

Overrides = Union[Mapping[str, Any], Iterable[str], None]
Scenarios = Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]]


def _values(values: list, dtype: str):
    """The ``value`` column, exact: ``dtype`` (``int64``, or ``Int64`` where
    a failed point has none) when every value fits in it, else Python
    ints (a raw pagemap entry uses all 64 bits unsigned)."""
    import pandas as pd

    # Checked here: pandas may wrap a too-large int instead of refusing it.
    if all(v is None or _I64_MIN <= v <= _I64_MAX for v in values):
        return pd.array(values, dtype=dtype)
    return pd.array(values, dtype=object)


_I64_MIN, _I64_MAX = -(1 << 63), (1 << 63) - 1


def _frame(columns: Mapping[str, list], order: Sequence[str]):
    """A DataFrame of ``columns`` in ``order``."""
    import pandas as pd

    frame = {c: _values(columns[c], "int64") if c == "value" else columns[c] for c in order}
    return pd.DataFrame(frame, columns=list(order))


#: The pandas dtype of a grid column of each type ``_native.grid_types``
#: gives, and how a value of it reads.
_GRID_DTYPES = {
    "int": ("Int64", int),
    "float": ("Float64", float),
    "bool": ("boolean", lambda v: v == "true"),
    "str": ("string", str),
}


def _sweep_frame(columns: Sequence[str], data: Mapping[str, list], provenance: Optional[str]):
    """The DataFrame of a sweep's tidy table. ``value`` is pandas' nullable
    ``Int64`` (a failed point's row has none) unless a value needs more;
    each grid column is typed by its values as the Parquet file types it
    (``Int64``, ``Float64``, ``boolean``, else ``string``); an empty
    ``error`` is NA. ``provenance`` (JSON text) goes to
    ``attrs["provenance"]``."""
    import pandas as pd

    grid = list(columns[1 : columns.index("scenario")]) if "scenario" in columns else []
    types = dict(_native.grid_types({c: data[c] for c in grid}))
    frame = {}
    for c in columns:
        if c == "value":
            frame[c] = _values(data[c], "Int64")
        elif c == "point":
            frame[c] = pd.array(data[c], dtype="int64")
        elif c in types:
            dtype, read = _GRID_DTYPES[types[c]]
            frame[c] = pd.array([read(v) for v in data[c]], dtype=dtype)
        elif c == "error":
            frame[c] = pd.array([e or None for e in data[c]], dtype="string")
        else:
            frame[c] = data[c]
    df = pd.DataFrame(frame, columns=list(columns))
    df.attrs["provenance"] = json.loads(provenance) if provenance is not None else None
    return df


def _renamed(new, old, new_name: str, old_name: str, default=None):
    """The value of an argument given under its new name or, with a
    ``DeprecationWarning``, its old one."""
    if old is None:
        return default if new is None else new
    if new is not None:
        raise TypeError(f"give {new_name}= only ({old_name}= is its old name)")
    warnings.warn(
        f"{old_name}= is deprecated: use {new_name}=", DeprecationWarning, stacklevel=3
    )
    return old


def _scenario_list(scenarios: Scenarios) -> list:
    """Scenario files as absolute paths (a Dask worker may run elsewhere)."""
    if isinstance(scenarios, (str, os.PathLike)):
        scenarios = [scenarios]
    return [os.path.abspath(os.fspath(s)) for s in scenarios]


def _expand(scenarios, grid, grid_zip, arch, overrides, seed, allow_large, profile):
    """(grid keys, points, provenance as JSON) of a sweep, expanded and
    checked in Rust."""
    if not isinstance(grid, Mapping):
        raise TypeError("grid: expected a dict {key: [values]}")
    return _native.expand(
        _scenario_list(scenarios),
        dict(grid),
        zip=grid_zip,
        arch=arch,
        set=overrides,
        seed=seed,
        allow_large=allow_large,
        profile=profile,
    )


def _delegate(name: str, doc: str) -> property:
    """A read-only property that returns the native report's ``name``."""
    return property(lambda self: getattr(self._r, name), doc=doc)


class Report:
    """The result of one run: measured phases with their counters (kernel
    names such as ``pgfault``, ``hugepages-64kB/anon_fault_alloc``, the
    model's ``sim/...``), folio-size histograms and modelled time."""

    __slots__ = ("_r",)

    def __init__(self, native: "_native.NativeReport"):
        self._r = native

    scenario = _delegate("scenario", "The scenario's name.")
    arch = _delegate("arch", "The simulated architecture.")
    engine = _delegate("engine", "The engine that produced the report (``sim``).")
    system = _delegate("system", "The machine and kernel settings of the run, ``{knob: value}``.")
    phases = _delegate("phases", "The names of the measured phases, in order.")
    expectations_ok = _delegate(
        "expectations_ok", "Whether every judged ``[[expect]]`` of the scenario held."
    )

    def value(self, phase: str, name: str) -> int:
        """One value of ``phase`` by its tidy name: a counter, a folio cell
        ``folios/<region>/<bucket>``, ``modelled_ns[/<counter>]`` or
        ``pagemap/<step>/<index>``. ``KeyError`` when absent."""
        return self._r.value(phase, name)

    def to_dict(self) -> dict:
        """The report as ``foliosim run --format json`` prints it."""
        return json.loads(self._r.to_json())

    def to_json(self) -> str:
        """The report as JSON text."""
        return self._r.to_json()

    def tidy(self) -> dict:
        """Every value as tidy columns ``{column: [values]}``."""
        return self._r.tidy()

    def to_pandas(self):
        """Every value as a tidy DataFrame, one row per value, with the
        columns of ``TIDY_COLUMNS`` (as ``foliosim run --format csv``)."""
        return _frame(self._r.tidy(), TIDY_COLUMNS)

    def __repr__(self) -> str:
        return repr(self._r)


def run(
    path,
    arch: Optional[str] = None,
    overrides: Overrides = None,
    seed: Optional[int] = None,
    profile: Optional[str] = None,
    *,
    check: bool = False,
    max_memory: Optional[int] = None,
    set: Overrides = None,
) -> Report:
    """Simulate the scenario file ``path`` and return its ``Report``.

    ``overrides`` sets scenario keys, as ``foliosim run --set``: a dict
    ``{"transparent_hugepage.hugepages-64kB.enabled": "always"}`` or a list
    of ``"KEY=VALUE"`` strings. ``arch`` (``x86_64``, ``arm64``), ``seed``
    and ``profile`` (a cost-profile file or shipped name) are the command
    line's options. ``check=True`` runs the invariant checker after every
    step; ``max_memory`` (bytes) refuses larger simulations.

    Raises ``FileNotFoundError`` for a missing file, ``UsageError`` (a
    ``ValueError``) for a bad scenario, key, value or profile (the message
    names file, line, column and field) and a ``SimulationError`` for a run
    the model stops or refuses, by kind: ``UnsupportedError`` (not
    modelled), ``KilledError`` (the process would receive SIGSEGV or
    SIGBUS, or a system call fails), ``ModelBugError`` (a broken invariant
    or a panic in the model), ``HostError`` (the host cannot run it, such
    as a memory estimate over ``max_memory``) and ``GuestError``.
    ``set=`` is the deprecated name of ``overrides=``.
    """
    overrides = _renamed(overrides, set, "overrides", "set")
    return Report(
        _native.run(
            path,
            arch=arch,
            set=overrides,
            seed=seed,
            profile=profile,
            check=check,
            max_memory=max_memory,
        )
    )


def sweep(
    scenarios: Scenarios,
    grid: Mapping[str, Any],
    grid_zip: Optional[bool] = None,
    jobs: Optional[int] = None,
    arch: Optional[str] = None,
    overrides: Overrides = None,
    seed: Optional[int] = None,
    profile: Optional[str] = None,
    *,
    check: bool = False,
    max_memory: Optional[int] = None,
    allow_large: bool = False,
    set: Overrides = None,
    zip: Optional[bool] = None,
):
    """Run every point of a grid over one or more scenarios, in parallel on
    ``jobs`` threads (default: every core), and return the tidy table as
    a pandas DataFrame (what ``foliosim sweep`` writes).

    ``grid`` maps scenario keys (as ``set`` takes them, plus ``arch`` and
    the helper ``folio_size``: 4K, 16K, ..., 1M, 2M) to their values: a
    list (``[4096, 65536]``, ``["always", "never"]``; a string element may
    be a range, ``"4096<<[0..4]"``), or one string in the ``--grid``
    syntax (``"64K,2M"``). The points are the Cartesian product (the last
    key varies fastest) for each scenario in turn, or, with
    ``grid_zip=True``, the keys' lists taken together. ``overrides``
    (as for ``run``), ``arch`` and ``seed`` apply to every point before
    the grid's values; ``profile``, ``check`` and
    ``max_memory`` as for ``run`` (with ``jobs`` threads, each point may
    use ``max_memory / jobs``).

    Columns: ``point``, one per grid key (but ``arch``), then
    ``SWEEP_COLUMNS``. A grid column is typed by its values, as in the
    Parquet file ``foliosim sweep`` writes: ``Int64`` when every value is
    an integer, ``Float64`` when every value is a number, ``boolean`` for
    ``true``/``false`` (``[False, True]``), else ``string``; so
    ``df["series.batch_anon_unmap"] == 1`` selects rows. A point that
    fails is one row with its message in ``error`` (NA for the others)
    and no phase, kind, name or value; the others still run. The sweep's
    provenance (foliosim's version and commit, the overrides, the
    profile; docs/output.md) is ``df.attrs["provenance"]``, a dict. A bad
    key or value raises ``ValueError`` before anything runs; more than
    10,000 points need ``allow_large=True``. ``set=`` and ``zip=`` are
    the deprecated names of ``overrides=`` and ``grid_zip=``.
    """
    overrides = _renamed(overrides, set, "overrides", "set")
    grid_zip = _renamed(grid_zip, zip, "grid_zip", "zip", default=False)
    keys, points, provenance = _expand(
        scenarios, grid, grid_zip, arch, overrides, seed, allow_large, profile
    )
    columns, data = _native.run_points(
        points, keys, jobs=jobs, profile=profile, check=check, max_memory=max_memory
    )
    return _sweep_frame(columns, data, provenance)


def read_table(path):
    """The sweep table file ``path`` (``foliosim sweep -o``: CSV, JSON
    lines, Arrow IPC or Parquet, by its extension, else its contents) as
    the DataFrame ``sweep`` returns: the same columns and types, and its
    provenance in ``attrs["provenance"]`` (None for a table an older
    foliosim wrote). The CSV and JSON-lines files' ``provenance.*``
    columns become that dict, not columns. ``FileNotFoundError`` for a
    missing file, ``UsageError`` for one that is not a sweep table."""
    columns, data, _grid, provenance = _native.read_table(os.fspath(path))
    return _sweep_frame(columns, data, provenance)


def diff(
    a,
    b=None,
    *,
    by: Optional[str] = None,
    columns: Optional[Sequence[str]] = None,
    only: Optional[Sequence[str]] = None,
    show_all: bool = False,
    output_format: str = "text",
):
    """What ``foliosim diff`` prints: the base-versus-patched table of two
    reports, or of one sweep table's points by a key.

    ``a`` and ``b`` are ``Report`` objects or report files (``foliosim
    run --format json -o FILE``), ``a`` the base. With ``by`` (``KEY``,
    or ``KEY=BASE,PATCHED`` to name the pair), ``a`` is a sweep table
    file and ``b`` is not given; ``columns`` names the keys of the column
    groups. ``only`` keeps these values (counter names, ``modelled_ns``);
    ``show_all`` shows every value, not only those that changed
    (``--all``). ``output_format``: ``text`` (fixed width, for a mail),
    ``md``, ``csv`` (text) or ``json`` (returned as a dict). ``UsageError`` for inputs that cannot
    be compared."""

    def report_json(r) -> str:
        if isinstance(r, Report):
            return r.to_json()
        with open(os.fspath(r), encoding="utf-8") as f:
            return f.read()

    if by is not None:
        if b is not None:
            raise TypeError("diff: by= compares the points of one sweep table; give no b")
        first = os.fspath(a)
    else:
        if b is None:
            raise TypeError("diff: give two reports (the first the base), or a table and by=")
        first, b = report_json(a), report_json(b)
    text = _native.diff(
        first,
        b,
        by=by,
        columns=None if columns is None else list(columns),
        only=None if only is None else list(only),
        all=show_all,
        format=output_format,
    )
    return json.loads(text) if output_format == "json" else text


def __getattr__(name: str):
    # foliosim.dask imports dask.distributed: only when it is used.
    if name == "dask":
        import importlib

        return importlib.import_module(".dask", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
