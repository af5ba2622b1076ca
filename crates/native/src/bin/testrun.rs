//! Hidden helper for the native engine's tests: run one scenario file
//! natively and print the report as JSON.
//!
//! Usage: foliosim-native-testrun SCENARIO [WORKDIR]

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let Some(path) = args.get(1) else {
        eprintln!("usage: foliosim-native-testrun SCENARIO [WORKDIR]");
        return ExitCode::from(2);
    };
    let sc = match foliosim_scenario::load(std::path::Path::new(path), &[]) {
        Ok(sc) => sc,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let mut opts = foliosim_native::NativeOptions::default();
    if let Some(w) = args.get(2) {
        opts.workdir = w.into();
    }
    // The kernel places the mappings: this helper runs one engine only.
    let wl = match foliosim_workload::compile(&sc, &mut foliosim_workload::NoHints) {
        Ok(wl) => wl,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match foliosim_native::run_workload(&sc, &wl, &opts) {
        Ok(r) => {
            print!(
                "{}",
                foliosim_report::render(&[r], foliosim_report::Format::Json)
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("{e}");
            ExitCode::from(1)
        }
    }
}
