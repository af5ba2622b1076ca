//! The workspace's layers are true: every crate depends only on crates
//! listed before it in ARCHITECTURE.md's crate list (lowest layer first),
//! and that list names every workspace crate and no other.
//!
//! Normal and build dependencies are checked; dev-dependencies are not
//! (a crate's tests may run a higher layer, as the native engine's tests
//! compare with the simulator).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The crate folders (`crates/<dir>/`) ARCHITECTURE.md lists in its
/// first code block, in order.
fn listed(architecture: &str) -> Vec<String> {
    let block = architecture.split("```").nth(1).unwrap_or_default();
    block
        .lines()
        .filter_map(|l| l.strip_prefix("crates/"))
        .filter_map(|l| l.split_once('/'))
        .map(|(dir, _)| dir.to_string())
        .collect()
}

/// One workspace crate: its folder and the workspace crates (by folder)
/// it depends on, other than for its tests.
#[derive(Debug)]
struct Crate {
    dir: String,
    deps: Vec<String>,
}

/// The folder under `crates/` of a manifest or dependency path.
fn dir_of(path: &str) -> Option<String> {
    let p = Path::new(path);
    let p = if p.ends_with("Cargo.toml") {
        p.parent()?
    } else {
        p
    };
    (p.parent()?.file_name()? == "crates").then(|| p.file_name()?.to_str().map(String::from))?
}

/// The workspace's crates from `cargo metadata --no-deps`.
fn workspace() -> Vec<Crate> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .arg("--manifest-path")
        .arg(root().join("Cargo.toml"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON");
    let packages = meta["packages"].as_array().expect("packages");
    packages
        .iter()
        .map(|p| {
            let manifest = p["manifest_path"].as_str().expect("manifest_path");
            let deps = p["dependencies"]
                .as_array()
                .expect("dependencies")
                .iter()
                .filter(|d| d["kind"].as_str() != Some("dev"))
                .filter_map(|d| d["path"].as_str().and_then(dir_of))
                .collect();
            Crate {
                dir: dir_of(manifest).unwrap_or_else(|| panic!("{manifest} is not under crates/")),
                deps,
            }
        })
        .collect()
}

/// Dependencies allowed against the list's order until the code that
/// needs them moves: (crate, dependency), by folder.
/// None today.
const KNOWN: &[(&str, &str)] = &[];

/// What is wrong with `list` as the layers of `crates`: a crate that
/// depends on one listed at or after it, a crate not listed, a listed
/// crate that does not exist, a crate listed twice.
fn problems(list: &[String], crates: &[Crate], known: &[(&str, &str)]) -> Vec<String> {
    let mut out = Vec::new();
    let mut at = BTreeMap::new();
    for (i, dir) in list.iter().enumerate() {
        if at.insert(dir.as_str(), i).is_some() {
            out.push(format!("crates/{dir} is listed twice"));
        }
    }
    for dir in list {
        if !crates.iter().any(|c| &c.dir == dir) {
            out.push(format!(
                "crates/{dir} is listed but is not a workspace crate"
            ));
        }
    }
    for c in crates {
        let Some(&mine) = at.get(c.dir.as_str()) else {
            out.push(format!("crates/{} is not in the list", c.dir));
            continue;
        };
        for d in &c.deps {
            let exempt = known.contains(&(c.dir.as_str(), d.as_str()));
            match at.get(d.as_str()) {
                Some(&theirs) if theirs < mine || exempt => {}
                Some(_) => out.push(format!(
                    "crates/{} depends on crates/{d}, which is not listed before it",
                    c.dir
                )),
                None => out.push(format!(
                    "crates/{} depends on crates/{d}, which is not in the list",
                    c.dir
                )),
            }
        }
    }
    out
}

#[test]
fn each_crate_depends_only_on_crates_listed_before_it() {
    let text = std::fs::read_to_string(root().join("ARCHITECTURE.md")).expect("ARCHITECTURE.md");
    let list = listed(&text);
    let crates = workspace();
    let found = problems(&list, &crates, KNOWN);
    assert!(
        found.is_empty(),
        "ARCHITECTURE.md's crate list and the workspace disagree:\n{}",
        found.join("\n")
    );
    // Every exception is still needed.
    for &(from, to) in KNOWN {
        let c = crates.iter().find(|c| c.dir == from).expect("a crate");
        assert!(
            c.deps.iter().any(|d| d == to),
            "crates/{from} no longer depends on crates/{to}: drop the exception"
        );
    }
}

#[test]
fn the_check_finds_each_kind_of_problem() {
    let c = |dir: &str, deps: &[&str]| Crate {
        dir: dir.into(),
        deps: deps.iter().map(|d| d.to_string()).collect(),
    };
    let crates = [
        c("uapi", &[]),
        c("kernel", &["uapi"]),
        c("sim", &["kernel"]),
    ];
    let list = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(problems(&list(&["uapi", "kernel", "sim"]), &crates, &[]).is_empty());
    let upward = problems(&list(&["kernel", "uapi", "sim"]), &crates, &[]);
    assert_eq!(
        upward,
        ["crates/kernel depends on crates/uapi, which is not listed before it"]
    );
    assert!(problems(
        &list(&["kernel", "uapi", "sim"]),
        &crates,
        &[("kernel", "uapi")]
    )
    .is_empty());
    assert_eq!(
        problems(&list(&["uapi", "kernel"]), &crates, &[]),
        ["crates/sim is not in the list"]
    );
    assert_eq!(
        problems(&list(&["uapi", "kernel", "hw", "sim"]), &crates, &[]),
        ["crates/hw is listed but is not a workspace crate"]
    );
    assert_eq!(
        problems(&list(&["uapi", "uapi", "kernel", "sim"]), &crates, &[]),
        ["crates/uapi is listed twice"]
    );
}

#[test]
fn the_list_is_read_from_the_crate_lines() {
    let text = "# A\n\n```\ncrates/uapi/       words\n                   more words\n\
                crates/sim/   x\nscenarios/  y\n```\n\n```\ncrates/hw/\n```\n";
    assert_eq!(listed(text), ["uapi", "sim"]);
    assert_eq!(dir_of("/w/crates/sim/Cargo.toml").as_deref(), Some("sim"));
    assert_eq!(dir_of("/w/crates/sim").as_deref(), Some("sim"));
    assert_eq!(dir_of("/w/other/sim"), None);
}
