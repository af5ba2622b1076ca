//! Sizes and strides at the edge of the 64-bit address space: modelled
//! outcomes, never a wrap-around or an internal error.

use crate::common;

use common::*;
use foliosim_sim::SimError;

#[test]
fn a_mapping_larger_than_the_address_space_fails_with_enomem() {
    // __get_unmapped_area(): `len > TASK_SIZE` fails with ENOMEM before any
    // search, as mmap(2) of 2^64 - 4096 bytes does on the host.
    let sc = [system(""), mmap_anon("a", "18446744073709547520")].concat();
    assert_fails_with(&sc, "ENOMEM");
}

#[test]
fn a_stride_past_the_end_of_the_address_space_touches_once() {
    // The first access faults the first page; the next address would lie
    // beyond 2^64, so the touch ends there (it does not wrap around below
    // the region).
    let sc = [
        system(""),
        mmap_anon("a", "1M"),
        phase("touch"),
        touch(
            "a",
            "write",
            "pattern = \"stride\"\nstride = \"18446744073709547520\"",
        ),
    ]
    .concat();
    let r = run(&sc);
    assert_eq!(c(&r, "touch", "minor-faults"), 1);
}

#[test]
fn a_machine_too_big_for_the_host_is_refused_before_it_starts() {
    // 15 TiB of simulated RAM: 20 bytes of `struct page` state per 4 KiB
    // frame (flags 4, index 4, mapping 2, LRU links 8, memcg id 2) is
    // 75 GiB, plus a 4 KiB page table per 2 MiB (30 GiB): refused under a
    // 64 GiB limit, naming the page frames as the largest part.
    let sc = foliosim_scenario::parse_str(
        "big.toml",
        &[system_mem("15T", ""), anon_written("a", "14T")].concat(),
        &[],
    )
    .unwrap();
    let est = foliosim_sim::estimate_peak(&sc);
    assert_eq!(est.parts[0].1, (15u64 << 40) / 4096 * 20);
    let msg = too_big(&sc, 64 << 30);
    assert!(msg.contains("simulated page frames"), "{msg}");
}

/// The bytes of the estimate's part whose description contains `what`.
fn estimate_part(est: &foliosim_sim::Estimate, what: &str) -> u64 {
    est.parts
        .iter()
        .find(|(w, _)| w.contains(what))
        .map(|(_, b)| *b)
        .unwrap_or_else(|| panic!("no part {what}: {:?}", est.parts))
}

/// The message of the refusal of `sc` under a `max_memory` limit, which
/// must be the estimate's.
fn too_big(sc: &foliosim_scenario::Scenario, max_memory: u64) -> String {
    let opts = foliosim_sim::RunOptions {
        check: true,
        max_memory: Some(max_memory),
        ..Default::default()
    };
    match foliosim_sim::run(sc, opts) {
        Err(e @ SimError::TooBig { .. }) => e.to_string(),
        other => panic!("{other:?}"),
    }
}

/// With the available-memory check lifted (`--max-memory` of 1 PiB), the
/// host itself must refuse the 107 GiB the 15 TiB machine needs on a host
/// with less RAM and swap than that under the heuristic or strict
/// overcommit policy (`__vm_enough_memory()`); the run then ends with an
/// error naming the estimate, never an abort in an allocation.
#[test]
fn an_allocation_the_host_refuses_is_an_error_not_an_abort() {
    let policy = std::fs::read_to_string("/proc/sys/vm/overcommit_memory").unwrap_or_default();
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let kib = |key: &str| -> u64 {
        meminfo
            .lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
            .unwrap_or(u64::MAX / 1024)
    };
    let host = (kib("MemTotal:") + kib("SwapTotal:")) * 1024;
    let sc = foliosim_scenario::parse_str(
        "big.toml",
        &[system_mem("15T", ""), anon_written("a", "14T")].concat(),
        &[],
    )
    .unwrap();
    let need = foliosim_sim::estimate_peak(&sc).total;
    if policy.trim() == "1" || need <= host {
        eprintln!(
            "SKIP: this host would grant {} MiB (overcommit_memory {}, {} MiB RAM + swap)",
            need >> 20,
            policy.trim(),
            host >> 20
        );
        return;
    }
    let opts = foliosim_sim::RunOptions {
        check: false,
        max_memory: Some(1 << 50),
        ..Default::default()
    };
    match foliosim_sim::run(&sc, opts) {
        Err(e @ SimError::HostRefused { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("simulated page frames"), "{msg}");
            assert!(msg.contains(&format!("{} MiB", need >> 20)), "{msg}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn swap_areas_files_and_raw_pagemaps_count_per_unit() {
    // A 16 TiB swap area: 8 bytes per slot (swap_map, swap cache,
    // zeromap, memcg) = 32 GiB; an 8 TiB file: a 4-byte page-cache slot
    // per page, held by the compiler's layout pass and by the simulated
    // kernel = 16 GiB; a raw pagemap of 1 TiB: 80 bytes per entry kept,
    // rendered and written out = 20 GiB.
    let text = [
        system_mem("1G", ""),
        swap("zram", "16T"),
        "[[file]]\nname = \"f\"\nsize = \"8T\"\nfill = \"cold\"\n".to_string(),
        mmap_anon("a", "1T"),
        "[[step]]\nop = \"pagemap\"\nregion = \"a\"\nraw = true\n".to_string(),
    ]
    .concat();
    let sc = foliosim_scenario::parse_str("big.toml", &text, &[]).unwrap();
    let est = foliosim_sim::estimate_peak(&sc);
    let part = |what: &str| estimate_part(&est, what);
    assert_eq!(part("system.swap[1]"), 32 << 30);
    assert_eq!(part("file \"f\""), 16 << 30);
    assert_eq!(part("raw pagemap"), 20 << 30);
}

#[test]
fn warm_files_larger_than_the_machine_are_refused() {
    // A 1 GiB file filled by writes on a 64 MiB machine cannot be warm:
    // its fill would only reclaim itself. Refused, pointing at the file.
    let text = [
        system_mem("64M", ""),
        "[[file]]\nname = \"data\"\nsize = \"1G\"\nfill = \"write\"\n".to_string(),
    ]
    .concat();
    match try_run_with(&text, &[]) {
        Err(SimError::Unsupported { at, what }) => {
            assert!(at.starts_with("test.toml:"), "{at}");
            assert!(what.contains("do not fit in memory"), "{what}");
        }
        other => panic!("{other:?}"),
    }
    // Cold, the same file is fine: nothing is cached before the steps.
    let cold = text.replace("fill = \"write\"", "fill = \"cold\"");
    assert!(try_run_with(&cold, &[]).is_ok());
}

#[test]
fn anon_vmas_of_exited_children_are_freed_and_reused() {
    // A folio's `mapping` names its anon_vma in 16 bits, so the model has
    // 65,535 anon_vma ids; the kernel allocates them from a slab and
    // `put_anon_vma()` frees one when its last VMA goes. 2,048 one-page
    // VMAs (every other page flagged MADV_RANDOM, so no two neighbours
    // merge) under one anon_vma; every fork gives each child VMA its own
    // (`anon_vma_fork()`), and the child exits before the next fork: 40
    // forks allocate 81,920 anon_vmas, at most 2,049 at once.
    let mut sc = [
        system(""),
        mmap_anon("a", "8M"),
        madvise("a", "nohugepage", ""),
        touch("a", "write", ""),
    ]
    .concat();
    for p in (0..2048).step_by(2) {
        sc += &madvise("a", "random", &format!("offset = {}\nlen = 4096", p * 4096));
    }
    for _ in 0..39 {
        sc += &(step("fork") + &step("wait"));
    }
    // The last child writes every page: each is still shared with the
    // parent, so each write is a COW fault (`do_wp_page()`), 2,048 in
    // all, and the run completes without running out of anon_vmas.
    sc += &[
        phase("child"),
        step("fork"),
        child(&touch("a", "write", "")),
        step("wait"),
    ]
    .concat();
    let r = run(&sc);
    assert_eq!(c(&r, "child", "minor-faults"), 2048);
}

/// Run `text` (the invariant checker after every step when `check`) and
/// return where and why it ended as unsupported by the model; a panic or
/// any other outcome fails the test.
fn refused(text: &str, check: bool) -> (String, String) {
    let sc = foliosim_scenario::parse_str("test.toml", text, &[]).expect("valid scenario");
    let opts = foliosim_sim::RunOptions {
        check,
        ..Default::default()
    };
    match foliosim_sim::run(&sc, opts) {
        Err(SimError::Unsupported { at, what }) => (at, what),
        Ok(_) => panic!("expected an unsupported step, the run completed"),
        Err(other) => panic!("expected an unsupported step, got {other}"),
    }
}

/// `test.toml:LINE:1`, the location of the `nth` (from 1) step whose
/// table starts with `first` (its `op = ...` line).
fn step_at(text: &str, first: &str, nth: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let line = (1..lines.len())
        .filter(|&i| lines[i - 1] == "[[step]]" && lines[i] == first)
        .nth(nth - 1)
        .expect("the step is in the scenario");
    format!("test.toml:{line}:1")
}

/// Run `text` and check that it stops as unsupported at the `nth` (from 1)
/// step `op`, with a message that contains `what`.
fn assert_refused_at(text: &str, check: bool, op: &str, nth: usize, what: &str) {
    let (at, msg) = refused(text, check);
    assert_eq!(at, step_at(text, &format!("op = \"{op}\""), nth));
    assert!(msg.contains(what), "{msg}");
}

/// `base` and then `n` fork steps (each child stays alive until the end).
fn with_forks(base: &str, n: usize) -> String {
    base.to_owned() + &step("fork").repeat(n)
}

#[test]
fn page_tables_filling_the_machine_are_unsupported() {
    // Read faults on anon memory map the shared zero page, so the only
    // memory they take is page tables: one PTE table per 2 MiB touched.
    // 64 GiB touched once per table needs 32,768 of them; a 64 MiB machine
    // has 16,384 frames and page tables cannot be reclaimed. The kernel
    // would invoke the OOM killer, which the model does not.
    let text = page_tables_beyond_memory();
    assert_refused_at(&text, true, "touch", 1, "out of memory for a page table");
}

#[test]
fn a_swap_count_needing_continuation_is_unsupported() {
    // __swap_duplicate(): a swap slot's count fits in swap_map up to
    // SWAP_MAP_MAX (0x3e = 62); the next reference needs a continuation
    // page, which the model does not keep. One page swapped out has one
    // reference; each fork whose child stays alive adds one, so fork 61
    // reaches 62 and fork 62 needs the continuation.
    let base = [
        system(""),
        swap("zram", "64M"),
        anon_written("a", "4K"),
        madvise("a", "pageout", ""),
    ]
    .concat();
    assert!(try_run_with(&with_forks(&base, 61), &[]).is_ok());
    let text = with_forks(&base, 62);
    assert_refused_at(&text, true, "fork", 62, "swap count continuation");
}

#[test]
fn mappings_beyond_the_mapcount_field_are_unsupported() {
    // The model packs a page's mapcount into 11 bits (at most 2,046
    // mappings); each fork whose child stays alive maps the written page
    // once more, so the 2,046th fork would make it 2,047.
    let text = with_forks(&(system("") + &anon_written("a", "4K")), 2046);
    assert_refused_at(
        &text,
        false,
        "fork",
        2046,
        "more than 2046 mappings of one page",
    );
}

#[test]
fn more_files_than_the_model_holds_are_unsupported() {
    // The model holds at most 32,767 files (a folio's `mapping` field,
    // which names its file, is 16 bits). The compiler's layout pass meets
    // the limit while creating the files, before any step: the error
    // names the scenario.
    let mut text = system("");
    for i in 0..32768 {
        text += &file(&format!("f{i}"), "4K", "");
    }
    let (at, what) = refused(&text, false);
    assert_eq!(at, "test");
    assert!(what.contains("more than 32767 files"), "{what}");
}

#[test]
fn more_memory_cgroups_than_the_model_holds_are_unsupported() {
    // A memory cgroup id is 16 bits, the root's included (the kernel's
    // MEM_CGROUP_ID_MAX is 65535 too): 65,534 `memcg` steps make cgroups,
    // the next one is refused at its step.
    let text = [system(""), step("memcg").repeat(65535)].concat();
    assert_refused_at(
        &text,
        false,
        "memcg",
        65535,
        "more than 65534 memory cgroups",
    );
}

/// A sparse mapping as large as the address space allows (96 TiB: all of
/// `[mmap_min_addr, mmap_base)`) on a 2 GiB machine, a page written at
/// each end, then everything that walks a VMA's page tables: the phases'
/// folio histograms, fork's copy, MADV_COLD / PAGEOUT / FREE /
/// DONTNEED, munmap and exit. The walks step over none PGD and PUD
/// entries as the kernel's do, so this takes milliseconds, not one step
/// per 2 MiB (2^26 of them per walk).
#[test]
fn walks_over_a_sparse_96_tib_mapping_skip_empty_tables() {
    let len = 0x6000_0000_0000u64 - 0x1_0000;
    let first = "offset = 0\nlen = 4096\n";
    let last = format!("offset = {}\nlen = 4096\n", len - 4096);
    let sc = [
        system_mem("2G", ""),
        mmap_anon("a", &len.to_string()),
        phase("walks"),
        touch("a", "write", first),
        touch("a", "write", &last),
        step("fork"),
        step("wait"),
        madvise("a", "cold", ""),
        madvise("a", "pageout", ""),
        madvise("a", "free", ""),
        madvise("a", "dontneed", ""),
        phase("unmapped"),
        munmap("a"),
    ]
    .concat();
    let t = std::time::Instant::now();
    let r = run(&sc);
    let took = t.elapsed();
    // Two write faults. MADV_DONTNEED frees the PTE tables whose 2 MiB it
    // covers whole (CONFIG_PT_RECLAIM): the last one (the mapping ends at
    // the 2 MiB-aligned mmap base), not the first (the mapping starts at
    // 64 KiB), which munmap frees.
    assert_eq!(c(&r, "walks", "minor-faults"), 2);
    assert_eq!(c(&r, "unmapped", "sim/pgtable_free"), 1);
    // 5 ms here with the walks' skips, 8.6 s without (optimised tests).
    assert!(took.as_millis() < 1000, "{took:?}");
}

/// A 1 EiB mapping (`"1T<<20"`, as large as the size grammar's units
/// reach) fails with ENOMEM; the compiler's layout pass goes on to its
/// munmap, which is EINVAL (past TASK_SIZE) before any walk, instead of
/// walking 2^39 blocks of 2 MiB.
#[test]
fn a_1_eib_mmap_and_munmap_end_at_once() {
    let sc = [system_mem("2G", ""), mmap_anon("a", "1T<<20"), munmap("a")].concat();
    let t = std::time::Instant::now();
    assert_fails_with(&sc, "ENOMEM");
    assert!(t.elapsed().as_secs() < 5, "{:?}", t.elapsed());
}

/// Phases and steps count: 30,000 phases refused under `--max-memory
/// 300M` (they took 569 MiB with the table, 2.8 GiB with `--format json`,
/// while the estimate saw only the 64 MiB machine). Each phase costs
/// 96 KiB plus 2 KiB per region (one here) and each step 512 bytes.
#[test]
fn phases_and_steps_count_in_the_estimate() {
    let sc = foliosim_scenario::parse_str("p.toml", &big::many_phases(30_000), &[]).unwrap();
    let est = foliosim_sim::estimate_peak(&sc);
    let part = |what: &str| estimate_part(&est, what);
    assert_eq!(part("30000 phases"), 30_000 * ((96 << 10) + (2 << 10)));
    assert_eq!(part("30001 steps"), 30_001 * 512);
    let msg = too_big(&sc, 300 << 20);
    assert!(msg.contains("30000 phases"), "{msg}");
}

/// A region with `map = true` adds its pages to every phase's cost: a
/// 1 GiB map (262,144 pages) in 4 phases at 512 bytes per page and
/// phase, besides the phases' own 96 KiB + 2 KiB.
#[test]
fn folio_maps_count_per_page_and_phase() {
    let text = [
        system_mem("2G", ""),
        mmap("m", "anon", "1G", "map = true"),
        phase("a"),
        phase("b"),
        phase("c"),
        phase("d"),
    ]
    .concat();
    let sc = foliosim_scenario::parse_str("m.toml", &text, &[]).unwrap();
    let est = foliosim_sim::estimate_peak(&sc);
    let phases = est.parts.iter().find(|(w, _)| w.starts_with("4 phases"));
    let per_phase = (96 << 10) + (2 << 10) + 262_144 * 512;
    assert_eq!(phases.map(|p| p.1), Some(4 * per_phase), "{:?}", est.parts);
}

#[test]
fn swap_areas_past_the_models_swap_entry_are_refused() {
    // The model packs a folio's swap entry (`folio->swap`) in 32 bits, the
    // area's MAX_SWAPFILES_SHIFT bits beside the offset: at most 32 areas
    // of 2^27 slots (512 GiB) each.
    let area = |size: &str| format!("[[system.swap]]\nkind = \"file\"\nsize = \"{size}\"\n");
    let text = [system_mem("64M", ""), area("1G"), area("513G")].concat();
    let (at, what) = refused(&text, false);
    assert_eq!(at, "[system]");
    assert_eq!(
        what,
        "system.swap[2]: a swap area of 550829555712 bytes (at most 512 GiB)"
    );
    let text = [system_mem("64M", ""), area("1M").repeat(33)].concat();
    assert_eq!(refused(&text, false).1, "33 swap areas (at most 32)");
    let text = [system_mem("64M", ""), area("512G"), mmap_anon("a", "1M")].concat();
    assert!(try_run_with(&text, &[]).is_ok(), "512 GiB is taken");
}
