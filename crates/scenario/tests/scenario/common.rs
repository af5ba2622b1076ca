//! Helpers shared by the integration tests.
#![allow(dead_code)]

use foliosim_scenario::{parse_str, MmapStep, Scenario, ScenarioError, StepKind};

pub fn parse(text: &str) -> Scenario {
    match parse_str("t.toml", text, &[]) {
        Ok(s) => s,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

pub fn parse_with(text: &str, sets: &[(&str, &str)]) -> Result<Scenario, ScenarioError> {
    let sets: Vec<(String, String)> = sets
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
    parse_str("t.toml", text, &sets)
}

pub fn error(text: &str) -> ScenarioError {
    match parse_str("t.toml", text, &[]) {
        Ok(_) => panic!("expected an error for:\n{text}"),
        Err(e) => e,
    }
}

pub fn set_error(text: &str, sets: &[(&str, &str)]) -> ScenarioError {
    match parse_with(text, sets) {
        Ok(_) => panic!("expected an error for {sets:?}"),
        Err(e) => e,
    }
}

/// The mmap step `s.steps[i]`; panics if it is another kind of step.
pub fn mmap_step(s: &Scenario, i: usize) -> &MmapStep {
    match &s.steps[i].kind {
        StepKind::Mmap(m) => m,
        _ => panic!("not an mmap: {:?}", s.steps[i]),
    }
}

/// A scenario with one 2 MiB anonymous region `buf` and one file.
pub const BASE: &str = r#"
[[file]]
name = "data"
size = "8M"

[[step]]
op = "mmap"
region = "buf"
kind = "anon"
size = "2M"
"#;
