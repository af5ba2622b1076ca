"""Bad input is a Python exception naming the file, line and field; a
panic in the model is an exception too, never an abort."""

import re

import pytest

import foliosim


def test_missing_scenario_is_file_not_found(tmp_path):
    missing = tmp_path / "absent.toml"
    with pytest.raises(FileNotFoundError, match=re.escape(str(missing))):
        foliosim.run(missing)


def test_directory_is_an_os_error(tmp_path):
    with pytest.raises(OSError, match="cannot read the scenario"):
        foliosim.run(tmp_path)


def test_syntax_error_names_file_line_and_column(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "x"\n\n[system]\nmemory = \n')
    with pytest.raises(ValueError) as e:
        foliosim.run(bad)
    assert re.match(re.escape(str(bad)) + r":4:\d+: ", str(e.value)), str(e.value)


def test_bad_field_value_names_its_place(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(
        'name = "x"\n[system]\nmemory = "lots"\n'
        '[[step]]\nop = "mmap"\nregion = "a"\nkind = "anon"\nsize = "1M"\n'
    )
    with pytest.raises(ValueError, match=re.escape(f"{bad}:3:10: system.memory: expected a size")):
        foliosim.run(bad)


def test_unknown_key_names_the_override(anon_scan):
    with pytest.raises(ValueError, match=r"^set bogus_knob=1: .*unknown key"):
        foliosim.run(anon_scan, set={"bogus_knob": 1})


def test_bad_override_value(anon_scan):
    with pytest.raises(ValueError, match="set fault_around_bytes=lots: .*expected a size"):
        foliosim.run(anon_scan, set=["fault_around_bytes=lots"])


@pytest.mark.parametrize(
    "set_, message",
    [
        ("fault_around_bytes=4096", "not a string"),
        (["fault_around_bytes"], "expected KEY=VALUE"),
        ({"fault_around_bytes": None}, "expected a string, a number or a bool, not NoneType"),
        ({1: "2"}, "keys must be strings"),
    ],
)
def test_malformed_set_argument(anon_scan, set_, message):
    with pytest.raises(ValueError, match=message):
        foliosim.run(anon_scan, set=set_)


def test_unknown_arch(anon_scan):
    with pytest.raises(ValueError, match='arch "sparc": expected one of x86_64, arm64'):
        foliosim.run(anon_scan, arch="sparc")


def test_unknown_profile(anon_scan):
    with pytest.raises(ValueError, match="no shipped profile of that name"):
        foliosim.run(anon_scan, profile="no-such-cpu")


def test_model_refusal_is_a_simulation_error(anon_scan):
    # 256 MiB of anonymous memory cannot be simulated within 1 MiB.
    with pytest.raises(foliosim.SimulationError, match=re.escape(str(anon_scan))):
        foliosim.run(anon_scan, max_memory=1 << 20)


def test_a_panic_in_the_model_is_an_exception():
    # The guard around every run turns a panic into SimulationError (a
    # RuntimeError) naming where it happened; the interpreter goes on.
    with pytest.raises(foliosim.SimulationError) as e:
        foliosim._native._panic_in_guard("pfn out of range")
    assert isinstance(e.value, RuntimeError)
    assert "internal error in the model" in str(e.value)
    assert re.search(r"pfn out of range \(at .*lib\.rs:\d+\)", str(e.value))


# Every kind of failure is its own exception class; all but bad input are
# SimulationError (so code catching it still works), bad input ValueError.


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_the_kinds_are_simulation_errors():
    for kind in (
        foliosim.UnsupportedError,
        foliosim.KilledError,
        foliosim.ModelBugError,
        foliosim.HostError,
        foliosim.GuestError,
    ):
        assert issubclass(kind, foliosim.SimulationError), kind
    assert issubclass(foliosim.UsageError, ValueError)
    assert not issubclass(foliosim.UsageError, foliosim.SimulationError)


def test_a_bad_key_is_a_usage_error(anon_scan):
    with pytest.raises(foliosim.UsageError, match=r"^set bogus_knob=1: "):
        foliosim.run(anon_scan, set={"bogus_knob": 1})


def test_a_touch_past_the_end_of_a_file_is_killed_by_sigbus(tmp_path):
    # A 64 KiB file mapped with 128 KiB: a page past the file's end has no
    # page to fault in, and filemap_fault() answers VM_FAULT_SIGBUS.
    path = write(
        tmp_path,
        "sigbus.toml",
        '[[file]]\nname = "f"\nsize = "64K"\n'
        '[[step]]\nop = "mmap"\nregion = "m"\nkind = "file"\nfile = "f"\nsize = "128K"\nprot = "r"\n'
        '[[step]]\nop = "touch"\nregion = "m"\naccess = "read"\n',
    )
    with pytest.raises(foliosim.KilledError, match="SIGBUS") as e:
        foliosim.run(path)
    assert str(e.value).startswith(f"{path}:"), str(e.value)


def test_a_touch_of_an_unmapped_range_is_killed_by_sigsegv(tmp_path):
    # The range was unmapped: no VMA covers the address, so the fault is
    # a bad area and the process gets SIGSEGV.
    path = write(
        tmp_path,
        "sigsegv.toml",
        '[[step]]\nop = "mmap"\nregion = "a"\nkind = "anon"\nsize = "64K"\n'
        '[[step]]\nop = "munmap"\nregion = "a"\n'
        '[[step]]\nop = "touch"\nregion = "a"\naccess = "write"\n',
    )
    with pytest.raises(foliosim.KilledError, match="SIGSEGV"):
        foliosim.run(path)


def test_a_memcg_oom_is_unsupported(tmp_path):
    # 1,024 anonymous pages written into a 256-page cgroup without swap:
    # the kernel would call the memcg OOM killer, which is not modelled.
    path = write(
        tmp_path,
        "oom.toml",
        '[[step]]\nop = "memcg"\nlimit = "1M"\n'
        '[[step]]\nop = "mmap"\nregion = "a"\nkind = "anon"\nsize = "4M"\n'
        '[[step]]\nop = "touch"\nregion = "a"\naccess = "write"\n',
    )
    with pytest.raises(foliosim.UnsupportedError, match="memcg OOM"):
        foliosim.run(path)


def test_a_panic_in_the_model_is_a_model_bug():
    with pytest.raises(foliosim.ModelBugError, match="internal error in the model"):
        foliosim._native._panic_in_guard("rmap out of step")


def test_a_simulation_too_large_for_the_host_is_a_host_error(anon_scan):
    with pytest.raises(foliosim.HostError, match="would need about"):
        foliosim.run(anon_scan, max_memory=1 << 20)


def test_a_simulated_sweep_refuses_repeats(anon_scan):
    # The simulator gives every run of a point the same report.
    with pytest.raises(ValueError, match="deterministic"):
        foliosim.sweep(anon_scan, {"repeat": [1, 2]})
