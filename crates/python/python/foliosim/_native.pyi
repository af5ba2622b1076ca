"""Types of the extension module ``foliosim._native`` (Rust, PyO3), which
the ``foliosim`` package wraps; use ``foliosim`` itself."""

from os import PathLike
from typing import Dict, List, Mapping, Optional, Sequence, Tuple, Union

__version__: str
#: The git commit foliosim was built from ("unknown" outside a checkout).
COMMIT: str
#: The architectures a scenario may name.
ARCHS: List[str]

_Overrides = Union[Mapping[str, object], Sequence[str], None]
#: (index, scenario file, scenario name, arch, grid, overrides).
_Point = Tuple[int, str, str, str, List[Tuple[str, str]], List[Tuple[str, str]]]
#: {column: [values]}: text, but `point` (int) and `value` (int or None).
_Columns = Dict[str, list]

class SimulationError(RuntimeError): ...
class UnsupportedError(SimulationError): ...
class KilledError(SimulationError): ...
class ModelBugError(SimulationError): ...
class HostError(SimulationError): ...
class GuestError(SimulationError): ...
class UsageError(ValueError): ...

class NativeReport:
    @property
    def scenario(self) -> str: ...
    @property
    def arch(self) -> str: ...
    @property
    def engine(self) -> str: ...
    @property
    def system(self) -> Dict[str, str]: ...
    @property
    def phases(self) -> List[str]: ...
    @property
    def expectations_ok(self) -> bool: ...
    def value(self, phase: str, name: str) -> int: ...
    def to_json(self) -> str: ...
    def tidy(self) -> _Columns: ...

def run(
    path: Union[str, "PathLike[str]"],
    arch: Optional[str] = None,
    set: _Overrides = None,
    seed: Optional[int] = None,
    profile: Optional[str] = None,
    check: bool = False,
    max_memory: Optional[int] = None,
) -> NativeReport: ...
def expand(
    scenarios: Sequence[str],
    grid: Mapping[str, object],
    zip: bool = False,
    arch: Optional[str] = None,
    set: _Overrides = None,
    seed: Optional[int] = None,
    allow_large: bool = False,
    profile: Optional[str] = None,
) -> Tuple[List[str], List[_Point], str]: ...
def run_points(
    points: Sequence[_Point],
    grid_keys: Sequence[str],
    jobs: Optional[int] = None,
    profile: Optional[str] = None,
    check: bool = False,
    max_memory: Optional[int] = None,
) -> Tuple[List[str], _Columns]: ...
def grid_types(columns: Mapping[str, Sequence[str]]) -> List[Tuple[str, str]]: ...
def read_table(
    path: Union[str, "PathLike[str]"],
) -> Tuple[List[str], _Columns, List[str], Optional[str]]: ...
def diff(
    a: str,
    b: Optional[str] = None,
    by: Optional[str] = None,
    columns: Optional[Sequence[str]] = None,
    only: Optional[Sequence[str]] = None,
    all: bool = False,
    format: str = "text",
) -> str: ...
def _panic_in_guard(message: str) -> None: ...
