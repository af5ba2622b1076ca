//! `[[system.swap]]`, the `series.*` switches, the explicit-knob set and the
//! memory-cgroup steps (`memcg`, `memcg_reclaim`, `force_empty`).

use crate::common;

use common::{error, parse, parse_with, set_error, BASE};
use foliosim_scenario::*;

fn ok(text: &str, sets: &[(&str, &str)]) -> Scenario {
    match parse_with(text, sets) {
        Ok(s) => s,
        Err(e) => panic!("unexpected error: {e}"),
    }
}

fn at(e: &ScenarioError) -> (u32, u32, &str) {
    (e.line, e.col, e.field.as_str())
}

fn explicit(s: &Scenario) -> Vec<&str> {
    s.system.explicit.iter().map(String::as_str).collect()
}

const SWAPS: &str = r#"
[system]
memory = "1G"

[[system.swap]]
kind = "zram"
size = "256M"

[[system.swap]]
kind = "block"
size = "1G"
rotational = true

[[system.swap]]
kind = "file"
size = 1048576

[[system.swap]]
kind = "block"
size = "64M"
"#;

#[test]
fn swap_devices_in_order_with_knobs() {
    let s = parse(SWAPS);
    let sys = &s.system;
    assert_eq!(
        sys.swap,
        [
            SwapDevice {
                kind: SwapKind::Zram,
                size: 256 << 20
            },
            SwapDevice {
                kind: SwapKind::Block { rotational: true },
                size: 1 << 30
            },
            SwapDevice {
                kind: SwapKind::File,
                size: 1 << 20
            },
            SwapDevice {
                kind: SwapKind::Block { rotational: false },
                size: 64 << 20
            },
        ]
    );
    let k = &sys.knobs;
    assert_eq!(k["swap"], "4");
    assert_eq!(k["swap.0.kind"], "zram");
    assert_eq!(k["swap.0.size"], "268435456");
    assert!(!k.contains_key("swap.0.rotational"));
    assert_eq!(k["swap.1.kind"], "block");
    assert_eq!(k["swap.1.size"], "1073741824");
    assert_eq!(k["swap.1.rotational"], "1");
    assert_eq!(k["swap.2.kind"], "file");
    assert_eq!(k["swap.2.size"], "1048576");
    assert!(!k.contains_key("swap.2.rotational"));
    assert_eq!(k["swap.3.rotational"], "0");
    // rotational of swap 3 was not written: a default, not explicit.
    assert_eq!(
        explicit(&s),
        [
            "memory",
            "swap",
            "swap.0.kind",
            "swap.0.size",
            "swap.1.kind",
            "swap.1.rotational",
            "swap.1.size",
            "swap.2.kind",
            "swap.2.size",
            "swap.3.kind",
            "swap.3.size",
        ]
    );
}

#[test]
fn swap_spellings_are_equivalent() {
    let inline = r#"
[system]
memory = "1G"
swap = [
  { kind = "zram", size = "256M" },
  { kind = "block", size = "1G", rotational = true },
  { kind = "file", size = "1M" },
  { kind = "block", size = "64M" },
]
"#;
    let top = "system.memory = \"1G\"\n[[system.swap]]\nkind = \"zram\"\nsize = \"256M\"\n";
    let a = parse(SWAPS).system;
    let b = parse(inline).system;
    assert_eq!(a.swap, b.swap);
    assert_eq!(a.knobs, b.knobs);
    assert_eq!(a.explicit, b.explicit);
    assert_eq!(parse(top).system.swap, a.swap[..1]);
    // An empty list is explicit: "no swap".
    let none = parse("[system]\nswap = []\n");
    assert!(none.system.swap.is_empty());
    assert_eq!(none.system.knobs["swap"], "0");
    assert_eq!(explicit(&none), ["swap"]);
}

#[test]
fn swap_errors_point_at_the_field() {
    // Missing kind: at the table header.
    let e = error("[[system.swap]]\nsize = \"1M\"\n");
    assert_eq!(at(&e), (1, 1, "system.swap[1].kind"));
    assert_eq!(e.message, "missing required key `kind` in system.swap[1]");
    let e = error(
        "[[system.swap]]\nkind = \"zram\"\nsize = \"1M\"\n[[system.swap]]\nkind = \"file\"\n",
    );
    assert_eq!(at(&e), (4, 1, "system.swap[2].size"));
    // Bad kind.
    let e = error("[[system.swap]]\nkind = \"nvme\"\nsize = \"1M\"\n");
    assert_eq!(at(&e), (2, 8, "system.swap[1].kind"));
    assert_eq!(
        e.message,
        "expected one of \"file\", \"block\", \"zram\", found string \"nvme\""
    );
    // Sizes: too small, not page-aligned, not a size.
    let e = error("[[system.swap]]\nkind = \"zram\"\nsize = \"512K\"\n");
    assert_eq!(at(&e), (3, 8, "system.swap[1].size"));
    assert_eq!(
        e.message,
        "expected a multiple of the page size (4096) of at least 1 MiB, found 524288 bytes"
    );
    let e = error("[[system.swap]]\nkind = \"zram\"\nsize = 1048577\n");
    assert_eq!(at(&e), (3, 8, "system.swap[1].size"));
    let e = error("[[system.swap]]\nkind = \"zram\"\nsize = \"1.5G\"\n");
    assert_eq!(at(&e), (3, 8, "system.swap[1].size"));
    // rotational: only for block devices, and a boolean.
    let e = error("[[system.swap]]\nkind = \"zram\"\nsize = \"1M\"\nrotational = false\n");
    assert_eq!(at(&e), (4, 14, "system.swap[1].rotational"));
    assert_eq!(
        e.message,
        "`rotational` is only allowed with kind = \"block\""
    );
    let e = error("[[system.swap]]\nkind = \"block\"\nsize = \"1M\"\nrotational = 1\n");
    assert_eq!(at(&e), (4, 14, "system.swap[1].rotational"));
    assert!(e.message.contains("expected a boolean"), "{}", e.message);
    // Unknown key.
    let e = error("[[system.swap]]\nkind = \"zram\"\nsize = \"1M\"\npriority = 3\n");
    assert_eq!(at(&e), (4, 1, "system.swap[1].priority"));
    assert_eq!(
        e.message,
        "unknown key `priority` in system.swap[1]; expected one of: kind, size, rotational"
    );
    // Not an array of tables.
    let e = error("[system]\nswap = \"zram\"\n");
    assert_eq!(at(&e), (2, 8, "system.swap"));
    assert!(
        e.message.starts_with("expected an array of tables"),
        "{}",
        e.message
    );
    let e = error("[system.swap]\nkind = \"zram\"\n");
    assert_eq!(e.field, "system.swap");
    let e = error("[system]\nswap = [1]\n");
    assert_eq!(e.field, "system.swap[1]");
    assert!(e.message.contains("expected a table"), "{}", e.message);
    assert!(e
        .to_string()
        .starts_with("t.toml:2:9: system.swap[1]: expected a table"));
}

#[test]
fn series_switches() {
    let s = parse("[system]\nseries.batch_anon_unmap = true\nseries.batch_file_unmap = 0\n");
    let series = s.system.series;
    assert!(series.batch_anon_unmap);
    assert!(!series.batch_file_unmap);
    assert!(!series.batch_folio_referenced);
    assert_eq!(s.system.knobs["series.batch_anon_unmap"], "1");
    assert_eq!(s.system.knobs["series.batch_file_unmap"], "0");
    assert_eq!(s.system.knobs["series.batch_folio_referenced"], "0");
    assert_eq!(
        explicit(&s),
        ["series.batch_anon_unmap", "series.batch_file_unmap"]
    );
    let nested = parse("[system.series]\nbatch_folio_referenced = \"1\"\n");
    assert!(nested.system.series.batch_folio_referenced);
    assert_eq!(explicit(&nested), ["series.batch_folio_referenced"]);
}

#[test]
fn series_errors() {
    let e = error("[system]\nseries.batch_anon_unmap = \"yes\"\n");
    assert_eq!(at(&e), (2, 27, "system.series.batch_anon_unmap"));
    assert_eq!(
        e.message,
        "expected 0, 1, true or false, found string \"yes\""
    );
    let e = error("[system]\nseries.batch_everything = true\n");
    assert_eq!(at(&e), (2, 8, "system.series.batch_everything"));
    assert_eq!(
        e.message,
        "unknown patch-series switch `series.batch_everything`; expected one of: \
         series.batch_anon_unmap, series.batch_folio_referenced, series.batch_file_unmap, \
         series.pagemap_shmem_swap, series.reclaim_stats_per_lruvec, \
         series.mglru_memcg_abort, series.pagemap_walk_to_pmd_end"
    );
    let e = error("[system]\nseries = true\n");
    assert_eq!(at(&e), (2, 1, "system.series"));
    let e = error("[system]\nswapiness = 3\n");
    assert!(
        e.message
            .contains("swap (an array of tables, [[system.swap]])")
            && e.message.contains("series.batch_file_unmap"),
        "{}",
        e.message
    );
}

#[test]
fn set_series_and_swap() {
    let s = ok("", &[("series.batch_anon_unmap", "true")]);
    assert!(s.system.series.batch_anon_unmap);
    assert_eq!(s.system.knobs["series.batch_anon_unmap"], "1");
    assert_eq!(explicit(&s), ["series.batch_anon_unmap"]);
    let s = ok(
        "[system]\nseries.batch_anon_unmap = true\n",
        &[("system.series.batch_anon_unmap", "0")],
    );
    assert!(!s.system.series.batch_anon_unmap);
    // The knob keys of swap devices work with --set (0-based, appending
    // when the index is the number of devices).
    let s = ok(
        "",
        &[
            ("swap.0.kind", "zram"),
            ("swap.0.size", "1G"),
            ("system.swap.1.kind", "block"),
            ("swap.1.size", "2G"),
            ("swap.1.rotational", "true"),
        ],
    );
    assert_eq!(
        s.system.swap,
        [
            SwapDevice {
                kind: SwapKind::Zram,
                size: 1 << 30
            },
            SwapDevice {
                kind: SwapKind::Block { rotational: true },
                size: 2 << 30
            },
        ]
    );
    let s = ok(SWAPS, &[("swap.2.size", "8M"), ("swap.0.kind", "file")]);
    assert_eq!(s.system.swap[2].size, 8 << 20);
    assert_eq!(s.system.swap[0].kind, SwapKind::File);
    assert_eq!(s.system.swap.len(), 4);
    // A whole list as a TOML value.
    let s = ok(SWAPS, &[("swap", "[{ kind = \"zram\", size = \"4M\" }]")]);
    assert_eq!(s.system.knobs["swap"], "1");
    assert_eq!(s.system.knobs["swap.0.size"], "4194304");
    assert!(!s.system.knobs.contains_key("swap.1.kind"));
    // Errors against the override.
    let e = set_error("", &[("swap.1.kind", "zram")]);
    assert_eq!(e.file, SET_FILE);
    assert_eq!(e.field, "swap.1.kind=zram");
    assert!(
        e.message
            .starts_with("no swap device 1: the scenario has 0"),
        "{}",
        e.message
    );
    let e = set_error("", &[("swap.0.kind", "zram")]);
    assert_eq!(
        e.to_string(),
        "--set swap.0.kind=zram: system.swap[1].size: missing required key `size` in \
         system.swap[1]"
    );
    let e = set_error("", &[("swap.0.kind", "tape"), ("swap.0.size", "1M")]);
    assert_eq!(
        e.to_string(),
        "--set swap.0.kind=tape: system.swap[1].kind: expected one of \"file\", \"block\", \
         \"zram\", found string \"tape\""
    );
    let e = set_error("", &[("series.batch_anon_unmap", "maybe")]);
    assert_eq!(
        e.to_string(),
        "--set series.batch_anon_unmap=maybe: system.series.batch_anon_unmap: expected 0, 1, \
         true or false, found string \"maybe\""
    );
}

#[test]
fn explicit_set_follows_the_file_and_overrides() {
    let text = r#"
[system]
arch = "arm64"
transparent_hugepage.hugepages-64kB.enabled = "always"
read_ahead_kb = 128
"#;
    let s = ok(
        text,
        &[
            ("fault_around_bytes", "4096"),
            ("transparent_hugepage.hugepages-2048kB.enabled", "never"),
            ("series.batch_anon_unmap", "true"),
        ],
    );
    // A value equal to the default is explicit too (read_ahead_kb).
    assert_eq!(
        explicit(&s),
        [
            "arch",
            "fault_around_bytes",
            "read_ahead_kb",
            "series.batch_anon_unmap",
            "transparent_hugepage.hugepages-2048kB.enabled",
            "transparent_hugepage.hugepages-64kB.enabled",
        ]
    );
    assert!(s
        .system
        .explicit
        .iter()
        .all(|k| s.system.knobs.contains_key(k)));
    // Keys are spelled as in `knobs`, whatever the file's spelling.
    let s = parse("[system.transparent_hugepage.hugepages-064kB]\nenabled = \"always\"\n");
    assert_eq!(
        explicit(&s),
        ["transparent_hugepage.hugepages-64kB.enabled"]
    );
}

fn memcg_steps(s: &Scenario) -> Vec<StepKind> {
    s.steps[1..].iter().map(|s| s.kind.clone()).collect()
}

#[test]
fn memcg_steps_parse() {
    let text = format!(
        "{BASE}{}",
        r#"
[[step]]
op = "memcg"
limit = "64M"
[[step]]
op = "memcg_reclaim"
amount = "8M"
[[step]]
op = "force_empty"
[[step]]
op = "memcg"
[[step]]
op = "memcg_reclaim"
amount = 1
swappiness = "max"
[[step]]
op = "fork"
[[step.child]]
op = "memcg_reclaim"
amount = "1G"
swappiness = 0
[[step.child]]
op = "memcg"
limit = "4M"
[[step.child]]
op = "force_empty"
"#
    );
    let s = parse(&text);
    let kinds = memcg_steps(&s);
    assert!(matches!(kinds[0], StepKind::Memcg { limit: Some(l), .. } if l == 64 << 20));
    assert!(matches!(
        kinds[1],
        StepKind::MemcgReclaim { amount, swappiness: None } if amount == 8 << 20
    ));
    assert!(matches!(kinds[2], StepKind::ForceEmpty));
    assert!(matches!(kinds[3], StepKind::Memcg { limit: None, .. }));
    // swappiness = "max" is SWAPPINESS_ANON_ONLY (201).
    assert!(matches!(
        kinds[4],
        StepKind::MemcgReclaim {
            amount: 1,
            swappiness: Some(201)
        }
    ));
    let StepKind::Fork { child } = &kinds[5] else {
        panic!("not a fork: {:?}", kinds[5]);
    };
    assert!(matches!(
        child[0].kind,
        StepKind::MemcgReclaim { amount, swappiness: Some(0) } if amount == 1 << 30
    ));
    assert!(matches!(child[1].kind, StepKind::Memcg { limit: Some(l), .. } if l == 4 << 20));
    assert!(matches!(child[2].kind, StepKind::ForceEmpty));
    // memory.high: a size (0 allowed), or "max" for none.
    for (high, want) in [
        ("\"32M\"", Some(32 << 20)),
        ("0", Some(0)),
        ("\"max\"", None),
    ] {
        let s = parse(&format!(
            "{BASE}\n[[step]]\nop = \"memcg\"\nhigh = {high}\n"
        ));
        assert!(
            matches!(memcg_steps(&s)[0], StepKind::Memcg { high, .. } if high == want),
            "high = {high}"
        );
    }
    // memory.swap.max and memory.swap.high: a size (0 allowed), or "max"
    // for none.
    for key in ["swap_max", "swap_high"] {
        for (v, want) in [("\"4M\"", Some(4 << 20)), ("0", Some(0)), ("\"max\"", None)] {
            let s = parse(&format!("{BASE}\n[[step]]\nop = \"memcg\"\n{key} = {v}\n"));
            let StepKind::Memcg {
                swap_max,
                swap_high,
                ..
            } = memcg_steps(&s)[0]
            else {
                unreachable!()
            };
            let got = if key == "swap_max" {
                swap_max
            } else {
                swap_high
            };
            assert_eq!(got, want, "{key} = {v}");
        }
    }
    // memory.min and memory.low: sizes, 0 (none) by default.
    let s = parse(&format!(
        "{BASE}\n[[step]]\nop = \"memcg\"\nmin = \"8M\"\nlow = \"16M\"\n[[step]]\nop = \"memcg\"\n"
    ));
    let kinds = memcg_steps(&s);
    assert!(
        matches!(kinds[0], StepKind::Memcg { min, low, .. } if min == 8 << 20 && low == 16 << 20)
    );
    assert!(matches!(kinds[1], StepKind::Memcg { min: 0, low: 0, .. }));
    // memcg_high: a size or "max", in a cgroup.
    let s = parse(&format!(
        "{BASE}\n[[step]]\nop = \"memcg\"\n[[step]]\nop = \"memcg_high\"\nhigh = \"16M\"\n\
         [[step]]\nop = \"memcg_high\"\nhigh = \"max\"\n"
    ));
    let kinds = memcg_steps(&s);
    assert!(matches!(kinds[1], StepKind::MemcgHigh { high: Some(h) } if h == 16 << 20));
    assert!(matches!(kinds[2], StepKind::MemcgHigh { high: None }));
    // Inline child steps too.
    let s = parse(
        "[[step]]\nop = \"fork\"\nchild = [{ op = \"memcg\", limit = \"8M\" }, { op = \"force_empty\" }]\n",
    );
    let StepKind::Fork { child } = &s.steps[0].kind else {
        panic!("not a fork");
    };
    assert_eq!(child.len(), 2);
}

#[test]
fn memcg_step_errors() {
    let step = |body: &str| format!("{BASE}\n[[step]]\n{body}");
    // Lines: BASE ends on line 11, [[step]] on 12 (see errors.rs).
    let e = error(&step("op = \"memcg\"\nlimit = \"1.5M\"\n"));
    assert_eq!(at(&e), (14, 9, "step[2].limit"));
    let e = error(&step("op = \"memcg\"\nlimit = 0\n"));
    assert_eq!(at(&e), (14, 9, "step[2].limit"));
    assert_eq!(
        e.message,
        "expected a positive multiple of the page size (4096), found 0"
    );
    let e = error(&step("op = \"memcg\"\nlimit = 5000\n"));
    assert_eq!(at(&e), (14, 9, "step[2].limit"));
    let e = error(&step("op = \"memcg\"\namount = \"1M\"\n"));
    assert_eq!(at(&e), (14, 1, "step[2].amount"));
    assert_eq!(
        e.message,
        "unknown key `amount` in step[2] (op = \"memcg\"); expected one of: op, limit, memsw_limit, zswap_max, swap_max, swap_high, high, min, low"
    );
    // memory.high: page-aligned (0 allowed) or "max".
    let e = error(&step("op = \"memcg\"\nhigh = \"6K\"\n"));
    assert_eq!(at(&e), (14, 8, "step[2].high"));
    assert_eq!(
        e.message,
        "expected a multiple of the page size (4096), found 6144"
    );
    let e = error(&step("op = \"memcg\"\nlow = \"6K\"\n"));
    assert_eq!(at(&e), (14, 7, "step[2].low"));
    let e = error(&step("op = \"memcg\"\nhigh = \"none\"\n"));
    assert_eq!(at(&e).2, "step[2].high");
    let e = error(&step("op = \"memcg\"\nzswap_max = \"6K\"\n"));
    assert_eq!(at(&e), (14, 13, "step[2].zswap_max"));
    assert_eq!(
        e.message,
        "expected a multiple of the page size (4096), found 6144"
    );
    let e = error(&step("op = \"memcg\"\nswap_max = \"6K\"\n"));
    assert_eq!(at(&e), (14, 12, "step[2].swap_max"));
    assert_eq!(
        e.message,
        "expected a multiple of the page size (4096), found 6144"
    );
    let e = error(&step("op = \"memcg\"\nswap_max = -1\n"));
    assert_eq!(at(&e).2, "step[2].swap_max");
    let e = error(&step("op = \"memcg\"\nswap_high = \"6K\"\n"));
    assert_eq!(at(&e), (14, 13, "step[2].swap_high"));
    // memory.memsw.limit_in_bytes: not below the memory limit (which it
    // needs), and not beside cgroup v2's files.
    for (body, field, says) in [
        (
            "memsw_limit = \"8M\"\n",
            "memsw_limit",
            "at least the cgroup's `limit`",
        ),
        (
            "limit = \"8M\"\nmemsw_limit = \"4M\"\n",
            "memsw_limit",
            "at least the cgroup's `limit`",
        ),
        (
            "limit = \"8M\"\nmemsw_limit = \"16M\"\nswap_max = \"4M\"\n",
            "swap_max",
            "only allowed without memsw_limit",
        ),
    ] {
        let e = error(&step(&format!("op = \"memcg\"\n{body}")));
        assert_eq!(at(&e).2, format!("step[2].{field}"), "{body}");
        assert!(e.message.contains(says), "{body}: {}", e.message);
    }
    let with_memcg = |body: &str| step(&format!("op = \"memcg\"\n[[step]]\n{body}"));
    let e = error(&with_memcg("op = \"memcg_reclaim\"\n"));
    assert_eq!(at(&e), (14, 1, "step[3].amount"));
    assert_eq!(
        e.message,
        "missing required key `amount` in step[3] (op = \"memcg_reclaim\")"
    );
    let e = error(&with_memcg("op = \"memcg_reclaim\"\namount = 0\n"));
    assert_eq!(at(&e), (16, 10, "step[3].amount"));
    assert_eq!(e.message, "expected a size above 0, found 0");
    let e = error(&with_memcg("op = \"force_empty\"\nregion = \"buf\"\n"));
    assert_eq!(at(&e), (16, 1, "step[3].region"));
    assert!(e.message.ends_with("expected one of: op"), "{}", e.message);
    let e = error(&with_memcg("op = \"memcg_high\"\n"));
    assert_eq!(at(&e).2, "step[3].high");
    assert_eq!(
        e.message,
        "missing required key `high` in step[3] (op = \"memcg_high\")"
    );
    let e = error(&step("op = \"memcg_high\"\nhigh = \"1M\"\n"));
    assert_eq!(at(&e).2, "step[2].op");
    // Reclaim outside a scenario memcg.
    let e = error(&step("op = \"memcg_reclaim\"\namount = \"1M\"\n"));
    assert_eq!(at(&e), (13, 6, "step[2].op"));
    assert!(
        e.message.starts_with(
            "op = \"memcg_reclaim\" acts on the process's memory cgroup, but this process is \
             not in one"
        ),
        "{}",
        e.message
    );
    let e = error(&step("op = \"force_empty\"\n"));
    assert_eq!(at(&e), (13, 6, "step[2].op"));
    // A child's memcg is not its parent's.
    let e = error(&step(
        "op = \"fork\"\n[[step.child]]\nop = \"memcg\"\n[[step]]\nop = \"force_empty\"\n",
    ));
    assert_eq!(e.field, "step[3].op");
    // A parent's memcg before the fork is inherited, after it is not.
    parse(&step(
        "op = \"memcg\"\n[[step]]\nop = \"fork\"\n[[step.child]]\nop = \"force_empty\"\n",
    ));
    let e = error(&step(
        "op = \"fork\"\n[[step.child]]\nop = \"force_empty\"\n[[step]]\nop = \"memcg\"\n",
    ));
    assert_eq!(e.field, "step[2].child[1].op");
    // Unknown op lists the new ones.
    let e = error(&step("op = \"memcg-reclaim\"\n"));
    assert!(
        e.message
            .contains("\"memcg\", \"memcg_reclaim\", \"force_empty\""),
        "{}",
        e.message
    );
}

#[test]
fn set_memcg_step_fields() {
    let text = format!("{BASE}[[step]]\nop = \"memcg\"\nlimit = \"64M\"\n");
    let s = ok(&text, &[("step.2.limit", "128M")]);
    assert!(matches!(s.steps[1].kind, StepKind::Memcg { limit: Some(l), .. } if l == 128 << 20));
    let e = set_error(&text, &[("step.2.limit", "-1")]);
    assert_eq!(e.field, "step.2.limit=-1");
    assert!(
        e.message.starts_with("step[2].limit: expected a size"),
        "{}",
        e.message
    );
}

/// `map` on an mmap step: a boolean, settable with --set.
#[test]
fn mmap_map_is_a_boolean() {
    let mmap = "[[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"1M\"\n";
    let on = |s: &Scenario| matches!(s.steps[0].kind, StepKind::Mmap(MmapStep { map, .. }) if map);
    assert!(!on(&ok(mmap, &[])));
    assert!(on(&ok(&format!("{mmap}map = true\n"), &[])));
    assert!(on(&ok(mmap, &[("step.1.map", "true")])));
    let e = error(&format!("{mmap}map = \"yes\"\n"));
    assert_eq!(at(&e), (6, 7, "step[1].map"));
    assert!(e.message.contains("expected a boolean"), "{}", e.message);
}

#[test]
fn swap_readahead_knobs() {
    let s = parse_str(
        "t.toml",
        "[system]\nvm.page_cluster = 0\nvma_ra_enabled = false\n",
        &[],
    )
    .expect("parses");
    assert_eq!(s.system.page_cluster, 0);
    assert!(!s.system.vma_ra_enabled);
    assert_eq!(s.system.knobs["vm.page_cluster"], "0");
    assert_eq!(s.system.knobs["vma_ra_enabled"], "0");
    assert!(s.system.explicit.contains("vm.page_cluster"));
    let e = parse_str("t.toml", "[system]\nvm.page_cluster = 32\n", &[]).unwrap_err();
    assert!(
        e.to_string().contains("system.vm.page_cluster") && e.to_string().contains("from 0 to 31"),
        "{e}"
    );
    let e = parse_str("t.toml", "[system]\nvma_ra_enabled = 2\n", &[]).unwrap_err();
    assert!(e.to_string().contains("system.vma_ra_enabled"), "{e}");
}
