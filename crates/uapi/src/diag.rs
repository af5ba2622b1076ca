//! What foliosim prints on standard error besides errors: notes, warnings
//! and progress, which `--quiet` silences, and detail that only
//! `--verbose` asks for. One process-wide level, set once by the command
//! line; every layer prints through [`note!`](crate::note) and
//! [`detail!`](crate::detail). Errors are not printed here: they travel as
//! values to the command line, which always prints them. Messages about
//! host settings a native run restores are always printed too (the
//! native engine's guard), since they say what happened to the machine.

use std::sync::atomic::{AtomicU8, Ordering};

/// How much goes to standard error.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verbosity {
    /// Errors only (`--quiet`).
    Quiet,
    /// Errors, warnings, notes and progress (the default).
    Normal,
    /// Also detail: what each run was and how long it took (`--verbose`).
    Verbose,
}

static LEVEL: AtomicU8 = AtomicU8::new(Verbosity::Normal as u8);

/// Set the process's verbosity (the command line does, once).
pub fn set_verbosity(v: Verbosity) {
    LEVEL.store(v as u8, Ordering::Relaxed);
}

/// The process's verbosity.
pub fn verbosity() -> Verbosity {
    match LEVEL.load(Ordering::Relaxed) {
        0 => Verbosity::Quiet,
        1 => Verbosity::Normal,
        _ => Verbosity::Verbose,
    }
}

/// `eprintln!` unless `--quiet`: notes, warnings, progress.
#[macro_export]
macro_rules! note {
    ($($arg:tt)*) => {
        if $crate::diag::verbosity() >= $crate::diag::Verbosity::Normal {
            eprintln!($($arg)*);
        }
    };
}

/// `eprintln!` only with `--verbose`.
#[macro_export]
macro_rules! detail {
    ($($arg:tt)*) => {
        if $crate::diag::verbosity() >= $crate::diag::Verbosity::Verbose {
            eprintln!($($arg)*);
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_are_ordered_and_stored() {
        assert!(Verbosity::Quiet < Verbosity::Normal && Verbosity::Normal < Verbosity::Verbose);
        assert_eq!(verbosity(), Verbosity::Normal);
        for v in [Verbosity::Quiet, Verbosity::Verbose, Verbosity::Normal] {
            set_verbosity(v);
            assert_eq!(verbosity(), v);
        }
    }
}
