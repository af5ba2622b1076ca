"""foliosim from Python: run scenarios on the model of Linux folio-based
memory management and get the results as objects and pandas DataFrames.

>>> import foliosim
>>> r = foliosim.run("scenarios/seed003/anon-scan.toml", arch="arm64",
...                  set={"transparent_hugepage.hugepages-64kB.enabled": "always"})
>>> r.value("measured", "hugepages-64kB/anon_fault_alloc")
4096
>>> df = r.to_pandas()     # one row per value: scenario, arch, engine, phase, kind, name, value
>>> table = foliosim.sweep("scenarios/seed003/anon-scan.toml",
...                        grid={"arch": ["x86_64", "arm64"], "folio_size": ["4K", "64K", "2M"]})

``foliosim.dask.sweep`` runs the same sweep on a ``dask.distributed``
cluster. The simulator itself is the Rust extension ``foliosim._native``;
it runs with the interpreter's lock released, so threads simulate in
parallel.
"""

from __future__ import annotations

import json
import os
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

__all__ = [
    "run",
    "sweep",
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


def _sweep_frame(columns: Sequence[str], data: Mapping[str, list]):
    """The DataFrame of a sweep's tidy table; ``value`` is pandas' nullable
    ``Int64`` (a failed point's row has none) unless a value needs more."""
    import pandas as pd

    frame = {}
    for c in columns:
        if c == "value":
            frame[c] = _values(data[c], "Int64")
        elif c == "point":
            frame[c] = pd.array(data[c], dtype="int64")
        else:
            frame[c] = data[c]
    return pd.DataFrame(frame, columns=list(columns))


def _scenario_list(scenarios: Scenarios) -> list:
    """Scenario files as absolute paths (a Dask worker may run elsewhere)."""
    if isinstance(scenarios, (str, os.PathLike)):
        scenarios = [scenarios]
    return [os.path.abspath(os.fspath(s)) for s in scenarios]


def _expand(scenarios, grid, zip, arch, set, seed, allow_large):
    """(grid keys, points) of a sweep, expanded and checked in Rust."""
    if not isinstance(grid, Mapping):
        raise TypeError("grid: expected a dict {key: [values]}")
    return _native.expand(
        _scenario_list(scenarios),
        dict(grid),
        zip=zip,
        arch=arch,
        set=set,
        seed=seed,
        allow_large=allow_large,
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
    set: Overrides = None,
    seed: Optional[int] = None,
    profile: Optional[str] = None,
    *,
    check: bool = False,
    max_memory: Optional[int] = None,
) -> Report:
    """Simulate the scenario file ``path`` and return its ``Report``.

    ``set`` overrides scenario keys, as ``foliosim run --set``: a dict
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
    """
    return Report(
        _native.run(
            path,
            arch=arch,
            set=set,
            seed=seed,
            profile=profile,
            check=check,
            max_memory=max_memory,
        )
    )


def sweep(
    scenarios: Scenarios,
    grid: Mapping[str, Any],
    zip: bool = False,
    jobs: Optional[int] = None,
    arch: Optional[str] = None,
    set: Overrides = None,
    seed: Optional[int] = None,
    profile: Optional[str] = None,
    *,
    check: bool = False,
    max_memory: Optional[int] = None,
    allow_large: bool = False,
):
    """Run every point of a grid over one or more scenarios, in parallel on
    ``jobs`` threads (default: every core), and return the tidy table as
    a pandas DataFrame (what ``foliosim sweep`` writes).

    ``grid`` maps scenario keys (as ``set`` takes them, plus ``arch`` and
    the helper ``folio_size``: 4K, 16K, ..., 1M, 2M) to their values: a
    list (``[4096, 65536]``, ``["always", "never"]``; a string element may
    be a range, ``"4096<<[0..4]"``), or one string in the ``--grid``
    syntax (``"64K,2M"``). The points are the Cartesian product (the last
    key varies fastest) for each scenario in turn, or, with ``zip=True``,
    the keys' lists taken together. ``set``, ``arch`` and ``seed`` apply
    to every point before the grid's values; ``profile``, ``check`` and
    ``max_memory`` as for ``run`` (with ``jobs`` threads, each point may
    use ``max_memory / jobs``).

    Columns: ``point``, one per grid key (but ``arch``), then
    ``SWEEP_COLUMNS``. A point that fails is one row with its message in
    ``error`` and no phase, kind, name or value; the others still run.
    A bad key or value raises ``ValueError`` before anything runs; more
    than 10,000 points need ``allow_large=True``.
    """
    keys, points = _expand(scenarios, grid, zip, arch, set, seed, allow_large)
    columns, data = _native.run_points(
        points, keys, jobs=jobs, profile=profile, check=check, max_memory=max_memory
    )
    return _sweep_frame(columns, data)


def __getattr__(name: str):
    # foliosim.dask imports dask.distributed: only when it is used.
    if name == "dask":
        import importlib

        return importlib.import_module(".dask", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
