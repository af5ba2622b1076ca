"""The package as a Python library: its version and types, typed sweep
tables with their provenance, reading tables back, diffs, and the
renamed arguments."""

import importlib.metadata
import importlib.resources
import json
import re
import subprocess

import pytest

import foliosim
from foliosim import _native

MTHP_64K = {"transparent_hugepage.hugepages-64kB.enabled": "always"}


def _cli():
    """The foliosim binary of this checkout, or None."""
    from conftest import REPO

    for profile in ("release", "debug"):
        exe = REPO / "target" / profile / "foliosim"
        if exe.exists():
            return exe
    return None


def test_version_and_type_information():
    assert re.fullmatch(r"\d+\.\d+\.\d+.*", foliosim.__version__)
    # The wheel's version is the crate's.
    assert importlib.metadata.version("foliosim") == foliosim.__version__
    files = importlib.resources.files("foliosim")
    assert (files / "py.typed").is_file()
    stub = (files / "_native.pyi").read_text()
    # Every public function of the extension has a stub.
    public = [n for n in dir(_native) if callable(getattr(_native, n)) and not n[0].isupper()]
    for name in public:
        if not name.startswith("__"):
            assert f"def {name}(" in stub, name
    assert re.fullmatch(r"[0-9a-f]{4,40}|unknown", _native.COMMIT)
    exe = _cli()
    if exe is not None:
        assert _cli_commit(exe) is not None


def _cli_commit(exe):
    """The commit `foliosim --version` names (the binary may be older
    than the extension)."""
    out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True)
    m = re.fullmatch(rf"foliosim {re.escape(foliosim.__version__)} \((\w+)\)", out.stdout.strip())
    return m and m.group(1)


def test_grid_columns_are_typed_and_errors_are_na(anon_scan):
    grid = {
        "series.batch_anon_unmap": [0, 1],
        "transparent_hugepage.hugepages-64kB.enabled": ["always", "never"],
    }
    df = foliosim.sweep(anon_scan, grid=grid, jobs=2)
    assert str(df["series.batch_anon_unmap"].dtype) == "Int64"
    assert str(df["transparent_hugepage.hugepages-64kB.enabled"].dtype) == "string"
    on = df[df["series.batch_anon_unmap"] == 1]
    assert set(on["point"]) == {2, 3}
    assert df["error"].isna().all()
    # 64 KiB folios when enabled: 65536 pages / 16 = 4096 faults (the
    # scan's 256 MiB), else one per page.
    faults = df[df["name"] == "pgfault"]
    by = dict(zip(faults["transparent_hugepage.hugepages-64kB.enabled"], faults["value"]))
    assert by == {"always": 4096, "never": 65536}
    # Booleans: a grid of False/True is a boolean column; a float one Float64.
    df = foliosim.sweep(anon_scan, grid={"series.batch_anon_unmap": [False, True]})
    assert str(df["series.batch_anon_unmap"].dtype) == "boolean"
    assert set(df[df["series.batch_anon_unmap"] == True]["point"]) == {1}  # noqa: E712
    # A failed point's error is text, the others' NA.
    df = foliosim.sweep(anon_scan, grid={"memory": ["2G", "64G"]}, jobs=1, max_memory=200 << 20)
    assert df[df["point"] == 0]["error"].isna().all()
    assert "more than the 200 MiB" in df[df["point"] == 1]["error"].iloc[0]


def test_the_sweep_provenance_is_in_attrs(anon_scan):
    df = foliosim.sweep(
        anon_scan, grid={"folio_size": ["4K", "64K"]}, overrides=MTHP_64K, seed=3, arch="arm64"
    )
    p = df.attrs["provenance"]
    assert p["foliosim"] == foliosim.__version__
    assert p["commit"] == _native.COMMIT
    assert p["engine"] == "sim"
    assert p["scenario_path"] == str(anon_scan)
    assert p["seed"] == 3
    assert p["overrides"] == [
        {"option": "--set", "key": "transparent_hugepage.hugepages-64kB.enabled", "value": "always"},
        {"option": "--arch", "key": "arch", "value": "arm64"},
        {"option": "--seed", "key": "seed", "value": "3"},
    ]
    assert "profile" not in p and p["kernel"] is None


def test_old_argument_names_still_work_and_warn(anon_scan):
    new = foliosim.run(anon_scan, overrides=MTHP_64K)
    with pytest.warns(DeprecationWarning, match="set= is deprecated: use overrides="):
        old = foliosim.run(anon_scan, set=MTHP_64K)
    assert old.to_dict()["phases"] == new.to_dict()["phases"]
    assert new.value("measured", "hugepages-64kB/anon_fault_alloc") == 4096
    with pytest.raises(TypeError, match="give overrides= only"):
        foliosim.run(anon_scan, overrides=MTHP_64K, set=MTHP_64K)
    grid = {"arch": ["x86_64", "arm64"], "folio_size": ["4K", "64K"]}
    zipped = foliosim.sweep(anon_scan, grid=grid, grid_zip=True)
    assert zipped["point"].nunique() == 2
    with pytest.warns(DeprecationWarning, match="zip= is deprecated: use grid_zip="):
        old = foliosim.sweep(anon_scan, grid=grid, zip=True)
    assert old.equals(zipped)


@pytest.fixture
def tables(tmp_path):
    """A sweep `foliosim sweep` wrote in each format, and its arguments."""
    from conftest import SCENARIOS

    exe = _cli()
    if exe is None:
        pytest.skip("no foliosim binary in target/ (cargo build first)")
    scenario = SCENARIOS / "seed003" / "anon-scan.toml"
    args = [
        exe, "sweep", scenario, "--grid", "series.batch_anon_unmap=0,1",
        "--grid", "folio_size=4K,64K", "--set", "fault_around_bytes=8192", "-q", "-o",
    ]  # fmt: skip
    paths = {}
    for ext in ("csv", "jsonl", "arrow", "parquet"):
        paths[ext] = tmp_path / f"t.{ext}"
        subprocess.run([*args, paths[ext]], check=True)
    return exe, scenario, paths, _cli_commit(exe)


def test_read_table_reads_every_format_as_sweep_returns(tables):
    _, scenario, paths, commit = tables
    direct = foliosim.sweep(
        scenario,
        grid={"series.batch_anon_unmap": [0, 1], "folio_size": ["4K", "64K"]},
        overrides={"fault_around_bytes": "8192"},
    )
    for ext, path in paths.items():
        df = foliosim.read_table(path)
        assert list(df.columns) == list(direct.columns), ext
        assert df.dtypes.astype(str).tolist() == direct.dtypes.astype(str).tolist(), ext
        assert df.drop(columns="scenario").equals(direct.drop(columns="scenario")), ext
        p = df.attrs["provenance"]
        assert p["commit"] == commit and p["engine"] == "sim", ext
        assert p["overrides"] == [
            {"option": "--set", "key": "fault_around_bytes", "value": "8192"}
        ], ext
    with pytest.raises(FileNotFoundError):
        foliosim.read_table(paths["csv"].with_name("absent.csv"))


def test_pandas_reads_the_parquet_table_typed(tables):
    import pandas as pd
    import pyarrow.parquet as pq

    _, _, paths, commit = tables
    df = pd.read_parquet(paths["parquet"])
    assert str(df["series.batch_anon_unmap"].dtype) == "int64"
    assert set(df["series.batch_anon_unmap"]) == {0, 1}
    assert len(df[df["series.batch_anon_unmap"] == 1]) == len(df) // 2
    meta = pq.read_schema(paths["parquet"]).metadata[b"foliosim.provenance"]
    assert json.loads(meta)["commit"] == commit
    # The CSV's provenance columns, as pandas reads them with no option
    # but the commit's type: pandas takes an abbreviated hash made of
    # digits, or of digits around one `e` (66e31768), for a number.
    csv = pd.read_csv(paths["csv"], dtype={"provenance.commit": str})
    assert (csv["provenance.commit"] == commit).all()
    assert (csv["provenance.overrides"] == "--set 'fault_around_bytes=8192'").all()


def test_diff_is_what_foliosim_diff_prints(tables, tmp_path):
    exe, scenario, paths, _ = tables
    for path in (paths["csv"], paths["parquet"]):
        cli = subprocess.run(
            [exe, "diff", path, "--by", "series.batch_anon_unmap"],
            capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
        assert foliosim.diff(path, by="series.batch_anon_unmap") == cli
    # Two reports: Report objects or report files.
    base = foliosim.run(scenario)
    patched = foliosim.run(scenario, overrides=MTHP_64K)
    files = []
    for name, r in (("base.json", base), ("patched.json", patched)):
        files.append(tmp_path / name)
        files[-1].write_text(r.to_json())
    cli = subprocess.run(
        [exe, "diff", *files, "--format", "md"], capture_output=True, text=True, check=True
    ).stdout
    assert foliosim.diff(base, patched, output_format="md") == cli
    assert foliosim.diff(*files, output_format="md") == cli
    # 65536 faults of 4 KiB pages against 4096 of 64 KiB folios.
    j = foliosim.diff(base, patched, output_format="json", only=["pgfault"])
    assert "pgfault" in json.dumps(j) and "65536" in json.dumps(j)
    with pytest.raises(foliosim.UsageError, match="no_such_key"):
        foliosim.diff(paths["csv"], by="no_such_key")
    with pytest.raises(TypeError):
        foliosim.diff(base)
