//! Threads on simulated CPUs and multi-CPU TLB flushing. Expected counts
//! follow arch/x86/mm/tlb.c of Linux 6.18 (flush_tlb_mm_range(),
//! native_flush_tlb_multi(), should_flush_tlb(), flush_tlb_func(),
//! arch_tlbbatch_flush()) and arm64's broadcast TLBIs; each test derives
//! them in its comments.

use crate::common;
use common::{
    anon_written, assert_counters, madvise, mmap_anon, munmap, phase, run, run_arch, step, swap,
    thread, threads, touch, try_run_with,
};
use foliosim_report::Report;

/// A counter's delta over `phase`, 0 if the report omits it.
fn c(r: &Report, phase: &str, counter: &str) -> i64 {
    let p = r.phases.iter().find(|p| p.name == phase).expect("phase");
    p.counters.get(counter).copied().unwrap_or(0)
}

/// 2 MiB of 4 KiB anon pages, touched by one thread on CPU 1 which then
/// `after`s; the main thread (CPU 0) runs `op` in phase "op", then the
/// threads are joined in phase "join".
fn scenario(after: &str, op: &str) -> String {
    [
        two_cpus(),
        mmap_anon("heap", "2M"),
        threads(1, after),
        thread(&touch("heap", "write", "")),
        phase("op"),
        format!("{op}\n"),
        phase("join"),
        step("join"),
    ]
    .concat()
}

/// Run `scenario(after, op)` and check the counters `want` of phase "op"
/// (as [`assert_counters`] reads them); the report, for more checks.
#[track_caller]
fn run_op(after: &str, op: &str, want: &str) -> Report {
    let r = run(&scenario(after, op));
    assert_counters(&r, "op", want);
    r
}

/// Two CPUs, THP off.
fn two_cpus() -> String {
    "[system]\ncpus = 2\ntransparent_hugepage.enabled = \"never\"\n".into()
}

fn dontneed(len: &str) -> String {
    madvise("heap", "dontneed", &format!("len = \"{len}\""))
}

#[test]
fn dontneed_64k_with_a_spinning_thread_shoots_down_by_page() {
    // 16 pages <= the 33-page ceiling: a partial flush. CPU 1 is in
    // mm_cpumask, so flush_tlb_multi(): one TLB_REMOTE_SEND_IPI event; the
    // local CPU flushes its 16 pages (TLB_LOCAL_MM_SHOOTDOWN); CPU 1 runs
    // the mm and is not lazy (should_flush_tlb), so it gets one IPI and
    // flushes 16 pages (TLB_REMOTE_SHOOTDOWN, seen by the spinning thread's
    // counters). Both CPUs were at generation 0 and the flush is
    // generation 1, so both do the partial flush.
    let r = run_op(
        "spin",
        &dontneed("64K"),
        "sim/flush_tlb_range=1 sim/tlb_remote_flush=1 sim/ipi=1 sim/tlb_remote_flush_received=1 \
         sim/invlpg=32 sim/tlb_flush_all=0 tlb:tlb_flush=3 tlb:tlb_flush/remote_ipi_send=1 \
         tlb:tlb_flush/local_mm_shootdown=1 tlb:tlb_flush/remote_shootdown=1",
    );
    // join: the spinning thread exits; nothing to flush.
    assert_eq!(c(&r, "join", "sim/tlb_switch_flush"), 0);
}

#[test]
fn dontneed_1m_with_a_spinning_thread_flushes_everything_on_both_cpus() {
    // 256 pages > 33: get_flush_tlb_info() turns it into TLB_FLUSH_ALL, so
    // each of the two CPUs does one full flush; the same three events.
    run_op(
        "spin",
        &dontneed("1M"),
        "sim/ipi=1 sim/invlpg=0 sim/tlb_flush_all=2 tlb:tlb_flush=3 \
         tlb:tlb_flush/remote_shootdown=1",
    );
}

#[test]
fn dontneed_with_a_sleeping_thread_sends_no_ipi_and_flushes_at_the_wakeup() {
    // CPU 1 idles lazily on the mm: still in mm_cpumask, so
    // flush_tlb_multi() runs (TLB_REMOTE_SEND_IPI), but should_flush_tlb()
    // skips a lazy CPU and no page table was freed: no IPI; only the local
    // 16-page flush. At the join the thread wakes on CPU 1:
    // switch_mm_irqs_off() from lazy with a stale generation (0 < 1)
    // flushes (TLB_FLUSH_ON_TASK_SWITCH, between two tasks' perf contexts,
    // so not a workload event).
    let r = run_op(
        "sleep",
        &dontneed("64K"),
        "sim/ipi=0 sim/invlpg=16 tlb:tlb_flush=2 tlb:tlb_flush/remote_ipi_send=1 \
         tlb:tlb_flush/local_mm_shootdown=1",
    );
    assert_counters(&r, "join", "sim/tlb_switch_flush=1 tlb:tlb_flush=0");
}

#[test]
fn without_threads_the_flush_stays_local() {
    // One CPU in mm_cpumask: the local fast path, one event, no IPI
    // (the single-CPU behaviour the other tests rely on).
    let text = scenario("spin", &dontneed("64K")).replace("cpus = 2", "cpus = 1");
    // count = 1 needs two CPUs: the scenario is refused.
    assert!(try_run_with_parse_error(&text).contains("count"));
    let single = [
        "[system]\ntransparent_hugepage.enabled = \"never\"\n".to_string(),
        anon_written("heap", "2M"),
        phase("op"),
        dontneed("64K"),
    ]
    .concat();
    let r = run(&single);
    assert_counters(
        &r,
        "op",
        "sim/ipi=0 sim/invlpg=16 tlb:tlb_flush=1 tlb:tlb_flush/local_mm_shootdown=1",
    );
}

fn try_run_with_parse_error(text: &str) -> String {
    match foliosim_scenario::parse_str("test.toml", text, &[]) {
        Ok(_) => String::new(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn munmap_frees_page_tables_so_even_the_lazy_cpu_gets_the_ipi() {
    // munmap of the whole region frees its PTE table (free_pgtables):
    // tlb->freed_tables, so native_flush_tlb_multi() calls every CPU in
    // the mask. The lazy CPU 1 takes the IPI and switches to init_mm
    // instead of flushing (flush_tlb_func(): is_lazy); its events fire
    // under the idle task. 512 pages: a full flush on CPU 0.
    for (after, want) in [
        (
            "sleep",
            "sim/ipi=1 sim/tlb_flush_all=1 sim/tlb_switch_flush=1 tlb:tlb_flush=2 \
             tlb:tlb_flush/remote_shootdown=0",
        ),
        // With the thread spinning, CPU 1 flushes like CPU 0.
        ("spin", "sim/ipi=1 sim/tlb_flush_all=2 tlb:tlb_flush=3"),
    ] {
        run_op(after, &munmap("heap"), want);
    }
}

/// 256 KiB of anon memory written by the thread, then paged out to zram
/// by the main thread, then unmapped.
fn pageout(after: &str) -> String {
    [
        two_cpus(),
        swap("zram", "16M"),
        mmap_anon("map", "256K"),
        threads(1, after),
        thread(&touch("map", "write", "")),
        phase("pageout"),
        madvise("map", "pageout", ""),
        phase("munmap"),
        munmap("map"),
        step("join"),
    ]
    .concat()
}

#[test]
fn pageout_with_a_thread_defers_each_flush_to_the_batch() {
    // arch_tlbbatch_should_defer(): CPU 1 is in mm_cpumask, so each unmap of
    // try_to_unmap_one() goes to the batch (set_tlb_ubc_flush_pending(): no
    // immediate flush). The 64 folios are dirty anon pages, so the batch is
    // "writable" and shrink_folio_list() calls try_to_unmap_flush_dirty()
    // before each folio's pageout: 64 arch_tlbbatch_flush() calls, each
    // with no mm: TLB_REMOTE_SEND_IPI, a full local flush
    // (TLB_LOCAL_SHOOTDOWN), an IPI and a full flush on CPU 1
    // (TLB_REMOTE_SHOOTDOWN).
    let r = run(&pageout("spin"));
    assert_counters(
        &r,
        "pageout",
        "sim/tlbbatch_add_pending=64 sim/flush_tlb_range=0 sim/tlbbatch_flush=64 sim/ipi=64 \
         sim/tlb_flush_all=128",
    );
    assert_eq!(c(&r, "pageout", "tlb:tlb_flush"), 3 * 64);
    assert_counters(
        &r,
        "pageout",
        "tlb:tlb_flush/local_shootdown=64 tlb:tlb_flush/remote_shootdown=64",
    );
    // The munmap's zap_pte_range() meets the mm's batched generations
    // (flush_tlb_batched_pending()): flush_tlb_mm() first, then the
    // munmap's own flush; both reach CPU 1.
    assert_counters(
        &r,
        "munmap",
        "sim/tlb_batched_pending=1 sim/flush_tlb_range=2 sim/ipi=2",
    );
    // A sleeping thread's CPU is still in the mask: the flushes are
    // deferred all the same, but the lazy CPU gets no IPI.
    let r = run(&pageout("sleep"));
    assert_counters(
        &r,
        "pageout",
        "sim/tlbbatch_flush=64 sim/ipi=0 sim/tlb_flush_all=64",
    );
}

#[test]
fn arm64_broadcasts_the_same_tlbis_whatever_the_threads_do() {
    // TLBI ...IS is broadcast in hardware: the instruction counts do not
    // depend on which CPUs ran the mm, and there are no IPIs.
    let spin = run_arch(&scenario("spin", &dontneed("64K")), "arm64");
    let sleep = run_arch(&scenario("sleep", &dontneed("64K")), "arm64");
    for r in [&spin, &sleep] {
        assert_eq!(c(r, "op", "sim/ipi"), 0);
        assert_eq!(c(r, "op", "sim/tlbi_range"), 1);
        assert_eq!(c(r, "op", "sim/dsb_ish"), 1);
        assert_eq!(c(r, "op", "tlb:tlb_flush"), 0);
    }
    let r = run_arch(&pageout("spin"), "arm64");
    assert_counters(
        &r,
        "pageout",
        "sim/ipi=0 sim/tlbbatch_flush=64 sim/tlbi_page=64",
    );
}

#[test]
fn split_touches_give_each_thread_its_slice() {
    // Three CPUs, two threads: each writes 256 of the 512 pages, one fault
    // per page (no THP, anon fault-around does not exist).
    let text = scenario("spin", "")
        .replace("cpus = 2", "cpus = 3")
        .replace("count = 1", "count = 2");
    let sc = foliosim_scenario::parse_str("t.toml", &text, &[]).expect("parses");
    let threads = sc
        .steps
        .iter()
        .find_map(|s| match &s.kind {
            foliosim_scenario::StepKind::Threads { threads, .. } => Some(threads.clone()),
            _ => None,
        })
        .expect("threads step");
    let ranges: Vec<_> = threads
        .iter()
        .map(|t| match &t[0].kind {
            foliosim_scenario::StepKind::Touch { range, .. } => (range.offset, range.len),
            _ => panic!("touch"),
        })
        .collect();
    assert_eq!(ranges, vec![(0, Some(1 << 20)), (1 << 20, Some(1 << 20))]);
}

#[test]
fn thread_steps_that_make_no_sense_are_errors() {
    let base = scenario("spin", "");
    let bad_op = base.replace(
        "[[step.thread]]\nop = \"touch\"",
        "[[step.thread]]\nop = \"fork\"\n[[step.thread]]\nop = \"touch\"",
    );
    let e = try_run_with_parse_error(&bad_op);
    assert!(e.contains("not allowed inside a threads block"), "{e}");
    assert!(e.contains("test.toml:"), "{e}");
    let unjoined = base.replace("op = \"join\"", "op = \"phase_end\"");
    let e = try_run_with_parse_error(&unjoined);
    assert!(e.contains("never joined"), "{e}");
    let split_top = base.replace("[[step]]\nop = \"phase\"\nname = \"op\"", "[[step]]\nop = \"touch\"\nregion = \"heap\"\naccess = \"read\"\nsplit = false\n[[step]]\nop = \"phase\"\nname = \"op\"");
    let e = try_run_with_parse_error(&split_top);
    assert!(e.contains("split"), "{e}");
    let too_many = base.replace("count = 1", "count = 2");
    let e = try_run_with_parse_error(&too_many);
    assert!(e.contains("count"), "{e}");
    let threads_block = threads(1, "spin") + &thread(&touch("heap", "write", ""));
    assert!(base.contains(&threads_block));
    let join_alone = base.replace(&threads_block, "[[step]]\nop = \"phase_end\"\n");
    let e = try_run_with_parse_error(&join_alone);
    assert!(e.contains("join without"), "{e}");
    let _ = try_run_with;
}

#[test]
fn madv_free_completes_a_pending_reclaim_batch_first() {
    // madvise_free_pte_range() calls flush_tlb_batched_pending() right after
    // mapping the PTE table, as zap_pte_range() does: the pageout above left
    // the mm's batched generation behind, so flush_tlb_mm() runs once (and
    // reaches the spinning CPU 1 by IPI). The range holds swap entries
    // only, which MADV_FREE drops without gathering a TLB entry: no flush
    // of its own.
    let text = pageout("spin").replace(
        "op = \"munmap\"\nregion = \"map\"",
        "op = \"madvise\"\nregion = \"map\"\nadvice = \"free\"",
    );
    assert!(text.contains("advice = \"free\""));
    let r = run(&text);
    assert_counters(
        &r,
        "munmap",
        "sim/tlb_batched_pending=1 sim/flush_tlb_range=1 sim/ipi=1",
    );
}
