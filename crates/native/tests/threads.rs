//! Native scenario threads: what needs no root. (Their agreement with the
//! simulator is checked by the corpus test, `scenarios/corpus/threads-*`.)

use foliosim_native::{run, NativeError, NativeOptions};

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
    let text = format!(
        r#"
[system]
cpus = {}
transparent_hugepage.enabled = "never"

[[step]]
op = "mmap"
region = "heap"
kind = "anon"
size = "1M"

[[step]]
op = "threads"
count = {count}

[[step.thread]]
op = "touch"
region = "heap"
access = "write"

[[step]]
op = "join"
"#,
        count + 1
    );
    let sc = foliosim_scenario::parse_str("threads.toml", &text, &[]).expect("valid scenario");
    let opts = NativeOptions {
        workdir: std::env::temp_dir(),
        ..NativeOptions::default()
    };
    match run(&sc, &opts) {
        Err(e @ NativeError::Unsupported { .. }) => {
            let msg = e.to_string();
            assert!(msg.starts_with("threads.toml:12:"), "{msg}");
            assert!(msg.contains(&format!("need {} CPUs", count + 1)), "{msg}");
        }
        Err(e) => panic!("refused for another reason: {e}"),
        Ok(_) => panic!("ran {count} threads beside the main thread on {count} CPUs"),
    }
}
