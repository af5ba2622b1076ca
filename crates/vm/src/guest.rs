//! The guest side: foliosim as the init process of the virtual machine.
//!
//! The initramfs holds the static foliosim as `/init`, the scenario file
//! and `/foliosim/job.json` (what to run). The kernel starts `/init` with
//! the console as its standard streams; it mounts what a native run needs
//! (`foliosim_native::guest::mount_all`), runs the scenario with the
//! native engine through the runner its caller passes (crates/run, which
//! compiles it as the host did), sends the result back on the console
//! ([`crate::wire`]) with the expectations not judged (the host judges
//! them) and restarts the machine, which ends QEMU.

use std::io::Write as _;
use std::path::PathBuf;

use foliosim_native::NativeOptions;
use foliosim_report::Report;
use foliosim_scenario::Scenario;
use serde_json::{json, Value};

use crate::wire;

/// Runs the guest's scenario with the native engine: its report, or the
/// kind of the failure (`killed`, `unsupported`, ...) and its message.
pub type Runner = dyn Fn(&Scenario, &NativeOptions) -> Result<Report, (&'static str, String)>;

/// Where the host puts the job description in the initramfs.
pub const JOB: &str = "/foliosim/job.json";

/// Whether this process is a guest's init (process 1 of a machine that
/// `foliosim vm` booted: the job file is there).
pub fn is_guest_init() -> bool {
    std::process::id() == 1 && std::path::Path::new(JOB).exists()
}

/// Run the job with `runner`, send the result, end the machine. Never
/// returns.
pub fn main(runner: &Runner) -> ! {
    say(&wire::status("booted"));
    std::panic::set_hook(Box::new(|info| {
        eprintln!("foliosim: guest engine panicked: {info}");
    }));
    let result = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run_job(runner))) {
        Ok(Ok(v)) => v,
        Ok(Err((kind, e))) => json!({ "error": e, "kind": kind }),
        Err(_) => {
            json!({ "error": "the guest's native engine panicked (its message is in the console lines above)" })
        }
    };
    let mut v = result;
    v["release"] = json!(foliosim_native::guest::kernel_release());
    let bytes = serde_json::to_vec(&v).expect("serialisable");
    say(&wire::encode(&bytes));
    foliosim_native::guest::restart()
}

fn say(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// The job's result, or the kind of its failure and the message.
fn run_job(runner: &Runner) -> Result<Value, (&'static str, String)> {
    let guest = |e: String| ("guest", e);
    run_job_with(runner).map_err(guest)?
}

/// Set the guest up and run the job: Err for a failure of the set-up, the
/// job's own result inside.
fn run_job_with(runner: &Runner) -> Result<Result<Value, (&'static str, String)>, String> {
    let job: Value =
        serde_json::from_slice(&std::fs::read(JOB).map_err(|e| format!("reading {JOB}: {e}"))?)
            .map_err(|e| format!("{JOB}: {e}"))?;
    let field = |k: &str| {
        job.get(k)
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{JOB}: no `{k}`"))
    };
    let disk = job.get("disk").and_then(Value::as_str);
    let mut notes = foliosim_native::guest::mount_all(disk)?;
    notes.extend(foliosim_native::guest::lock_runner_memory());
    for n in &notes {
        eprintln!("foliosim vm: note: {n}");
    }
    let unprobed = foliosim_native::guest::register_kfuncs();
    let label = field("label")?;
    let file = field("file")?;
    let overrides: Vec<(String, String)> = job
        .get("overrides")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|p| Some((p[0].as_str()?.to_string(), p[1].as_str()?.to_string())))
                .collect()
        })
        .unwrap_or_default();
    let text = std::fs::read_to_string(file).map_err(|e| format!("reading {file}: {e}"))?;
    let sc = match foliosim_scenario::parse_str(label, &text, &overrides) {
        Ok(sc) => sc,
        Err(e) => return Ok(Err(("usage", e.to_string()))),
    };
    let workdir = PathBuf::from(if disk.is_some() {
        foliosim_native::guest::WORK_MOUNT
    } else {
        "/tmp"
    });
    let opts = NativeOptions {
        workdir: workdir.clone(),
        trace: true,
        guest: true,
    };
    say(&wire::status("running"));
    Ok(runner(&sc, &opts).map(|report| wire_result(report, &unprobed)))
}

/// What the guest sends back for its run: the report as the documented
/// JSON document (docs/output.md) with one report, and the kernel
/// functions it could not probe.
fn wire_result(report: foliosim_report::Report, unprobed: &[(String, String)]) -> Value {
    let document = foliosim_report::json_document(&[report], foliosim_report::VERSION);
    json!({ "document": document, "unprobed": unprobed })
}

/// The report of what [`wire_result`] sent (on the host).
pub(crate) fn report_of(out: &Value) -> Result<foliosim_report::Report, String> {
    let mut reports = foliosim_report::reports_from_json(&out["document"])
        .map_err(|e| format!("the guest's report: {e}"))?;
    if reports.len() != 1 {
        return Err(format!(
            "the guest sent {} reports for one scenario",
            reports.len()
        ));
    }
    Ok(reports.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_reads_the_report_the_guest_sends() {
        let mut p = foliosim_report::Phase {
            name: "write".into(),
            ..Default::default()
        };
        p.counters.insert("kfunc/try_to_unmap_one".into(), 3);
        let r = foliosim_report::Report {
            scenario: "s".into(),
            arch: "arm64".into(),
            engine: "native".into(),
            phases: vec![p],
            ..Default::default()
        };
        let sent = wire_result(r.clone(), &[("f".into(), "why".into())]);
        // Through the wire's JSON text, as on the console.
        let text = serde_json::to_string(&sent).unwrap();
        let back = report_of(&serde_json::from_str(&text).unwrap()).unwrap();
        assert_eq!(back, r);
        let e = report_of(&json!({"report": {}})).unwrap_err();
        assert!(e.contains("reports"), "{e}");
    }
}
