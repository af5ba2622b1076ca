//! [`run_guarded`]: a simulation whose panics (a foliosim bug) come back as
//! an error message instead of unwinding into the caller, for the command
//! line, sweeps and the Python binding; and [`catch_model_limit`], which
//! turns a limit of the model (a [`ModelLimit`] panic, raised by
//! `foliosim_kernel::model_limit`) into a value.
//!
//! The panic hook is process-wide, and several runs may be under way on
//! different threads (a parallel sweep, Python threads), so the hook is
//! installed once and stays: a model limit prints nothing on any thread
//! (it is caught and reported as unsupported); another panic on a thread
//! inside [`run_guarded`] records where it happened and prints nothing; on
//! any other thread it calls the hook that was there before.

use std::cell::{Cell, RefCell};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

use foliosim_kernel::ModelLimit;
use foliosim_report::Report;
use foliosim_scenario::Scenario;

use crate::RunOptions;

thread_local! {
    /// Whether this thread is inside `run_guarded`.
    static GUARDED: Cell<bool> = const { Cell::new(false) };
    /// `file:line` of the last panic on this thread inside `run_guarded`.
    static WHERE: RefCell<Option<String>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

fn install_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if info.payload().is::<ModelLimit>() {
                // Caught by type and reported as unsupported.
            } else if GUARDED.with(Cell::get) {
                let at = info
                    .location()
                    .map(|l| format!("{}:{}", l.file(), l.line()));
                WHERE.with(|w| *w.borrow_mut() = at);
            } else {
                previous(info);
            }
        }));
    });
}

/// Call `f`; a limit of the model met inside it comes back as the
/// [`ModelLimit`] it raised. Any other panic unwinds on.
pub(crate) fn catch_model_limit<T>(f: impl FnOnce() -> T) -> Result<T, ModelLimit> {
    install_hook();
    panic::catch_unwind(AssertUnwindSafe(f)).map_err(|payload| match payload.downcast() {
        Ok(limit) => *limit,
        Err(other) => panic::resume_unwind(other),
    })
}

/// Resets the thread's flag even when the run unwinds.
struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        GUARDED.with(|g| g.set(false));
    }
}

/// Run one simulation ([`crate::run`]); its error, or a panic inside the
/// model, becomes an error message (a panic's names the source line it
/// happened at). Safe to call from several threads at once.
pub fn run_guarded(sc: &Scenario, opts: RunOptions) -> Result<Report, String> {
    guard(|| crate::run(sc, opts).map_err(|e| e.to_string()))
}

/// Call `f`; a panic inside it becomes an error message naming the panic's
/// message and source line, printed nowhere; a model limit becomes
/// "unsupported by the model: ...", as [`crate::run`] reports one, without
/// the step (only the engine knows it). [`run_guarded`] is this
/// around [`crate::run`]; it is public for callers that run more than a
/// simulation (adding modelled time, converting the report).
pub fn guard<T>(f: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    catch(f).unwrap_or_else(|p| Err(p.message))
}

/// A panic [`catch`] caught.
#[derive(Debug)]
pub struct Panicked {
    /// What [`guard`] makes of it: the panic's message and source line.
    pub message: String,
    /// Whether the model panicked at one of its limits (something it does
    /// not model) rather than at a bug.
    pub limit: bool,
}

/// Call `f`; a panic inside it comes back as [`Panicked`], printed
/// nowhere. Safe to call from several threads at once.
pub fn catch<T>(f: impl FnOnce() -> T) -> Result<T, Panicked> {
    install_hook();
    let res = {
        GUARDED.with(|g| g.set(true));
        let _guard = Guard;
        panic::catch_unwind(AssertUnwindSafe(f))
    };
    res.map_err(|payload| {
        if let Some(limit) = payload.downcast_ref::<ModelLimit>() {
            return Panicked {
                message: limit.to_string(),
                limit: true,
            };
        }
        let msg = payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "unknown panic".into());
        let at = WHERE
            .with(|w| w.borrow_mut().take())
            .map(|a| format!(" (at {a})"))
            .unwrap_or_default();
        Panicked {
            message: format!("internal error in the model (a foliosim bug or limit): {msg}{at}"),
            limit: false,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_naming_its_line() {
        let line = line!() + 1;
        let e = guard::<()>(|| panic!("pfn {} out of range", 7)).unwrap_err();
        assert!(e.contains("internal error in the model"), "{e}");
        assert!(e.contains("pfn 7 out of range"), "{e}");
        assert!(e.contains(&format!("guarded.rs:{line})")), "{e}");
        // The flag is reset after the unwind: this thread is unguarded.
        assert!(!GUARDED.with(Cell::get));
    }

    #[test]
    fn a_model_limit_is_unsupported_not_an_internal_error() {
        let e = guard::<()>(|| foliosim_kernel::model_limit("65536 things")).unwrap_err();
        assert_eq!(e, "unsupported by the model: 65536 things");
        let caught = catch_model_limit(|| foliosim_kernel::model_limit("a limit"));
        assert_eq!(caught.unwrap_err().what, "a limit");
        // Any other panic passes through the catch.
        let other = panic::catch_unwind(|| catch_model_limit(|| panic!("a bug")));
        let payload = other.expect_err("the panic unwinds on");
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"a bug"));
    }

    #[test]
    fn results_pass_through() {
        assert_eq!(guard(|| Ok(3)), Ok(3));
        assert_eq!(guard::<u8>(|| Err("no".into())), Err("no".into()));
    }

    #[test]
    fn guarded_panics_on_many_threads_at_once() {
        let handles: Vec<_> = (0..8)
            .map(|i| {
                std::thread::spawn(move || guard::<()>(move || panic!("thread {i}")).unwrap_err())
            })
            .collect();
        for (i, h) in handles.into_iter().enumerate() {
            let e = h.join().expect("the guard caught the panic");
            assert!(e.contains(&format!("thread {i}")), "{e}");
        }
    }
}
