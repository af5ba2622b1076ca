"""foliosim.run: results whose counts follow from the kernel's rules."""

import threading
from pathlib import Path

import pytest

import foliosim

MTHP_64K = {"transparent_hugepage.hugepages-64kB.enabled": "always"}
PAGES = (256 << 20) // 4096  # 65536 base pages in the 256 MiB mapping


def test_order0_scan_faults_once_per_page(anon_scan):
    # Every mTHP size `never`, 2 MiB `inherit` of a top level `madvise`
    # without MADV_HUGEPAGE: do_anonymous_page() maps one 4 KiB page per
    # write fault, so 65536 faults and 65536 order-0 folios.
    r = foliosim.run(anon_scan)
    assert r.phases == ["measured"]
    assert r.engine == "sim" and r.arch == "x86_64"
    assert r.value("measured", "pgfault") == PAGES
    assert r.value("measured", "thp_fault_alloc") == 0
    assert r.value("measured", "folios/heap/4kB") == PAGES
    assert r.value("measured", "folios/heap/64kB") == 0  # no such bucket: 0


@pytest.mark.parametrize("arch", foliosim.ARCHS)
def test_64k_mthp_scan_on_each_arch(anon_scan, arch):
    # hugepages-64kB=always: alloc_anon_folio() takes order 4 for each
    # aligned 64 KiB range, and the write fault maps all 16 PTEs of the
    # folio, so 65536 / 16 = 4096 faults, 4096 64 KiB folios and 4096
    # hugepages-64kB/anon_fault_alloc, on either architecture.
    r = foliosim.run(anon_scan, arch=arch, set=MTHP_64K)
    assert r.arch == arch
    assert r.system["transparent_hugepage.hugepages-64kB.enabled"] == "always"
    nr_folios = PAGES // 16
    assert r.value("measured", "pgfault") == nr_folios
    assert r.value("measured", "hugepages-64kB/anon_fault_alloc") == nr_folios
    assert r.value("measured", "folios/heap/64kB") == nr_folios
    assert r.value("measured", "folios/heap/pages_present") == PAGES
    if arch == "arm64":
        # A 64 KiB folio is one contpte block of the 4 KiB granule:
        # contpte_set_ptes() writes each block with the CONT bit at once.
        assert r.value("measured", "sim/contpte_set_blocks") == nr_folios
        with pytest.raises(KeyError):
            r.value("measured", "tlb:tlb_flush")  # an x86-only tracepoint


def test_pmd_thp_scan(anon_scan):
    # THP `always`, 2 MiB `inherit`: the 256 MiB mapping is PMD-aligned
    # (anonymous mappings of a PMD multiple are placed on PMD boundaries,
    # thp_get_unmapped_area()), so do_huge_pmd_anonymous_page() maps
    # 256 MiB / 2 MiB = 128 huge pages with one fault each.
    r = foliosim.run(anon_scan, set=["transparent_hugepage.enabled=always"])
    assert r.value("measured", "thp_fault_alloc") == 128
    assert r.value("measured", "pgfault") == 128
    assert r.value("measured", "folios/heap/2048kB") == 128


def test_to_dict_is_the_json_shape(anon_scan):
    d = foliosim.run(anon_scan, set=MTHP_64K).to_dict()
    assert list(d) == [
        "scenario",
        "arch",
        "engine",
        "provenance",
        "system",
        "phases",
        "expectations",
    ]
    assert d["scenario"] == "seed003-anon-scan"
    (phase,) = d["phases"]
    assert phase["name"] == "measured"
    assert phase["counters"]["hugepages-64kB/anon_fault_alloc"] == PAGES // 16
    assert phase["folios"]["heap"]["64kB"] == PAGES // 16
    # Modelled time from the architecture's shipped profile.
    assert phase["profile"] == "x86_64-kvm-host"
    # The total and each share are rounded to ns separately.
    assert abs(phase["modelled_ns"] - sum(phase["breakdown"].values())) <= len(
        phase["breakdown"]
    )
    assert phase["modelled_ns"] > 0


def test_to_pandas_is_tidy(anon_scan):
    r = foliosim.run(anon_scan, set=MTHP_64K)
    df = r.to_pandas()
    assert tuple(df.columns) == foliosim.TIDY_COLUMNS
    d = r.to_dict()
    (phase,) = d["phases"]
    # One row per counter, per folio cell and per modelled-time value.
    n_folios = sum(len(h) for h in phase["folios"].values())
    assert len(df) == len(phase["counters"]) + n_folios + 1 + len(phase["breakdown"])
    assert set(df["kind"]) == {"counter", "folios", "time"}
    assert (df["scenario"] == "seed003-anon-scan").all()
    assert (df["arch"] == "x86_64").all() and (df["engine"] == "sim").all()
    assert str(df["value"].dtype) == "int64"
    assert not df.duplicated(["phase", "name"]).any()
    row = df[(df["name"] == "hugepages-64kB/anon_fault_alloc")]
    assert row["value"].tolist() == [PAGES // 16]
    assert row["kind"].tolist() == ["counter"]
    total = df[df["name"] == "modelled_ns"]["value"].item()
    assert total == phase["modelled_ns"] == r.value("measured", "modelled_ns")


def test_seed_and_profile_options(anon_scan):
    r = foliosim.run(anon_scan, arch="arm64", seed=7, profile="arm64-neoverse")
    assert r.to_dict()["phases"][0]["profile"] == "arm64-neoverse"
    assert r.arch == "arm64"
    # A profile describes one CPU: another architecture's is refused.
    with pytest.raises(ValueError, match="is for arm64"):
        foliosim.run(anon_scan, profile="arm64-neoverse")


def test_override_values_of_python_types(tmp_path, anon_scan):
    # Numbers and booleans are written as the scenario language reads them.
    r = foliosim.run(
        anon_scan,
        set={"fault_around_bytes": 4096, "series.batch_anon_unmap": True},
    )
    assert r.system["fault_around_bytes"] == "4096"
    assert r.system["series.batch_anon_unmap"] == "1"


def test_threads_run_in_parallel_and_agree(anon_scan):
    # The lock is released while simulating; results stay deterministic.
    out = [None] * 4

    def work(i):
        out[i] = foliosim.run(anon_scan, set=MTHP_64K).to_dict()

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(o == out[0] for o in out)
    assert out[0]["phases"][0]["counters"]["pgfault"] == PAGES // 16


def test_raw_pagemap_entries_stay_exact():
    # pagemap-anon-mthp-64k writes to every 64 KiB block of the first
    # 1 MiB of a 2 MiB anonymous region (64 KiB mTHP): its 256 pages are
    # present (bit 63 of a pagemap entry) and mapped once (bit 56), the
    # other 256 entries are holes (0). Entries with bit 63 do not fit in
    # int64: the column keeps them as exact Python ints.
    from conftest import SCENARIOS

    r = foliosim.run(SCENARIOS / "corpus" / "pagemap-anon-mthp-64k.toml")
    df = r.to_pandas()
    pm = df[df["kind"] == "pagemap"]
    assert len(pm) == 512
    assert df["value"].dtype == object
    present = [v for v in pm["value"] if v >> 63]
    assert len(present) == 256
    assert all(v >> 56 & 1 for v in present)
    assert (pm["value"] == 0).sum() == 256
    first = pm.iloc[0]
    assert r.value(first["phase"], first["name"]) == first["value"]


def test_provenance_repeats_the_run_on_the_command_line(anon_scan):
    # The overrides as foliosim run's options, in the order applied.
    p = foliosim.run(anon_scan, arch="arm64", set=MTHP_64K, seed=7).to_dict()["provenance"]
    assert p["scenario_path"] == str(anon_scan)
    assert p["seed"] == 7
    assert p["foliosim"]  # the version
    assert p["overrides"] == [
        {
            "option": "--set",
            "key": "transparent_hugepage.hugepages-64kB.enabled",
            "value": "always",
        },
        {"option": "--arch", "key": "arch", "value": "arm64"},
        {"option": "--seed", "key": "seed", "value": "7"},
    ]


def test_a_recording_runs_as_its_replay():
    # scenarios/recordings/python3-dict.rec: CPython building a dict and a
    # list, recorded with `foliosim record`. Its summary counts 64,369
    # faults, 64,365 of them replayable (2 in the vdso, 2 taken by the ELF
    # loader before exec returned); the replay faults exactly those (two of
    # them major: files the program read cold replay cold).
    rec = Path(__file__).resolve().parents[3] / "scenarios" / "recordings" / "python3-dict.rec"
    r = foliosim.run(rec)
    assert r.phases == ["replay"]
    assert r.value("replay", "minor-faults") + r.value("replay", "major-faults") == 64365
