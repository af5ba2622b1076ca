"""foliosim sweeps on a ``dask.distributed`` cluster.

>>> from dask.distributed import Client, LocalCluster
>>> import foliosim.dask
>>> with Client(LocalCluster(n_workers=2, threads_per_worker=1)) as client:
...     df = foliosim.dask.sweep("scenarios/seed003/anon-scan.toml",
...                              grid={"folio_size": ["4K", "64K", "2M"]}, client=client)

The grid is expanded and checked here, in the client's process (by the
same Rust code as ``foliosim.sweep``); each task runs a batch of points
with the binding on a worker, one point at a time, and the batches come
back in point order, so the DataFrame is the one ``foliosim.sweep`` gives:
the same columns, rows and order. Workers need ``foliosim`` installed and
the scenario files at the same (absolute) paths, e.g. on a shared file
system for a Slurm or PBS cluster (``dask_jobqueue``).
"""

from __future__ import annotations

from typing import Any, Mapping, Optional

from . import Overrides, Scenarios, _expand, _native, _renamed, _sweep_frame

__all__ = ["sweep"]


def _run_batch(points, grid_keys, profile, check, max_memory):
    """A task: simulate ``points`` on this worker, one at a time."""
    return _native.run_points(
        points, grid_keys, jobs=1, profile=profile, check=check, max_memory=max_memory
    )


def sweep(
    scenarios: Scenarios,
    grid: Mapping[str, Any],
    client=None,
    grid_zip: Optional[bool] = None,
    arch: Optional[str] = None,
    overrides: Overrides = None,
    seed: Optional[int] = None,
    profile: Optional[str] = None,
    *,
    batch_size: int = 1,
    check: bool = False,
    max_memory: Optional[int] = None,
    allow_large: bool = False,
    set: Overrides = None,
    zip: Optional[bool] = None,
):
    """``foliosim.sweep`` on a Dask cluster: one task per ``batch_size``
    points, submitted to ``client`` (default: the current client,
    ``distributed.get_client()``). Arguments and result as for
    ``foliosim.sweep``; ``max_memory`` applies to each point (a worker
    runs one point at a time per thread). ``set=`` and ``zip=`` are the
    deprecated names of ``overrides=`` and ``grid_zip=``.
    """
    from dask.distributed import get_client

    if batch_size < 1:
        raise ValueError("batch_size: expected at least 1")
    if client is None:
        client = get_client()
    overrides = _renamed(overrides, set, "overrides", "set")
    grid_zip = _renamed(grid_zip, zip, "grid_zip", "zip", default=False)
    keys, points, provenance = _expand(
        scenarios, grid, grid_zip, arch, overrides, seed, allow_large, profile
    )
    batches = [points[i : i + batch_size] for i in range(0, len(points), batch_size)]
    futures = client.map(
        _run_batch,
        batches,
        grid_keys=keys,
        profile=profile,
        check=check,
        max_memory=max_memory,
    )
    parts = client.gather(futures)
    columns = parts[0][0] if parts else []
    data = {c: [] for c in columns}
    for cols, part in parts:
        assert list(cols) == list(columns), "every batch has the sweep's columns"
        for c in columns:
            data[c].extend(part[c])
    return _sweep_frame(columns, data, provenance)
