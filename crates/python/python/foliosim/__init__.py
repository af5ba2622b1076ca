"""foliosim from Python: run scenarios on the model of Linux folio-based
memory management and get the results as objects and pandas DataFrames.

>>> import foliosim
>>> r = foliosim.run("scenarios/seed003/anon-scan.toml", arch="arm64",
...                  set={"transparent_hugepage.hugepages-64kB.enabled": "always"})
>>> r.value("measured", "hugepages-64kB/anon_fault_alloc")
4096
>>> df = r.to_pandas()     # one row per value: scenario, arch, engine, phase, kind, name, value

The simulator itself is the Rust extension ``foliosim._native``; it runs
with the interpreter's lock released, so threads simulate in parallel.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping, Optional, Sequence, Union

from . import _native
from ._native import ARCHS, SimulationError

__all__ = ["run", "Report", "SimulationError", "ARCHS", "TIDY_COLUMNS"]

#: The columns of ``Report.to_pandas()``, in order.
TIDY_COLUMNS = ("scenario", "arch", "engine", "phase", "kind", "name", "value")

Overrides = Union[Mapping[str, Any], Iterable[str], None]


def _frame(columns: Mapping[str, list], order: Sequence[str]):
    """A DataFrame of ``columns`` in ``order``; ``value`` stays integral
    (int64 where every value fits, Python ints otherwise: raw pagemap
    entries use all 64 bits)."""
    import pandas as pd

    return pd.DataFrame({c: columns[c] for c in order}, columns=list(order))


class Report:
    """The result of one run: measured phases with their counters (kernel
    names such as ``pgfault``, ``hugepages-64kB/anon_fault_alloc``, the
    model's ``sim/...``), folio-size histograms and modelled time."""

    __slots__ = ("_r",)

    def __init__(self, native: "_native.NativeReport"):
        self._r = native

    @property
    def scenario(self) -> str:
        """The scenario's name."""
        return self._r.scenario

    @property
    def arch(self) -> str:
        """The simulated architecture."""
        return self._r.arch

    @property
    def engine(self) -> str:
        """The engine that produced the report (``sim``)."""
        return self._r.engine

    @property
    def system(self) -> dict:
        """The machine and kernel settings of the run, ``{knob: value}``."""
        return self._r.system

    @property
    def phases(self) -> list:
        """The names of the measured phases, in order."""
        return self._r.phases

    @property
    def expectations_ok(self) -> bool:
        """Whether every judged ``[[expect]]`` of the scenario held."""
        return self._r.expectations_ok

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

    Raises ``FileNotFoundError`` for a missing file, ``ValueError`` for a
    bad scenario, key, value or profile (the message names file, line,
    column and field) and ``SimulationError`` for a run the model stops or
    refuses.
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
