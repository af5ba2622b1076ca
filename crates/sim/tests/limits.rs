//! Sizes and strides at the edge of the 64-bit address space: modelled
//! outcomes, never a wrap-around or an internal error.

mod common;

use common::*;
use foliosim_sim::SimError;

#[test]
fn a_mapping_larger_than_the_address_space_fails_with_enomem() {
    // __get_unmapped_area(): `len > TASK_SIZE` fails with ENOMEM before any
    // search, as mmap(2) of 2^64 - 4096 bytes does on the host.
    let sc = [system(""), mmap_anon("a", "18446744073709547520")].concat();
    match try_run_with(&sc, &[]) {
        Err(SimError::Syscall { what, .. }) => assert!(what.starts_with("ENOMEM"), "{what}"),
        other => panic!("{other:?}"),
    }
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
    let opts = foliosim_sim::RunOptions {
        check: true,
        max_memory: Some(64 << 30),
    };
    match foliosim_sim::run(&sc, opts) {
        Err(e @ SimError::TooBig { .. }) => {
            let msg = e.to_string();
            assert!(msg.contains("simulated page frames"), "{msg}");
        }
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
    let part = |what: &str| {
        est.parts
            .iter()
            .find(|(w, _)| w.contains(what))
            .map(|(_, b)| *b)
            .unwrap_or_else(|| panic!("no part {what}: {:?}", est.parts))
    };
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
