//! Arbitrary input never panics: it parses or returns an error.

use foliosim_scenario::{parse_size, parse_str, SplitMix64};

const VALID: &str = r#"
name = "g"
seed = 3
[system]
memory = "1G"
transparent_hugepage.hugepages-64kB.enabled = "always"
[[file]]
name = "f"
size = "1M"
fill = "read"
[[step]]
op = "mmap"
region = "a"
kind = "file"
file = "f"
size = "64K"
[[step]]
op = "phase"
name = "p"
[[step]]
op = "touch"
region = "a"
access = "read"
pattern = "random"
len = 4096
[[step]]
op = "fork"
child = [{ op = "touch", region = "a", access = "write" }]
[[expect]]
phase = "p"
counter = "pgfault"
value = 1
tolerance = "1%"
"#;

const ALPHABET: &[u8] = b"[]{}=\"'.,#\n\t -_0123456789abcdefxyzKMGT<%\\\xc3\xa9";

/// Deterministic garbage: random bytes from a TOML-ish alphabet.
fn garbage(rng: &mut SplitMix64, len: usize) -> String {
    let bytes: Vec<u8> = (0..len)
        .map(|_| ALPHABET[(rng.next_u64() % ALPHABET.len() as u64) as usize])
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

#[test]
fn valid_base_parses() {
    parse_str("g.toml", VALID, &[]).expect("the base scenario is valid");
}

#[test]
fn random_text_never_panics() {
    let mut rng = SplitMix64::new(1);
    for i in 0..3000 {
        let text = garbage(&mut rng, i % 200);
        let _ = parse_str("g.toml", &text, &[]);
        let _ = parse_size(&text);
    }
}

#[test]
fn mutated_valid_scenarios_never_panic() {
    let mut rng = SplitMix64::new(2);
    let bytes = VALID.as_bytes();
    for _ in 0..3000 {
        let mut mutated = bytes.to_vec();
        for _ in 0..1 + rng.next_u64() % 4 {
            let at = (rng.next_u64() % mutated.len() as u64) as usize;
            let with = ALPHABET[(rng.next_u64() % ALPHABET.len() as u64) as usize];
            match rng.next_u64() % 3 {
                0 => mutated[at] = with,
                1 => mutated.insert(at, with),
                _ => {
                    mutated.remove(at);
                }
            }
        }
        let text = String::from_utf8_lossy(&mutated);
        if let Err(e) = parse_str("g.toml", &text, &[]) {
            assert!(!e.to_string().is_empty());
        }
    }
}

#[test]
fn random_overrides_never_panic() {
    let keys = [
        "name",
        "seed",
        "system",
        "memory",
        "step.1",
        "step.1.op",
        "step.2.name",
        "step.4.child",
        "file.f.size",
        "file.f",
        "transparent_hugepage.hugepages-64kB",
        "step.3.seed",
        "..",
        "x.y.z",
    ];
    let mut rng = SplitMix64::new(3);
    for i in 0..2000 {
        let key = keys[i % keys.len()].to_owned();
        let len = (rng.next_u64() % 12) as usize;
        let value = garbage(&mut rng, len);
        let _ = parse_str("g.toml", VALID, &[(key, value)]);
    }
}

#[test]
fn deeply_nested_input_is_an_error_not_a_crash() {
    let deep = format!("a = {}1{}", "[".repeat(5000), "]".repeat(5000));
    assert!(parse_str("g.toml", &deep, &[]).is_err());
    let forks = |depth: usize| {
        (0..depth)
            .map(|d| format!("[[step{}]]\nop = \"fork\"\n", ".child".repeat(d)))
            .collect::<String>()
    };
    let s = parse_str("g.toml", &forks(8), &[]).expect("8 nested forks parse");
    assert_eq!(s.steps.len(), 1);
    assert!(parse_str("g.toml", &forks(500), &[]).is_err());
}

/// Line and column of every node come from a line-start table: a
/// 500,000-element inline array on one line parses (and is reported) in
/// time linear in its length, and its last element is located exactly.
#[test]
fn a_long_line_is_located_without_rescanning_it() {
    let n = 500_000;
    let items = vec!["1"; n].join(",");
    let text = format!("seed = 1\nx = [{items}, \"last\"]\n");
    let e = foliosim_scenario::parse_str("long.toml", &text, &[]).unwrap_err();
    assert_eq!((e.line, e.col), (2, 1), "{e}");
    let bad = format!("seed = [{items}]\n");
    let e = foliosim_scenario::parse_str("long.toml", &bad, &[]).unwrap_err();
    assert_eq!(e.line, 1, "{e}");
}
