//! `-o` against planted links, devices, FIFOs and its own input: the built
//! binary run as a user (or an attacker's victim) runs it.

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A scenario with one phase: a small, quick run with a report to write.
fn scenario(dir: &Path) -> std::path::PathBuf {
    use foliosim_testkit::{anon_written, name, phase, system_mem};
    let text = [
        name("small"),
        system_mem("64M", ""),
        phase("measured"),
        anon_written("buf", "64K"),
    ]
    .concat();
    foliosim_testkit::write(dir, "s.toml", &text)
}

fn foliosim(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap()
}

/// A refusal: exit status 2 and `want` in the message.
fn refused(out: &Output, want: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(want), "expected {want:?} in: {err}");
}

/// As root, a scratch directory with the [`scenario`]; else None, and
/// the test says it is skipped and `why`.
fn as_root(why: &str) -> Option<tempfile::TempDir> {
    if !foliosim_testkit::is_root() {
        eprintln!("skipped: {why}");
        return None;
    }
    let tmp = tempfile::tempdir().unwrap();
    scenario(tmp.path());
    Some(tmp)
}

/// mknod(1) a character device `major:minor` at `path` (root only).
fn mknod(path: &Path, major: u32, minor: u32) {
    let ok = Command::new("mknod")
        .arg(path)
        .args(["c", &major.to_string(), &minor.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "mknod {}", path.display());
}

#[test]
fn a_link_to_a_private_device_node_is_not_followed() {
    let Some(tmp) = as_root("making a device node needs root") else {
        return;
    };
    let d = tmp.path();
    // Private nodes of the devices /dev/full (1:7, writes fail with
    // ENOSPC) and /dev/zero (1:5, writes succeed and vanish).
    mknod(&d.join("full"), 1, 7);
    mknod(&d.join("zero"), 1, 5);
    for dev in ["full", "zero"] {
        let link = d.join(format!("{dev}.json"));
        std::os::unix::fs::symlink(d.join(dev), &link).unwrap();
        let out = foliosim(&["run", "s.toml", "-o", &format!("{dev}.json")], d);
        refused(&out, "is a symbolic link");
        assert!(!String::from_utf8_lossy(&out.stderr).contains("No space"));
        // Followed, the link leads to a device: refused too.
        let out = foliosim(
            &["run", "s.toml", "-o", &format!("{dev}.json"), "--follow"],
            d,
        );
        refused(&out, "is a device");
        // The node itself without --to-device, and with it.
        refused(&foliosim(&["run", "s.toml", "-o", dev], d), "--to-device");
        let out = foliosim(&["run", "s.toml", "-o", dev, "--to-device"], d);
        match dev {
            "full" => refused(&out, "No space left on device"),
            _ => assert!(out.status.success()),
        }
        assert!(std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink());
    }
}

/// A scratch directory with the [`scenario`] and a FIFO `fifo`.
fn with_fifo() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    scenario(tmp.path());
    let made = Command::new("mkfifo")
        .arg(tmp.path().join("fifo"))
        .status()
        .unwrap();
    assert!(made.success());
    tmp
}

#[test]
fn a_link_to_a_fifo_delivers_nothing_to_its_reader() {
    let tmp = with_fifo();
    let d = tmp.path();
    std::os::unix::fs::symlink(d.join("fifo"), d.join("o.json")).unwrap();
    // Whoever reads the FIFO copies what arrives to `got`.
    let got = std::fs::File::create(d.join("got")).unwrap();
    let mut reader = Command::new("cat")
        .arg(d.join("fifo"))
        .stdout(got)
        .spawn()
        .unwrap();
    refused(
        &foliosim(&["run", "s.toml", "-o", "o.json"], d),
        "is a symbolic link",
    );
    refused(
        &foliosim(&["run", "s.toml", "-o", "o.json", "--follow"], d),
        "is a FIFO",
    );
    // End the reader: open and close the FIFO's write end.
    drop(
        std::fs::OpenOptions::new()
            .write(true)
            .open(d.join("fifo"))
            .unwrap(),
    );
    assert!(reader.wait().unwrap().success());
    assert_eq!(std::fs::read(d.join("got")).unwrap(), b"");
}

#[test]
fn a_fifo_with_no_reader_fails_at_once() {
    let tmp = with_fifo();
    let d = tmp.path();
    refused(&foliosim(&["run", "s.toml", "-o", "fifo"], d), "is a FIFO");
    // Allowed, it still does not wait for a reader that never comes.
    let mut child = Command::new(env!("CARGO_BIN_EXE_foliosim"))
        .args(["run", "s.toml", "-o", "fifo", "--to-device"])
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(20) {
        std::thread::sleep(Duration::from_millis(20));
    }
    if child.try_wait().unwrap().is_none() {
        child.kill().unwrap();
        panic!("-o FIFO with no reader still waits after 20 s");
    }
    refused(&child.wait_with_output().unwrap(), "nothing reads");
}

#[test]
fn the_file_standard_input_was_read_from_is_not_overwritten() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let s = scenario(d);
    let before = std::fs::read(&s).unwrap();
    let run_from = |input: &Path| {
        Command::new(env!("CARGO_BIN_EXE_foliosim"))
            .args(["run", "-", "-o", "s.toml"])
            .current_dir(d)
            .stdin(std::fs::File::open(input).unwrap())
            .output()
            .unwrap()
    };
    let out = run_from(&s);
    refused(&out, "standard input was read from");
    assert_eq!(std::fs::read(&s).unwrap(), before);
    // Standard input from another file: the output is written.
    let copy = d.join("copy.toml");
    std::fs::copy(&s, &copy).unwrap();
    let out = run_from(&copy);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::read_to_string(&s)
        .unwrap()
        .contains("scenario small"));
}

#[test]
fn an_attacker_owned_link_target_is_not_followed() {
    let Some(tmp) = as_root("giving a file to another user needs root") else {
        return;
    };
    let d = tmp.path();
    // The attacker's file (owner nobody, 0666) and its link at the output.
    let theirs = d.join("theirs");
    std::fs::write(&theirs, "bait\n").unwrap();
    std::os::unix::fs::chown(&theirs, Some(65534), Some(65534)).unwrap();
    std::fs::set_permissions(&theirs, std::fs::Permissions::from_mode(0o666)).unwrap();
    std::os::unix::fs::symlink(&theirs, d.join("r.txt")).unwrap();
    refused(
        &foliosim(&["run", "s.toml", "-o", "r.txt"], d),
        "is a symbolic link",
    );
    let link = std::fs::symlink_metadata(d.join("r.txt")).unwrap();
    assert!(link.file_type().is_symlink());
    let m = std::fs::metadata(&theirs).unwrap();
    assert_eq!((m.uid(), m.mode() & 0o777), (65534, 0o666));
    assert_eq!(std::fs::read_to_string(&theirs).unwrap(), "bait\n");
    // Once the link is gone, the new output is the runner's own file.
    std::fs::remove_file(d.join("r.txt")).unwrap();
    assert!(foliosim(&["run", "s.toml", "-o", "r.txt"], d)
        .status
        .success());
    let m = std::fs::symlink_metadata(d.join("r.txt")).unwrap();
    assert!(m.file_type().is_file());
    assert_eq!(m.uid(), 0);
}
