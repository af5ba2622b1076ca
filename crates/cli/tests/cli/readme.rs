//! The examples of README.md and docs/*.md, run: every fenced block with
//! the info string `text` is the output of `foliosim` commands, and this
//! test runs them with the built binary and requires that output.
//!
//! * Commands: a `text` block that starts with `$ ` lines holds its own
//!   commands; otherwise its commands are the `foliosim ...` (or `cargo
//!   run --release -- ...`) lines of the nearest `sh` block above it, with
//!   `\` continuations joined and other lines (comments, other programs)
//!   skipped. Pipes and redirections are refused.
//! * Output: the commands' standard output, one after the other, compared
//!   line by line. A line `...` stands for any number of lines (for long
//!   listings shown in part); nothing else is normalised, because nothing
//!   in these outputs depends on the host.
//! * The commands run in a scratch directory that links to the
//!   repository's `scenarios/`, `sweeps/`, `docs/` and `profiles/`, so
//!   relative paths work and files written with `-o` land there.
//!
//! Output blocks that are not checked use a plain fence.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One checked example: where it is, the commands (arguments after
/// `foliosim`) and the output shown.
struct Example {
    at: String,
    commands: Vec<Vec<String>>,
    expected: Vec<String>,
}

/// The fenced blocks of a Markdown file: (line of the opening fence, info
/// string, body lines).
fn fenced_blocks(text: &str) -> Vec<(usize, String, Vec<String>)> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String, Vec<String>)> = None;
    for (i, line) in text.lines().enumerate() {
        match open.as_mut() {
            None => {
                if let Some(info) = line.strip_prefix("```") {
                    open = Some((i + 1, info.trim().to_string(), Vec::new()));
                }
            }
            Some(b) => {
                if line == "```" {
                    blocks.push(open.take().expect("open block"));
                } else {
                    b.2.push(line.to_string());
                }
            }
        }
    }
    assert!(open.is_none(), "unclosed code block");
    blocks
}

/// The foliosim commands of shell lines: continuations joined, lines of
/// other programs and comments skipped.
fn commands(lines: &[String], at: &str) -> Vec<Vec<String>> {
    let mut joined = Vec::new();
    let mut cur = String::new();
    for line in lines {
        let line = line.trim_start_matches("$ ");
        match line.strip_suffix('\\') {
            Some(head) => {
                cur.push_str(head);
                cur.push(' ');
            }
            None => {
                cur.push_str(line);
                joined.push(std::mem::take(&mut cur));
            }
        }
    }
    let mut out = Vec::new();
    for line in joined {
        let line = line.trim();
        let words = shlex::split(line).unwrap_or_else(|| panic!("{at}: cannot split `{line}`"));
        let args = match words.as_slice() {
            [first, rest @ ..] if first == "foliosim" => rest.to_vec(),
            // `cargo run [--release] [--locked] -- ARGS`
            [c, r, rest @ ..] if c == "cargo" && r == "run" => {
                match rest.iter().position(|w| w == "--") {
                    Some(i)
                        if rest[..i]
                            .iter()
                            .all(|o| o == "--release" || o == "--locked") =>
                    {
                        rest[i + 1..].to_vec()
                    }
                    _ => continue,
                }
            }
            _ => continue,
        };
        for w in &args {
            assert!(
                !["|", "||", "&&", ";", ">", "<", "2>", "&"].contains(&w.as_str())
                    && !w.starts_with('>')
                    && !w.starts_with("2>"),
                "{at}: `{line}`: pipes and redirections are not run by this test"
            );
        }
        out.push(args);
    }
    out
}

/// The checked examples of one Markdown file.
fn examples(path: &Path) -> Vec<Example> {
    let text = std::fs::read_to_string(path).unwrap();
    let name = path
        .strip_prefix(repo())
        .unwrap_or(path)
        .display()
        .to_string();
    let mut out = Vec::new();
    let mut last_sh: Option<&Vec<String>> = None;
    let blocks = fenced_blocks(&text);
    for (line, info, body) in &blocks {
        let at = format!("{name}:{line}");
        match info.as_str() {
            "sh" => last_sh = Some(body),
            "text" => {
                let own: Vec<String> = body
                    .iter()
                    .take_while(|l| l.starts_with("$ "))
                    .cloned()
                    .collect();
                let (cmds, expected) = if own.is_empty() {
                    let sh = last_sh.unwrap_or_else(|| panic!("{at}: no sh block above"));
                    (commands(sh, &at), body.clone())
                } else {
                    (commands(&own, &at), body[own.len()..].to_vec())
                };
                assert!(
                    !cmds.is_empty(),
                    "{at}: no foliosim command for this output"
                );
                out.push(Example {
                    at,
                    commands: cmds,
                    expected,
                });
            }
            _ => {}
        }
    }
    out
}

/// Does `expected` (with `...` lines matching any run of lines) match
/// `actual`?
fn matches(expected: &[String], actual: &[&str]) -> bool {
    // ok[i][j]: expected[i..] matches actual[j..].
    let (n, m) = (expected.len(), actual.len());
    let mut ok = vec![vec![false; m + 1]; n + 1];
    ok[n][m] = true;
    for i in (0..n).rev() {
        for j in (0..=m).rev() {
            ok[i][j] = if expected[i] == "..." {
                ok[i + 1][j] || (j < m && ok[i][j + 1])
            } else {
                j < m && expected[i] == actual[j] && ok[i + 1][j + 1]
            };
        }
    }
    ok[0][0]
}

/// Runs an example's commands in `dir`; their standard output, joined. A
/// command run before with the same arguments is not run again: its
/// output is deterministic and the files it wrote are still there.
fn run(ex: &Example, dir: &Path, seen: &mut HashMap<Vec<String>, String>) -> String {
    let mut stdout = String::new();
    for args in &ex.commands {
        if let Some(out) = seen.get(args) {
            stdout.push_str(out);
            continue;
        }
        let out = Command::new(env!("CARGO_BIN_EXE_foliosim"))
            .args(args)
            .current_dir(dir)
            .env("NO_COLOR", "1")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: foliosim {}: {}\n{}",
            ex.at,
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let out = String::from_utf8(out.stdout).unwrap();
        stdout.push_str(&out);
        seen.insert(args.clone(), out);
    }
    stdout
}

/// A scratch directory with links to the repository's input directories.
fn scratch() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for d in ["scenarios", "sweeps", "docs", "profiles"] {
        std::os::unix::fs::symlink(repo().join(d), dir.path().join(d)).unwrap();
    }
    dir
}

fn docs() -> Vec<PathBuf> {
    let mut files = vec![repo().join("README.md")];
    let mut more: Vec<PathBuf> = std::fs::read_dir(repo().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    more.sort();
    files.extend(more);
    files
}

#[test]
fn documented_outputs_are_what_foliosim_prints() {
    let dir = scratch();
    let mut failures = Vec::new();
    let mut checked = Vec::new();
    let mut seen = HashMap::new();
    for file in docs() {
        for ex in examples(&file) {
            let actual = run(&ex, dir.path(), &mut seen);
            let lines: Vec<&str> = actual.lines().collect();
            if !matches(&ex.expected, &lines) {
                failures.push(format!(
                    "{}: the output of `foliosim {}` is not what the document shows; it prints:\n{actual}",
                    ex.at,
                    ex.commands.last().unwrap().join(" ")
                ));
            }
            checked.push(ex);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The README's first command and its output are checked.
    let first = checked.first().expect("README.md has checked examples");
    assert!(first.at.starts_with("README.md:"), "{}", first.at);
    assert_eq!(first.commands[0], ["run", "scenarios/seed001/seq-16g.toml"]);
}

#[test]
fn continuation_lines_join_and_other_programs_are_skipped() {
    let sh: Vec<String> = [
        "# a comment",
        "cargo run --release --locked -- run a.toml",
        "foliosim sweep a.toml --grid arch=x86_64,arm64 \\",
        "    --set 'fault_around_bytes=4096<<9' -o t.csv",
        "tools/setup-vm.sh; cargo test --workspace",
    ]
    .map(String::from)
    .to_vec();
    let cmds = commands(&sh, "t");
    assert_eq!(
        cmds,
        [
            vec!["run", "a.toml"],
            vec![
                "sweep",
                "a.toml",
                "--grid",
                "arch=x86_64,arm64",
                "--set",
                "fault_around_bytes=4096<<9",
                "-o",
                "t.csv"
            ],
        ]
    );
}

#[test]
fn ellipsis_lines_match_any_run_of_lines() {
    let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert!(matches(&e(&["a", "...", "d"]), &["a", "b", "c", "d"]));
    assert!(matches(&e(&["a", "...", "b"]), &["a", "b"]));
    assert!(matches(&e(&["a", "..."]), &["a", "b"]));
    assert!(!matches(&e(&["a", "...", "d"]), &["a", "b", "c"]));
    assert!(!matches(&e(&["a", "b"]), &["a", "b", "c"]));
    assert!(!matches(&e(&["a", "c"]), &["a", "b"]));
}

#[test]
#[should_panic(expected = "pipes and redirections")]
fn pipes_are_refused() {
    commands(&["foliosim run - | head".to_string()], "t");
}
