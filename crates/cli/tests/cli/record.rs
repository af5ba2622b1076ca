//! `foliosim record`: a real program recorded and replayed. Root only
//! (ptrace, perf tracepoints) and x86_64 only; needs a C compiler (`cc`,
//! Debian package gcc) for the program; skips otherwise.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A program whose page faults follow from the kernel's rules alone with
/// THP disabled (the recorder disables it for the program,
/// PR_SET_THP_DISABLE) and nothing mapped in its two regions before:
/// * 4 MiB written page by page: 1,024 write faults (do_anonymous_page()
///   allocates one 4 KiB folio each);
/// * 1 MiB read page by page: 256 read faults that map the shared zero
///   page; then every other page written: 128 write-protect faults
///   (do_wp_page() replaces the zero page);
/// * MADV_DONTNEED of the first 2 MiB of the 4 MiB, written again: 512
///   write faults;
///
/// 1,920 faults in the two regions. The addresses are printed so the test
/// can find them in the trace.
const PROGRAM: &str = r#"
#include <stdio.h>
#include <sys/mman.h>
int main(void) {
    char *a = mmap(0, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *b = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    volatile char sum = 0;
    for (long i = 0; i < 4 << 20; i += 4096) a[i] = 1;
    for (long i = 0; i < 1 << 20; i += 4096) sum += b[i];
    for (long i = 0; i < 1 << 20; i += 8192) b[i] = 2;
    madvise(a, 2 << 20, MADV_DONTNEED);
    for (long i = 0; i < 2 << 20; i += 4096) a[i] = 3;
    munmap(b, 1 << 20);
    printf("%lx %lx\n", (unsigned long)a, (unsigned long)b);
    return 0;
}
"#;

const TEST: &str = "a_recorded_program_replays_its_faults_in_the_simulator_and_natively";

fn foliosim() -> Command {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
}

/// Run `cmd`, require success (showing its standard error otherwise) and
/// return its standard output.
fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// The JSON report of a successful command.
fn json(cmd: &mut Command) -> serde_json::Value {
    serde_json::from_str(&ok(cmd)).unwrap()
}

/// Build the program in `dir`; None (after saying why) if it cannot run.
fn build(dir: &Path) -> Option<PathBuf> {
    build_source(dir, PROGRAM, TEST)
}

/// Build `source` in `dir` for test `test`; None (after saying why) if it
/// cannot run.
fn build_source(dir: &Path, source: &str, test: &str) -> Option<PathBuf> {
    if !foliosim_testkit::is_root() {
        eprintln!("SKIPPED {test}: needs root (ptrace, perf tracepoints)");
        return None;
    }
    if !cfg!(target_arch = "x86_64") {
        eprintln!("SKIPPED {test}: recording needs an x86_64 host");
        return None;
    }
    let src = dir.join("prog.c");
    std::fs::write(&src, source).unwrap();
    let exe = dir.join("prog");
    // Linked statically: the only file it maps is itself, just written
    // by the compiler, so its page cache holds nothing a replay's file
    // lacks (a shared libc's cached folios can carry readahead marks that
    // make fault-around skip them: docs/recording.md).
    let cc = Command::new("cc")
        .args(["-O1", "-static", "-o"])
        .arg(&exe)
        .arg(&src)
        .status();
    match cc {
        Ok(s) if s.success() => Some(exe),
        _ => {
            eprintln!("SKIPPED {test}: no C compiler with a static libc (Debian package gcc)");
            None
        }
    }
}

fn minor_faults(out: &serde_json::Value) -> u64 {
    let report = &out["reports"][0];
    let phases = report["phases"].as_array().expect("phases");
    assert_eq!(phases.len(), 1, "{report:#}");
    phases[0]["counters"]["minor-faults"]
        .as_u64()
        .unwrap_or_else(|| panic!("minor-faults in {report:#}"))
}

#[test]
fn a_recorded_program_replays_its_faults_in_the_simulator_and_natively() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(exe) = build(tmp.path()) else { return };
    let rec = tmp.path().join("prog.rec");
    let stdout = ok(foliosim()
        .args(["record", "--out"])
        .arg(&rec)
        .arg("--")
        .arg(&exe));
    // The program's own output comes first, then the recorder's line.
    let mut words = stdout.lines().next().unwrap().split(' ');
    let a = u64::from_str_radix(words.next().unwrap(), 16).unwrap();
    let b = u64::from_str_radix(words.next().unwrap(), 16).unwrap();

    // The trace holds exactly the faults the kernel's rules give for the
    // two regions.
    let trace = foliosim_recording::load(&rec).unwrap();
    let inside = |p: u64, base: u64, len: u64| (base..base + len).contains(&(p << 12));
    let (mut in_a, mut in_b, mut writes_b) = (0, 0, 0);
    for (_, e) in &trace.events {
        if let foliosim_recording::Event::Fault { page, write } = e {
            if inside(*page, a, 4 << 20) {
                in_a += 1;
            }
            if inside(*page, b, 1 << 20) {
                in_b += 1;
                writes_b += u64::from(*write);
            }
        }
    }
    assert_eq!((in_a, in_b, writes_b), (1024 + 512, 256 + 128, 128));

    // The summary describes it.
    let summary = ok(foliosim().args(["record", "--summary"]).arg(&rec));
    foliosim_testkit::assert_contains(&summary, "1 process, 1 thread, 1 exec");

    // The simulator's replay faults once per replayed touch that the
    // kernel faulted on: the summary's count of replayed faults.
    let replayed: u64 = summary
        .split("replay       ")
        .nth(1)
        .and_then(|s| s.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{summary}"));
    let sim = json(foliosim().args(["run", "--format", "json"]).arg(&rec));
    assert_eq!(minor_faults(&sim), replayed);
    let prov = &sim["reports"][0]["provenance"]["recording"];
    assert!(
        prov.as_str()
            .is_some_and(|p| p.contains("prog") && p.contains("x86_64 Linux")),
        "{prov}"
    );

    // The native replay of the same recording faults as often.
    let native = json(foliosim().args(["native", "--format", "json"]).arg(&rec));
    assert_eq!(minor_faults(&native), replayed);

    // Under 64 KiB mTHP the replay meets the other policy, the same way
    // in both engines: the regions are recorded where the kernel put them
    // (2 MiB-aligned: __thp_get_unmapped_area()) and replayed there, so
    // the 4 MiB written takes 64 folios of 64 KiB, the 2 MiB written again
    // after MADV_DONTNEED 32 more.
    let mthp = [
        "--set",
        "transparent_hugepage.hugepages-64kB.enabled=always",
    ];
    let counts = |engine: &str| {
        let v = json(
            foliosim()
                .args([engine, "--format", "json"])
                .args(mthp)
                .arg(&rec),
        );
        let c = &v["reports"][0]["phases"][0]["counters"];
        let get = |k: &str| c[k].as_u64().unwrap_or_else(|| panic!("{k} in {v:#}"));
        // The per-process count of order-4 allocations, not the mTHP
        // stats, which count the whole host.
        (get("minor-faults"), get("kmem:mm_page_alloc/order=4"))
    };
    let sim = counts("run");
    assert!(sim.1 >= 64 + 32, "{sim:?}");
    assert!(sim.0 < replayed, "{sim:?}");
    assert_eq!(counts("native"), sim);

    // A sweep takes the recording like a scenario: four points, and
    // their diff by folio size.
    let table = tmp.path().join("t.csv");
    ok(foliosim()
        .arg("sweep")
        .arg(&rec)
        .args([
            "--grid",
            "folio_size=4K,64K",
            "--grid",
            "arch=x86_64,arm64",
            "-o",
        ])
        .arg(&table));
    let diff = ok(foliosim().arg("diff").arg(&table).args([
        "--by",
        "folio_size=4K,64K",
        "--columns",
        "arch",
    ]));
    foliosim_testkit::assert_contains(&diff, "hugepages-64kB/anon_fault_alloc");
}

/// A program whose later writes follow from the kernel's rules, recorded
/// with epochs of 100 ms. Each pause lasts at least 300 ms and until the
/// recorder's scan has write-protected again the last page of `a` written
/// before it (its /proc/self/pagemap entry shows PM_UFFD_WP, bit 57), so a
/// scan falls in every pause however loaded the machine (at most 20 s),
/// and the writes after it start once that scan is past every page they
/// write: a scan walks the mappings in address order (`c`, mapped after
/// `a`, lies below it), and one still walking could re-protect a page
/// between the write fault that unprotected it and the retried store,
/// which then faults again (a second later write of one store). The next
/// scan comes an epoch later, long after the few hundred writes:
/// * `a`, 1 MiB: 256 pages written, 256 write faults; after a pause pages
///   0-127 written again, after another pages 0-63: 192 later writes,
///   each the first write to its page since a scan protected it (none is
///   a fault of the program's own run);
/// * `c`, 64 KiB: 16 pages read (16 faults mapping the zero page), and
///   after a pause written: 16 faults of the program's own (copy-on-write
///   of the zero page), not later writes;
/// * a fork: the child writes pages 200-207 of `a` (8 copy-on-write
///   faults in the child), and after it exits the parent writes them (8
///   faults: fork write-protected the parent's pages, do_wp_page() reuses
///   them), not later writes.
const EPOCHS: &str = r#"
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
static void pause_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000};
    while (nanosleep(&t, &t)) {}
}
static int write_protected(const char *p) {
    uint64_t e = 0;
    int fd = open("/proc/self/pagemap", O_RDONLY);
    if (fd < 0) return 0;
    pread(fd, &e, sizeof e, (off_t)((uintptr_t)p / 4096) * 8);
    close(fd);
    return (e >> 57) & 1;
}
static void pause_for_scan(const char *p) {
    pause_ms(300);
    for (int i = 0; i < 2000 && !write_protected(p); i++) pause_ms(10);
}
int main(void) {
    char *a = mmap(0, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *c = mmap(0, 64 << 10, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    volatile char sum = 0;
    for (long i = 0; i < 256; i++) a[i * 4096] = 1;
    for (long i = 0; i < 16; i++) sum += c[i * 4096];
    pause_for_scan(a + 255 * 4096);
    for (long i = 0; i < 128; i++) a[i * 4096] = 2;
    for (long i = 0; i < 16; i++) c[i * 4096] = 2;
    pause_for_scan(a + 127 * 4096);
    for (long i = 0; i < 64; i++) a[i * 4096] = 3;
    pause_for_scan(a + 63 * 4096);
    pid_t p = fork();
    if (p == 0) {
        for (long i = 200; i < 208; i++) a[i * 4096] = 4;
        _exit(0);
    }
    waitpid(p, 0, 0);
    for (long i = 200; i < 208; i++) a[i * 4096] = 5;
    printf("%lx %lx\n", (unsigned long)a, (unsigned long)c);
    return 0;
}
"#;

#[test]
fn later_writes_are_recorded_by_epoch_and_replayed() {
    const NAME: &str = "later_writes_are_recorded_by_epoch_and_replayed";
    let tmp = tempfile::tempdir().unwrap();
    let Some(exe) = build_source(tmp.path(), EPOCHS, NAME) else {
        return;
    };
    let rec = tmp.path().join("w.rec");
    let stdout = ok(foliosim()
        .args(["record", "--epoch", "100", "--out"])
        .arg(&rec)
        .arg("--")
        .arg(&exe));
    let mut words = stdout.lines().next().unwrap().split(' ');
    let a = u64::from_str_radix(words.next().unwrap(), 16).unwrap();
    let c = u64::from_str_radix(words.next().unwrap(), 16).unwrap();
    assert!(c + (64 << 10) <= a, "c ({c:#x}) is mapped below a ({a:#x})");
    let trace = foliosim_recording::load(&rec).unwrap();
    assert_eq!(trace.meta.epoch_ms, 100);
    let inside = |p: u64, base: u64, len: u64| (base..base + len).contains(&(p << 12));
    // (faults, later writes) in a and c, per process (root first).
    let mut seen: Vec<(u32, [u64; 4])> = Vec::new();
    let mut pid = 0;
    for (_, e) in &trace.events {
        use foliosim_recording::Event;
        let (page, access) = match e {
            Event::Task { pid: p, .. } => {
                pid = *p;
                continue;
            }
            Event::Fault { page, .. } => (*page, false),
            Event::Access { page, .. } => (*page, true),
            _ => continue,
        };
        let i = match seen.iter().position(|(p, _)| *p == pid) {
            Some(i) => i,
            None => {
                seen.push((pid, [0; 4]));
                seen.len() - 1
            }
        };
        let base = usize::from(access);
        if inside(page, a, 1 << 20) {
            seen[i].1[base] += 1;
        }
        if inside(page, c, 64 << 10) {
            seen[i].1[2 + base] += 1;
        }
    }
    let counts: Vec<[u64; 4]> = seen.iter().map(|(_, c)| *c).collect();
    // [a faults, a later writes, c faults, c later writes]
    assert_eq!(counts, [[256 + 8, 128 + 64, 16 + 16, 0], [8, 0, 0, 0]]);

    // The replay touches the later writes without faulting on them: the
    // simulator faults once per replayed fault.
    let replay = foliosim_recording::replay::replay(&trace, Default::default()).unwrap();
    let sim = json(foliosim().args(["run", "--format", "json"]).arg(&rec));
    assert_eq!(minor_faults(&sim), replay.faults);
    // The 192 in `a`, and the stack's.
    assert!(replay.written >= 192, "{}", replay.written);

    // A phase every epoch: as many phases as the recording has epochs, plus
    // the first, and the same faults over all of them.
    let epochs = trace
        .events
        .iter()
        .filter(|(_, e)| *e == foliosim_recording::Event::Epoch)
        .count();
    assert!(epochs >= 8, "{epochs} epochs");
    let phased = json(
        foliosim()
            .args(["run", "--format", "json", "--phase-every", "1"])
            .arg(&rec),
    );
    let phases = phased["reports"][0]["phases"].as_array().unwrap();
    assert_eq!(phases.len(), epochs + 1);
    let total: u64 = phases
        .iter()
        .map(|p| p["counters"]["minor-faults"].as_u64().unwrap_or(0))
        .sum();
    assert_eq!(total, replay.faults);
}

/// A damaged trace is refused with the byte where it breaks, by every
/// command that reads it; a directory that is not a recording is named.
#[test]
fn a_damaged_recording_names_the_byte() {
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("r.rec");
    std::fs::create_dir(&rec).unwrap();
    std::fs::write(rec.join("recording.toml"), "name = \"r\"\n").unwrap();
    let mut trace = b"FSIMREC\n".to_vec();
    trace.extend_from_slice(&1u32.to_le_bytes());
    trace.extend_from_slice(&[0x1f, 0x8b, 8, 0, 0, 0]);
    std::fs::write(rec.join("trace.fsr"), &trace).unwrap();
    for args in [&["run"][..], &["record", "--summary"]] {
        let out = foliosim().args(args).arg(&rec).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        foliosim_testkit::assert_contains(&err, "trace.fsr: byte ");
        foliosim_testkit::assert_contains(&err, "cut short");
        assert!(!err.contains("panicked"), "{err}");
    }
    let out = foliosim().arg("run").arg(tmp.path()).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    foliosim_testkit::assert_contains(&err, "not a recording");
}

/// A program that dies on a signal is recorded up to its death, and the
/// recording replays.
#[test]
fn a_program_killed_by_a_signal_still_replays() {
    let test = "a_program_killed_by_a_signal_still_replays";
    if !foliosim_testkit::is_root() || !cfg!(target_arch = "x86_64") {
        eprintln!("SKIPPED {test}: needs root on an x86_64 host");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("k.rec");
    let out = foliosim()
        .args(["record", "--out"])
        .arg(&rec)
        .args(["--", "sh", "-c", "kill -9 $$"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    foliosim_testkit::assert_contains(&err, "killed by signal 9");
    let summary = ok(foliosim().args(["record", "--summary"]).arg(&rec));
    foliosim_testkit::assert_contains(&summary, "killed by signal 9");
    ok(foliosim().arg("run").arg(&rec));
}

/// A recording interrupted by SIGTERM leaves nothing: no recording, no
/// temporary directory beside it, no program running.
#[test]
fn an_interrupted_recording_leaves_nothing() {
    let test = "an_interrupted_recording_leaves_nothing";
    if !foliosim_testkit::is_root() || !cfg!(target_arch = "x86_64") {
        eprintln!("SKIPPED {test}: needs root on an x86_64 host");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let rec = tmp.path().join("s.rec");
    let child = foliosim()
        .args(["record", "--out"])
        .arg(&rec)
        .args(["--", "sleep", "30"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // The program runs once the recorder has written its temporary
    // directory: wait for it, then interrupt.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while std::fs::read_dir(tmp.path()).unwrap().count() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "no temporary directory"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    let kill = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(kill.success());
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().flatten().collect();
    assert!(left.is_empty(), "{left:?}");
}
