//! Native scenario threads: what needs no root. (Their agreement with the
//! simulator is checked by the corpus test, `scenarios/corpus/threads-*`.)

mod common;

use common::run;
use foliosim_native::{NativeError, NativeOptions};

/// CPUs this process may run on.
fn usable_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn too_few_host_cpus_is_refused_naming_the_threads_step() {
    // One thread more than the host can place next to the main thread.
    let count = usable_cpus();
    if count + 1 > 64 {
        return;
    }
    use foliosim_testkit as tk;
    let text = [
        format!(
            "[system]\ncpus = {}\ntransparent_hugepage.enabled = \"never\"\n",
            count + 1
        ),
        tk::mmap_anon("heap", "1M"),
        format!("[[step]]\nop = \"threads\"\ncount = {count}\n"),
        tk::thread(&tk::touch("heap", "write", "")),
        tk::step("join"),
    ]
    .concat();
    // The error names the line of the threads step's `[[step]]`, the one
    // before its `op` (lines count from 1).
    let line = text.lines().position(|l| l == "op = \"threads\"").unwrap();

    let sc = foliosim_scenario::parse_str("threads.toml", &text, &[]).expect("valid scenario");
    let opts = NativeOptions {
        workdir: std::env::temp_dir(),
        ..NativeOptions::default()
    };
    match run(&sc, &opts) {
        Err(e @ NativeError::Unsupported { .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with(&format!("threads.toml:{line}:")), "{msg}");
            assert!(msg.contains(&format!("need {} CPUs", count + 1)), "{msg}");
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("ran {count} threads beside the main thread on {count} CPUs"),
    }
}
