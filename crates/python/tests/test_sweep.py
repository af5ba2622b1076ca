"""foliosim.sweep and foliosim.dask.sweep: the tidy table of a grid."""

import pytest

import foliosim

# arch × folio size on seed 003's 256 MiB write scan (65536 4 KiB pages):
# 4K faults once per page; 64K maps a 16-page folio per fault (65536 / 16
# = 4096 faults and hugepages-64kB/anon_fault_alloc); 2M maps a PMD THP
# per fault (the mapping is PMD-aligned: 256 MiB / 2 MiB = 128), on both
# architectures (4 KiB granule).
GRID = {"arch": ["x86_64", "arm64"], "folio_size": ["4K", "64K", "2M"]}
FAULTS = {"4K": 65536, "64K": 4096, "2M": 128}
COLUMNS = ["point", "folio_size", *foliosim.SWEEP_COLUMNS]


def counter(df, name):
    """{(arch, folio_size): value} of one counter."""
    rows = df[df["name"] == name]
    return {(a, f): int(v) for a, f, v in zip(rows["arch"], rows["folio_size"], rows["value"])}


def test_sweep_table(anon_scan):
    df = foliosim.sweep(anon_scan, grid=GRID, jobs=2)
    assert list(df.columns) == COLUMNS
    # The last key varies fastest: points 0-2 are x86_64, 3-5 arm64.
    firsts = df.groupby("point", sort=True).first()
    assert list(firsts["arch"]) == ["x86_64"] * 3 + ["arm64"] * 3
    assert list(firsts["folio_size"]) == ["4K", "64K", "2M"] * 2
    assert (df["error"] == "").all() and (df["engine"] == "sim").all()
    assert (df["scenario"] == "seed003-anon-scan").all()
    assert str(df["value"].dtype) == "Int64"
    assert counter(df, "pgfault") == {(a, f): n for a in GRID["arch"] for f, n in FAULTS.items()}
    assert counter(df, "hugepages-64kB/anon_fault_alloc") == {
        (a, f): 4096 if f == "64K" else 0 for a in GRID["arch"] for f in FAULTS
    }
    assert counter(df, "thp_fault_alloc") == {
        (a, f): 128 if f == "2M" else 0 for a in GRID["arch"] for f in FAULTS
    }


def test_each_point_is_the_run_of_its_settings(anon_scan):
    # A point's rows are run()'s tidy rows for the same overrides.
    df = foliosim.sweep(anon_scan, grid={"fault_around_bytes": [4096, 65536]}, arch="arm64")
    r = foliosim.run(anon_scan, arch="arm64", set={"fault_around_bytes": 65536})
    mine = df[df["point"] == 1].reset_index(drop=True)
    expect = r.to_pandas()
    assert len(mine) == len(expect)
    for c in foliosim.TIDY_COLUMNS:
        assert mine[c].astype(object).tolist() == expect[c].astype(object).tolist(), c
    assert (mine["fault_around_bytes"] == 65536).all()


def test_zip_takes_lists_together(anon_scan):
    df = foliosim.sweep(
        anon_scan,
        grid={"arch": ["x86_64", "arm64"], "folio_size": "64K,2M"},
        zip=True,
    )
    assert df["point"].nunique() == 2
    assert counter(df, "pgfault") == {("x86_64", "64K"): 4096, ("arm64", "2M"): 128}


def test_failed_point_is_a_row_with_its_error(anon_scan):
    # The memory estimate grows with the machine's page frames: a 64 GiB
    # machine is refused within 200 MiB, the 2 GiB one runs.
    df = foliosim.sweep(anon_scan, grid={"memory": ["2G", "64G"]}, jobs=1, max_memory=200 << 20)
    ok, bad = df[df["point"] == 0], df[df["point"] == 1]
    assert (ok["error"] == "").all() and len(ok) > 100
    assert len(bad) == 1
    (err,) = bad["error"]
    assert err.startswith(str(anon_scan)) and "more than the 200 MiB" in err
    assert bad["value"].isna().all() and (bad["name"] == "").all()


@pytest.mark.parametrize(
    "grid, kw, message",
    [
        ({"fault_around_bytes": ["lots"]}, {}, r"^grid fault_around_bytes=lots .*expected a size"),
        ({"no_such_knob": [1]}, {}, "unknown key `no_such_knob`"),
        ({"value": [1]}, {}, "is a column of the sweep's table"),
        ({"arch": ["x86_64", "arm64"], "folio_size": ["4K"]}, {"zip": True}, "one length"),
        ({}, {}, "the grid is empty"),
        ({"fault_around_bytes": "4096<<[0..x]"}, {}, "not an integer"),
        ({"folio_size": ["8K"]}, {}, "not a folio size the model has"),
        ({"fault_around_bytes": [None]}, {}, "^grid fault_around_bytes: expected a string"),
        ({"fault_around_bytes": 4096}, {}, "^grid fault_around_bytes: expected a list"),
        ({"fault_around_bytes": [4096]}, {"set": {"bogus": 1}}, "^set bogus=1: .*unknown key"),
        ({"fault_around_bytes": [4096]}, {"jobs": 0}, "jobs: expected at least 1"),
    ],
)
def test_bad_sweeps_raise_before_running(anon_scan, grid, kw, message):
    with pytest.raises(ValueError, match=message):
        foliosim.sweep(anon_scan, grid=grid, **kw)


def test_missing_scenario(tmp_path):
    with pytest.raises(FileNotFoundError, match="absent.toml"):
        foliosim.sweep(tmp_path / "absent.toml", grid={"folio_size": ["4K"]})


def test_too_many_points_need_allow_large(anon_scan):
    with pytest.raises(ValueError, match="more than 10000"):
        foliosim.sweep(anon_scan, grid={"seed": "[0..10000]"})


@pytest.fixture(scope="module")
def dask_client():
    distributed = pytest.importorskip("dask.distributed")
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    )
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.mark.parametrize("batch_size", [1, 4])
def test_dask_sweep_equals_sweep(anon_scan, dask_client, batch_size):
    import pandas.testing

    import foliosim.dask

    local = foliosim.sweep(anon_scan, grid=GRID)
    remote = foliosim.dask.sweep(anon_scan, grid=GRID, client=dask_client, batch_size=batch_size)
    pandas.testing.assert_frame_equal(remote, local)
    # The points ran in the workers' processes: the binding is loaded there.
    loaded = dask_client.run(lambda: __import__("sys").modules.get("foliosim._native") is not None)
    assert len(loaded) == 2 and any(loaded.values())
    assert counter(remote, "pgfault")[("arm64", "64K")] == 4096


def test_dask_sweep_keeps_failed_points(anon_scan, dask_client):
    import pandas.testing

    import foliosim.dask

    kw = dict(grid={"memory": ["2G", "64G"]}, max_memory=200 << 20)
    local = foliosim.sweep(anon_scan, jobs=1, **kw)
    remote = foliosim.dask.sweep(anon_scan, client=dask_client, **kw)
    pandas.testing.assert_frame_equal(remote, local)
    assert (remote["error"] != "").sum() == 1


def test_dask_sweep_errors_are_raised_by_the_client(anon_scan, dask_client):
    import foliosim.dask

    with pytest.raises(ValueError, match="unknown key"):
        foliosim.dask.sweep(anon_scan, grid={"no_such_knob": [1]}, client=dask_client)
    with pytest.raises(ValueError, match="batch_size"):
        foliosim.dask.sweep(anon_scan, grid=GRID, client=dask_client, batch_size=0)


def test_sweep_keeps_raw_pagemap_entries_exact():
    # 64-bit pagemap entries (bit 63: present) do not fit in Int64: the
    # column holds exact Python ints, the ones run() reports.
    from conftest import SCENARIOS

    path = SCENARIOS / "corpus" / "pagemap-anon-mthp-64k.toml"
    df = foliosim.sweep(path, grid={"arch": ["x86_64", "arm64"]})
    assert df["value"].dtype == object
    for arch in ["x86_64", "arm64"]:
        mine = df[(df["arch"] == arch) & (df["kind"] == "pagemap")]["value"].tolist()
        r = foliosim.run(path, arch=arch).to_pandas()
        assert mine == r[r["kind"] == "pagemap"]["value"].tolist()
        assert sum(1 for v in mine if v >> 63) == 256


def test_dask_module_loads_on_first_use():
    # `import foliosim` imports neither foliosim.dask nor Dask; the
    # attribute foliosim.dask imports the module when first used.
    import subprocess
    import sys

    code = (
        "import sys, foliosim; "
        "assert 'foliosim.dask' not in sys.modules and 'distributed' not in sys.modules; "
        "f = foliosim.dask.sweep; assert 'foliosim.dask' in sys.modules; "
        "print(f.__module__)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "foliosim.dask"
    with pytest.raises(AttributeError):
        foliosim.no_such_thing


def _cli():
    """The foliosim binary of this checkout (cargo test builds the debug
    one), or None."""
    from conftest import REPO

    for profile in ("release", "debug"):
        exe = REPO / "target" / profile / "foliosim"
        if exe.exists():
            return exe
    return None


def test_dask_sweep_of_seed000_equals_the_cli(tmp_path, dask_client):
    """The 72-point seed-000 sweep (sweeps/seed000-pageout.toml) through
    foliosim.dask.sweep is the table `foliosim sweep` writes, row for row."""
    import subprocess

    import pandas
    import pandas.testing

    import foliosim.dask
    from conftest import REPO

    exe = _cli()
    if exe is None:
        pytest.skip("no foliosim binary in target/ (cargo build first)")
    out = tmp_path / "cli.csv"
    subprocess.run(
        [exe, "sweep", "--file", REPO / "sweeps" / "seed000-pageout.toml", "-q", "-o", out],
        check=True,
    )
    cli = pandas.read_csv(out, dtype=str, keep_default_na=False)
    # The provenance columns are the DataFrame's attrs.
    cli = cli[[c for c in cli.columns if not c.startswith("provenance.")]]
    grid = {
        "arch": ["x86_64", "arm64"],
        "series.batch_anon_unmap": [0, 1],
        "folio_size": ["4K", "16K", "64K", "256K", "1M", "2M"],
        "swap.0.kind": ["file", "block", "zram"],
    }
    df = foliosim.dask.sweep(
        REPO / "scenarios" / "seed000" / "pageout-256m.toml", grid=grid, client=dask_client
    )
    assert len(df) == len(cli) and df["point"].nunique() == 72
    as_text = df.astype(object).where(df.notna(), "").astype(str).replace({"<NA>": "", "nan": "", "None": ""})
    assert list(as_text.columns) == list(cli.columns)
    pandas.testing.assert_frame_equal(as_text.reset_index(drop=True), cli)
