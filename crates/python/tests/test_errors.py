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
