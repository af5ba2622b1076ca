//! Scenario parsing, validation and `--set` overrides on arbitrary input:
//! every input either parses or is a `ScenarioError` naming a place; none
//! panics. The input is a scenario text, optionally followed by a line
//! `--set` and `KEY=VALUE` lines.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (body, sets) = text.split_once("\n--set\n").unwrap_or((text, ""));
    let overrides: Vec<(String, String)> = sets
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    if let Err(e) = foliosim_scenario::parse_str("fuzz.toml", body, &overrides) {
        // Errors render (file, line, column, field).
        let _ = e.to_string();
    }
});
