//! The init of a machine that `foliosim vm` boots: the guest side of a VM
//! run ([`foliosim_run::guest`]) and nothing else, so the static binary
//! built for each guest architecture leaves out the command line, the
//! tables and the plots. (`foliosim` itself also runs as a guest's init.)

use std::process::ExitCode;

fn main() -> ExitCode {
    if foliosim_run::guest::is_guest_init() {
        foliosim_run::guest::main();
    }
    eprintln!(
        "foliosim-guest: the init of a machine that `foliosim vm` boots; \
         run scenarios with `foliosim vm`"
    );
    ExitCode::from(2)
}
