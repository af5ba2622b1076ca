//! The guest side of a VM run: foliosim as the init process of a machine
//! that `foliosim vm` booted ([`foliosim_vm::guest`]) runs its scenario
//! here, compiled as on the host and run by the native engine; the report
//! goes back unjudged (the host judges it).

use foliosim_report::Report;
use foliosim_scenario::Scenario;

/// Whether this process is a guest's init.
pub fn is_guest_init() -> bool {
    foliosim_vm::guest::is_guest_init()
}

/// Run the guest's job, send the result, end the machine. Never returns.
pub fn main() -> ! {
    foliosim_vm::guest::main(&run_in_guest)
}

/// The native run of the guest's scenario: the report without judged
/// expectations, or the error's kind ([`crate::RunError::kind`]) and
/// message.
fn run_in_guest(
    sc: &Scenario,
    opts: &foliosim_native::NativeOptions,
) -> Result<Report, (&'static str, String)> {
    let wl = foliosim_sim::compile(sc).map_err(|e| {
        let e = foliosim_native::NativeError::Unsupported {
            at: e.at,
            what: e.what,
        };
        ("unsupported", e.to_string())
    })?;
    foliosim_native::run_workload(sc, &wl, opts)
        .map_err(|e| (crate::error::native_kind(&e), e.to_string()))
}
