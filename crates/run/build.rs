//! The git commit foliosim is built from, as `FOLIOSIM_COMMIT` for
//! `env!`: `git rev-parse --short HEAD` of the checkout the crate is in,
//! the variable's own value when it is set (a build from a source
//! archive), else `unknown`. Cargo runs this again when HEAD or the branch
//! it names moves.

use std::path::Path;
use std::process::Command;

/// `git ARGS` in this crate's folder, its output trimmed; None when git
/// is missing or fails (not a checkout).
fn git(args: &[&str]) -> Option<String> {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")?;
    let out = Command::new("git")
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=FOLIOSIM_COMMIT");
    let given = std::env::var("FOLIOSIM_COMMIT")
        .ok()
        .filter(|c| !c.is_empty());
    let commit = given.or_else(|| {
        // What HEAD is (a worktree has its own HEAD) and the branch it
        // points at, loose or packed.
        let head = git(&["rev-parse", "--symbolic-full-name", "HEAD"]);
        let mut watched = vec!["HEAD".to_string(), "packed-refs".to_string()];
        watched.extend(head.filter(|h| h.starts_with("refs/")));
        for w in &watched {
            if let Some(p) = git(&["rev-parse", "--path-format=absolute", "--git-path", w]) {
                if Path::new(&p).exists() {
                    println!("cargo:rerun-if-changed={p}");
                }
            }
        }
        git(&["rev-parse", "--short", "HEAD"])
    });
    println!(
        "cargo:rustc-env=FOLIOSIM_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
}
