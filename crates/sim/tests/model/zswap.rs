//! zswap (mm/zswap.c, mm/page_io.c and mm/zsmalloc.c of Linux 6.18): what
//! swap_writeout() sends to the zeromap, to zswap and to the device, what
//! swap-in loads back, and the pool limit's writeback. Each test derives
//! its expected values from those functions in its comments.

use crate::common::{assert_counters, c, run};

/// A 512 MiB machine with zswap in front of a 256 MiB swap `kind`, THP
/// off, plus `extra` lines of `[system]`.
fn machine(kind: &str, extra: &str) -> String {
    format!(
        "[system]\nmemory = \"512M\"\ntransparent_hugepage.enabled = \"never\"\n\
         zswap.enabled = 1\n{extra}\n[[system.swap]]\nkind = \"{kind}\"\nsize = \"256M\"\n"
    )
}

fn step(body: &str) -> String {
    format!("\n[[step]]\n{body}\n")
}

/// `size` of anonymous memory written with `data` (empty: one-byte
/// stores), paged out in phase "out", read back in phase "in".
fn pageout_and_back(sys: &str, size: &str, data: &str) -> String {
    [
        paged_out(sys, size, data),
        step("op = \"phase\"\nname = \"in\""),
        step("op = \"touch\"\nregion = \"a\"\naccess = \"read\""),
    ]
    .concat()
}

/// `sys`, then `size` of anonymous memory written with `data` (empty:
/// one-byte stores) and paged out in phase "out".
fn paged_out(sys: &str, size: &str, data: &str) -> String {
    [
        sys.to_string(),
        step(&format!(
            "op = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"{size}\""
        )),
        step(&format!(
            "op = \"touch\"\nregion = \"a\"\naccess = \"write\"\n{data}"
        )),
        step("op = \"phase\"\nname = \"out\""),
        step("op = \"madvise\"\nregion = \"a\"\nadvice = \"pageout\""),
    ]
    .concat()
}

#[test]
fn compressible_pages_stay_in_the_pool_and_come_back_from_it() {
    // 8 MiB of pages holding one repeated byte: 2,048 pages, none zero, so
    // swap_writeout() passes each folio to zswap_store(), which stores it
    // (the pool is far below 20% of 512 MiB): zswpout 2,048, nothing
    // written to the swap file. lzo1x-1 makes such a page 44 bytes; with
    // zsmalloc's 8-byte handle 52 bytes, the 64-byte class, 64 objects in
    // a one-page zspage: 2,048 / 64 = 32 pages, 128 KiB.
    let r = run(&pageout_and_back(
        &machine("file", ""),
        "8M",
        "data = \"repeated\"",
    ));
    assert_eq!(c(&r, "out", "zswpout"), 2048);
    assert_eq!(c(&r, "out", "pswpout"), 0);
    assert_eq!(c(&r, "out", "zswap/stored_pages"), 2048);
    assert_eq!(c(&r, "out", "zswap/pool_total_size"), 32 * 4096);
    // Swap-in: every read misses the swap cache and reads the slot through
    // zswap_load() (zswpin; a swap-cache folio takes over and the entry is
    // freed, emptying the pool); nothing comes from the device.
    assert_eq!(c(&r, "in", "zswpin"), 2048);
    assert_eq!(c(&r, "in", "pswpin"), 0);
    assert_eq!(c(&r, "in", "zswap/stored_pages"), -2048);
    assert_eq!(c(&r, "in", "zswap/pool_total_size"), -32 * 4096);
}

#[test]
fn zero_pages_go_to_the_zeromap_and_random_ones_are_stored_whole() {
    // Zero-filled folios: is_folio_zero_filled() → zeromap, before zswap.
    let r = run(&pageout_and_back(
        &machine("file", ""),
        "4M",
        "data = \"zero\"",
    ));
    assert_eq!(c(&r, "out", "swpout_zero"), 1024);
    assert_eq!(c(&r, "out", "zswpout"), 0);
    // Random pages do not compress below a page: zswap_compress() stores
    // them as they are (4,096 bytes, the last class, one per zspage page).
    let r = run(&pageout_and_back(
        &machine("file", ""),
        "4M",
        "data = \"random\"",
    ));
    assert_eq!(c(&r, "out", "zswpout"), 1024);
    assert_eq!(c(&r, "out", "zswap/stored_incompressible_pages"), 1024);
    assert_eq!(c(&r, "out", "zswap/pool_total_size"), 1024 * 4096);
}

#[test]
fn large_folios_are_stored_page_by_page_and_swapped_in_as_order_0() {
    // 64 KiB mTHP folios on zram: zswap_store() stores each folio's 16
    // pages; swap_writeout() counts the per-size zswpout once per folio,
    // and no swpout (nothing reaches zram). 4 MiB = 64 folios.
    let sys = machine(
        "zram",
        "transparent_hugepage.hugepages-64kB.enabled = \"always\"",
    );
    let r = run(&pageout_and_back(&sys, "4M", ""));
    assert_eq!(c(&r, "out", "zswpout"), 1024);
    assert_eq!(c(&r, "out", "hugepages-64kB/zswpout"), 64);
    assert_eq!(c(&r, "out", "hugepages-64kB/swpout"), 0);
    // Once zswap was enabled, alloc_swap_folio() falls back to order 0
    // (zswap_never_enabled() is false): 1,024 faults, each a major one
    // reading one page from zswap, no 64 KiB swap-in.
    assert_eq!(c(&r, "in", "hugepages-64kB/swpin"), 0);
    assert_eq!(c(&r, "in", "major-faults"), 1024);
    assert_eq!(c(&r, "in", "zswpin"), 1024);
}

#[test]
fn a_full_pool_rejects_stores_and_the_worker_writes_back() {
    // max_pool_percent = 1 of 512 MiB (no kernel memory reserved):
    // zswap_max_pages() = 131,072 / 100 = 1,310 pages; the accept
    // threshold 90% of that, 1,179. Random pages take a pool page each, so
    // the 1,311th store finds the pool full (zswap_check_limits(): cur >=
    // max), is rejected and goes to the swap file, and queues the shrink
    // worker. Its first runs only take the referenced bits of fresh
    // entries (16 failures a run); later ones write entries back. Every page is either stored or written: zswpout + the
    // rejected pages = 4,096, and the pages written to the device are the
    // rejected ones plus those the worker wrote back.
    let sys = machine("file", "zswap.max_pool_percent = 1");
    let r = run(&pageout_and_back(&sys, "16M", "data = \"random\""));
    let stored = c(&r, "out", "zswpout");
    let written_back = c(&r, "out", "zswpwb");
    let pswpout = c(&r, "out", "pswpout");
    assert!(c(&r, "out", "zswap/pool_limit_hit") >= 1);
    assert_eq!(stored + (pswpout - written_back), 4096);
    assert_eq!(written_back, c(&r, "out", "zswap/written_back_pages"));
    assert!(written_back > 0, "the worker wrote entries back");
    // The pool never holds more than one page past the limit.
    assert!(c(&r, "out", "zswap/pool_total_size") <= 1311 * 4096);
    // The pool filled to its limit before the first rejection: 1,310
    // stores of a page each.
    assert!(stored >= 1310, "stored {stored}");
    // The worker stops at the accept threshold: what it wrote back left
    // the pool at or below 1,179 pages when it stopped.
    assert!(c(&r, "out", "zswap/stored_pages") <= 1310);
}

/// A cgroup's 2,048 random pages paged out to zswap (zram behind it,
/// `shrinker` on or off), then `memory.reclaim` of `amount`.
fn shrinker_reclaim(shrinker: u8, amount: &str) -> String {
    [
        machine("zram", &format!("zswap.shrinker_enabled = {shrinker}")),
        step("op = \"memcg\""),
        step("op = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = \"8M\""),
        step("op = \"touch\"\nregion = \"a\"\naccess = \"write\"\ndata = \"random\""),
        step("op = \"madvise\"\nregion = \"a\"\nadvice = \"pageout\""),
        step("op = \"phase\"\nname = \"reclaim\""),
        step(&format!("op = \"memcg_reclaim\"\namount = \"{amount}\"")),
    ]
    .concat()
}

#[test]
fn the_pressure_shrinker_gives_second_chances_before_writing_back() {
    // The cgroup's LRU is empty after the pageout, so memory.reclaim's
    // try_to_free_mem_cgroup_pages() goes from priority 12 to 0
    // reclaiming nothing, and shrink_slab() calls the zswap shrinker at
    // each priority. zswap_shrinker_count(): 2,048 entries, backing 2,048
    // pages / 2,048 stored = 2,048 freeable. do_shrink_slab(): delta =
    // (2,048 >> p) * 4 / 2, target (nr_deferred >> p) + delta, at most
    // 4,096. Pass 1: the carried work after priorities 12..6 is 0, 2, 6,
    // 14, 30, 62, 126, so priority 5 first scans: (126 >> 5) + 128 = 131,
    // one batch of 128 entries, all referenced since their store: each
    // loses the bit and rotates, nothing is written back, SHRINK_STOP.
    // Priorities 4..0 do the same to the next 128 each (768 in all) and
    // leave 4,096 deferred. Pass 2: targets 1, 4, 8, 16, 32, 64 at
    // priorities 12..7, then a batch at each of 6..0 (896 more). Pass 3:
    // priorities 6..4 rotate the last 384, and priority 3's target
    // (4,096 >> 3) + 512 = 1,024 writes back 1,024 entries in 8 batches.
    // They sit on the LRU, clean in zram's swap cache, so priority 2's
    // LRU scan reclaims the 32 pages asked for (SWAP_CLUSTER_MAX), and
    // its shrinker call, (3,584 >> 2) + (1,024 >> 2) * 2 = 1,408, writes
    // back the other 1,024 and stops on the empty LRU.
    let on = run(&shrinker_reclaim(1, "4K"));
    assert_eq!(c(&on, "reclaim", "zswpwb"), 2048);
    assert_eq!(c(&on, "reclaim", "memcg/0/pgsteal"), 32);
    // Without the shrinker nothing at all happens to the entries.
    let off = run(&shrinker_reclaim(0, "4K"));
    assert_eq!(c(&off, "reclaim", "zswpwb"), 0);
    // Asking for the whole 8 MiB: every written-back folio is reclaimed
    // too; a 6.18.35 guest does the same, call for call
    // (scenarios/guest/zswap-shrinker-memcg-reclaim).
    let all = run(&shrinker_reclaim(1, "8M"));
    assert_eq!(c(&all, "reclaim", "zswpwb"), 2048);
    assert_eq!(c(&all, "reclaim", "pswpout"), 2048);
    assert_eq!(c(&all, "reclaim", "memcg/0/pgsteal"), 2048);
}

/// [`pageout_and_back`] run by a task in a memory cgroup (no limit) with
/// `memcg_extra` keys (`zswap_max`), phases "write", "out" and "in".
fn in_memcg(size: &str, data: &str, memcg_extra: &str) -> String {
    let body = pageout_and_back(&machine("file", ""), size, data);
    let (sys, steps) = body.split_at(body.find("\n[[step]]").expect("steps"));
    let (first, rest) = steps.split_at(steps.find("op = \"phase\"").expect("phase"));
    [
        sys.to_string(),
        step(&format!("op = \"memcg\"\n{memcg_extra}")),
        step("op = \"phase\"\nname = \"write\""),
        first.to_string(),
        rest.to_string(),
    ]
    .concat()
}

#[test]
fn a_cgroups_entries_charge_their_compressed_bytes() {
    // cgroup v2: zswap_store_page() charges each entry's length to the
    // folio's cgroup (obj_cgroup_charge_zswap(): MEMCG_ZSWAP_B += 44,
    // MEMCG_ZSWAPPED += 1) and zswap_store() counts the cgroup's ZSWPOUT.
    // 2,048 pages of a repeated byte, 44 bytes each = 90,112 bytes, which
    // obj_cgroup_charge() takes as 90,112 / 4,096 = 22 pages from the
    // per-CPU page stock (consume_stock()): the write charged its 2,048
    // folios and a few page tables in batches of 64 (MEMCG_CHARGE_BATCH),
    // leaving more than 22 pages there, already in the usage. The
    // 2,048 folios are uncharged as they are freed, so the usage falls by
    // exactly 2,048 pages. Reading back loads each entry (the cgroup's
    // ZSWPIN) and frees it, uncharging its bytes.
    let r = run(&in_memcg("8M", "data = \"repeated\"", ""));
    assert_eq!(c(&r, "out", "memcg/0/zswpout"), 2048);
    // memory.stat's `zswapped` is in bytes (memcg_page_state_output_unit()).
    assert_eq!(c(&r, "out", "memcg/0/zswapped"), 2048 * 4096);
    assert_eq!(c(&r, "out", "memcg/0/zswap"), 2048 * 44);
    let usage = |phase| c(&r, phase, "memcg/0/usage_bytes");
    assert_eq!(usage("write") - usage("out"), 2048 * 4096);
    assert_eq!(c(&r, "in", "memcg/0/zswpin"), 2048);
    assert_eq!(c(&r, "in", "memcg/0/zswapped"), -2048 * 4096);
    assert_eq!(c(&r, "in", "memcg/0/zswap"), -2048 * 44);
}

#[test]
fn a_zswap_max_of_zero_sends_every_page_to_the_device() {
    // memory.zswap.max = 0: obj_cgroup_may_zswap() is false at once, and
    // shrink_memcg() of a cgroup with no entry returns -ENOENT, so every
    // store is rejected and the 2,048 pages go to the swap file.
    let r = run(&in_memcg("8M", "data = \"repeated\"", "zswap_max = 0"));
    assert_eq!(c(&r, "out", "zswpout"), 0);
    assert_eq!(c(&r, "out", "pswpout"), 2048);
    assert_eq!(c(&r, "out", "memcg/0/zswap"), 0);
}

#[test]
fn at_zswap_max_a_store_writes_back_an_entry_that_had_its_second_chance() {
    // zswap_max = 16 KiB: four random pages (4,096 bytes each, stored as
    // they are) fill it. Each later store finds the cgroup at its maximum
    // (4 pages >= 4) and calls shrink_memcg(), which takes the head of the
    // cgroup's LRU: pages 5-8 find entries 1-4 still referenced (set at
    // store), clear the bit and rotate them, so shrink_memcg() fails and
    // the store is rejected (the folio goes to the device). Pages 9-12
    // find entries 1-4 again, now unreferenced: each is written back
    // (zswpwb, pswpout) and the store goes on. zswpout 4 + 4, zswpwb 4,
    // pswpout 4 rejected + 4 written back.
    let r = run(&in_memcg("48K", "data = \"random\"", "zswap_max = \"16K\""));
    assert_eq!(c(&r, "out", "zswpout"), 8);
    assert_eq!(c(&r, "out", "memcg/0/zswpout"), 8);
    assert_eq!(c(&r, "out", "zswpwb"), 4);
    assert_eq!(c(&r, "out", "memcg/0/zswpwb"), 4);
    assert_eq!(c(&r, "out", "pswpout"), 8);
    assert_eq!(c(&r, "out", "memcg/0/zswapped"), 4 * 4096);
}

/// 1 GiB machine, THP off, a 512 MiB zram device and no zswap: `size` of
/// anonymous memory written with `data`, paged out in phase "out",
/// unmapped in phase "free".
fn zram_pageout_and_free(size: &str, data: &str) -> String {
    let sys = "[system]\nmemory = \"1G\"\ntransparent_hugepage.enabled = \"never\"\n\
               [[system.swap]]\nkind = \"zram\"\nsize = \"512M\"\n";
    [
        paged_out(sys, size, data),
        step("op = \"phase\"\nname = \"free\""),
        step("op = \"munmap\"\nregion = \"a\""),
    ]
    .concat()
}

#[test]
fn zram_compresses_into_its_own_pool() {
    // zram_write_page() of 18,432 pages each holding one stored byte: not
    // same-filled (page_same_filled(): the first word differs from the
    // last), compressed to 44 bytes (lzo1x-1), zs_malloc()ed as 52 with
    // the handle: the 64-byte class, 64 objects per one-page zspage, so
    // 18,432 / 64 = 288 pages, the nr_zspages the host kernel (6.18.44,
    // lzo-rle) showed for the same pageout. zswap is off: no pool of its.
    let r = run(&zram_pageout_and_free("72M", ""));
    assert_eq!(c(&r, "out", "pswpout"), 18432);
    assert_eq!(c(&r, "out", "nr_zspages"), 288);
    assert_eq!(c(&r, "out", "zswap/pool_total_size"), 0);
    // mm_stat: every page stored, each counting its compressed 44 bytes
    // in compr_data_size (zram_write_page()).
    assert_counters(
        &r,
        "out",
        "zram/pages_stored=18432 zram/compr_data_size=811008 zram/same_pages=0 \
         zram/huge_pages=0",
    );
    // munmap frees every slot (zram_slot_free_notify()), emptying every
    // zspage, whose pages go back; zram_free_page() takes each object's
    // length off again.
    assert_eq!(c(&r, "free", "nr_zspages"), -288);
    assert_counters(
        &r,
        "free",
        "zram/pages_stored=-18432 zram/compr_data_size=-811008",
    );
    // mm_stat's mem_used_total is the pool's 288 pages in bytes, and
    // mem_used_max, raised after each zs_malloc() (zram_can_store_page()),
    // rises with it: 288 * 4096 = 1,179,648. The pool empties at munmap;
    // the peak stays where it was.
    assert_counters(
        &r,
        "out",
        "zram/mem_used_total=1179648 zram/mem_used_max=1179648",
    );
    assert_counters(
        &r,
        "free",
        "zram/mem_used_total=-1179648 zram/mem_used_max=0",
    );
}

#[test]
fn zram_keeps_only_the_value_of_same_filled_pages() {
    // A page of one repeated byte is same-filled: ZRAM_SAME keeps the
    // value in the slot and allocates nothing. (Zero pages never reach
    // zram: swap_writeout() sends them to the zeromap.)
    let r = run(&zram_pageout_and_free("8M", "data = \"repeated\""));
    assert_eq!(c(&r, "out", "pswpout"), 2048);
    assert_eq!(c(&r, "out", "nr_zspages"), 0);
    // mm_stat: stored, as same pages, with no compressed data and no
    // pool page (write_same_filled_page() allocates nothing).
    assert_counters(
        &r,
        "out",
        "zram/pages_stored=2048 zram/same_pages=2048 zram/compr_data_size=0 \
         zram/mem_used_total=0 zram/mem_used_max=0",
    );
    // Random pages do not compress below huge_class_size: each is stored
    // as it is (write_incompressible_page()), one one-page zspage each,
    // counted as huge and as a whole page of compressed data.
    let r = run(&zram_pageout_and_free("8M", "data = \"random\""));
    assert_eq!(c(&r, "out", "pswpout"), 2048);
    assert_eq!(c(&r, "out", "nr_zspages"), 2048);
    assert_counters(
        &r,
        "out",
        "zram/huge_pages=2048 zram/compr_data_size=8388608 zram/same_pages=0",
    );
    assert_eq!(c(&r, "free", "nr_zspages"), -2048);
}

/// The counters of the first phase of guest/global-reclaim-anon-zram on a
/// 6.18.35 x86_64 guest run's machine, with `extra` settings.
fn global_zram(extra: &[(&str, &str)]) -> std::collections::BTreeMap<String, i64> {
    let mut sets = vec![
        ("machine.boot_used", "26673152"),
        ("machine.unmanaged", "32481280"),
        ("machine.min_free_kbytes", "3965"),
    ];
    sets.extend_from_slice(extra);
    let sc = crate::common::load_scenario("guest/global-reclaim-anon-zram.toml", &sets);
    let r = foliosim_sim::run(&sc, foliosim_sim::RunOptions::default()).expect("scenario runs");
    r.phases[0].counters.clone()
}

#[test]
fn a_zram_write_without_a_free_page_fails_and_keeps_the_folio() {
    // On this machine the workload's last per-CPU list refill before
    // pressure takes the free lists to zero, and kswapd's CPU's list is
    // empty: kswapd's first zram write finds no page for its object
    // (zram_write_page() → -ENOMEM), and the folio stays dirty in the
    // swap cache. zram writes end at once, so every write either succeeds
    // and its folio is stolen or fails and its folio is kept: pswpout =
    // steals + failures.
    let p = global_zram(&[]);
    let steals = p["pgsteal_kswapd"] + p["pgsteal_direct"];
    let failed = p["zram/failed_writes"];
    assert!(failed > 0, "{p:?}");
    assert_eq!(p["pswpout"], steals + failed);
    // 16 pages on kswapd's CPU's list at boot: its first write takes one,
    // and each batch it frees puts 32 pages back on that list before the
    // pool needs another (one page per 64 one-byte pages): no failure.
    let p = global_zram(&[("machine.kswapd_pcp_list", "64K")]);
    assert_eq!(p["zram/failed_writes"], 0);
    assert_eq!(p["pswpout"], p["pgsteal_kswapd"] + p["pgsteal_direct"]);
}
