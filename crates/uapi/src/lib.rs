//! The vocabulary shared by every layer of foliosim, as `include/uapi` is
//! for Linux: what the scenario language writes, what the kernel model
//! takes, what the native and VM engines pass to the host kernel and what
//! the reports name. No layer converts between look-alike copies of these
//! types; they all use the ones here.
//!
//! * [`mman`]: `PROT_*`, `MAP_*` and `MADV_*` with the kernel's values
//!   (`include/uapi/asm-generic/mman-common.h`, which x86_64 and arm64 both
//!   use).
//! * [`thp`]: `transparent_hugepage/enabled` and the per-size
//!   `hugepages-<size>kB/enabled` modes in sysfs spelling.
//! * [`swap`]: the kinds of swap device a scenario can ask for.
//! * [`series`]: the patch-series switches, one table of name, doc and
//!   default.
//! * [`counters`]: the counter names and who can observe each one
//!   (per process, system-wide, model only).
//! * [`foliomap`]: the per-page states of a folio map.
//! * [`meminfo`]: the host's `/proc/meminfo` (total and available memory).
//! * [`Arch`]: the simulated or measured architecture.
//! * [`diag`]: what goes to standard error besides errors (`--quiet`,
//!   `--verbose`).

#![forbid(unsafe_code)]

pub mod counters;
pub mod diag;
pub mod foliomap;
pub mod meminfo;
pub mod mman;
pub mod series;
pub mod swap;
pub mod thp;

pub use mman::Madv;
pub use series::Series;
pub use swap::SwapKind;
pub use thp::{MthpMode, ThpMode};

/// The architecture a run simulates or measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Arch {
    X86_64,
    /// arm64 with the 4 KiB granule.
    Arm64,
}

impl Arch {
    /// Every architecture, in the order reports list them.
    pub const ALL: [Arch; 2] = [Arch::X86_64, Arch::Arm64];

    /// The name in `uname -m` spelling except arm64 (the kernel's
    /// `ARCH=` name): `x86_64`, `arm64`.
    pub fn as_str(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    /// Parse `x86_64` or `arm64` (also `aarch64`, what `uname -m` prints).
    pub fn from_name(s: &str) -> Option<Arch> {
        match s {
            "x86_64" => Some(Arch::X86_64),
            "arm64" | "aarch64" => Some(Arch::Arm64),
            _ => None,
        }
    }
}

impl std::fmt::Display for Arch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
