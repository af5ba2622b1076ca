//! The buffered I/O steps and run-time limit writes in a memory cgroup,
//! with counts derived from mm/filemap.c (filemap_read(),
//! generic_perform_write()), mm/swap.c (folio_mark_accessed()),
//! mm/vmscan.c (shrink_folio_list()) and mm/memcontrol-v1.c
//! (mem_cgroup_resize_max()), each cited next to its number. Every
//! scenario runs with the invariant checker after every step (cgroup
//! usage = charged folios + page tables + slab pages + stock).

use crate::common;

use common::*;

/// A cold `[[file]]` named `data` of `size`.
fn file(size: &str) -> String {
    format!("[[file]]\nname = \"data\"\nsize = \"{size}\"\nfill = \"cold\"\n")
}

fn memcg(limit: Option<&str>) -> String {
    match limit {
        Some(l) => format!("[[step]]\nop = \"memcg\"\nlimit = \"{l}\"\n"),
        None => "[[step]]\nop = \"memcg\"\n".into(),
    }
}

fn io(op: &str, extra: &str) -> String {
    format!("[[step]]\nop = \"{op}\"\nfile = \"data\"\n{extra}\n")
}

fn limit(l: &str) -> String {
    format!("[[step]]\nop = \"memcg_limit\"\nlimit = \"{l}\"\n")
}

/// folio_mark_accessed(): the first pass sets PG_referenced on every folio
/// it copies from, the second activates each one (all 2048 pages move to
/// the active list, pgactivate counts pages).
#[test]
fn a_second_pass_activates_what_the_first_referenced() {
    let text = [
        system("read_ahead_kb = 8192"),
        file("8M"),
        memcg(None),
        phase("first"),
        io("pread", ""),
        phase("second"),
        io("read", ""),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "first", "memcg/0/inactive_file"), 8 << 20);
    assert_eq!(c(&r, "first", "pgactivate"), 0);
    assert_eq!(c(&r, "second", "memcg/0/active_file"), 8 << 20);
    assert_eq!(c(&r, "second", "memcg/0/pgactivate"), 2048);
    // Nothing new is read the second time.
    assert_eq!(c(&r, "second", "filemap:mm_filemap_add_to_page_cache"), 0);
}

/// pos_same_folio(): a read that starts in the folio the previous read
/// through the same file ended in does not mark it again. 4 KiB reads of
/// order-0 folios at offsets 0, 0, 0: the first marks (PG_referenced), the
/// others start in the folio the previous one ended in (last_pos - 1 =
/// 4095) and do not, so nothing is activated. Reading page 0 after page 1
/// marks it a second time and activates it.
#[test]
fn a_read_in_the_folio_the_last_one_ended_in_does_not_mark_it() {
    let base = [
        system("read_ahead_kb = 0"),
        file("64K"),
        memcg(None),
        phase("p"),
        io("pread", "len = 4096\ncount = 3"),
    ]
    .concat();
    let r = run(&base);
    assert_eq!(c(&r, "p", "memcg/0/pgactivate"), 0);
    let text = [
        base,
        io("pread", "offset = 4096\nlen = 4096"),
        io("pread", "len = 4096"),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(c(&r, "p", "memcg/0/pgactivate"), 1);
}

/// generic_perform_write() dirties the folios; limit reclaim does not
/// write file folios back (shrink_folio_list(): a dirty file folio is
/// marked PG_reclaim and activated), so lowering the limit below 4 MiB of
/// dirty page cache frees nothing and the write fails with EBUSY
/// (mem_cgroup_resize_max(): one reclaim call that frees nothing). After
/// an fsync the same folios are clean and the write succeeds, reclaiming
/// until the usage fits.
#[test]
fn dirty_page_cache_makes_a_limit_write_fail() {
    let steps = |sync: &str| {
        [
            system(""),
            file("4M"),
            memcg(None),
            io("pwrite", &format!("write_size = \"64K\"\nfsync = {sync}")),
            phase("lower"),
            limit("2M"),
        ]
        .concat()
    };
    let r = run(&steps("false"));
    assert_counters(
        &r,
        "lower",
        "memcg/0/limit_write_ebusy=1 memcg/0/pgsteal_direct=0",
    );
    let r = run(&steps("true"));
    assert_eq!(c(&r, "lower", "memcg/0/limit_write_ebusy"), 0);
    // 1024 pages of 64 KiB folios (fgf_set_order(64K) = order 4) plus the
    // xarray nodes (16 leaves, 1 root: 17 * 592 bytes = 3 pages) must fit
    // in 512 pages: at least 515 pages reclaimed, in whole folios.
    let stolen = c(&r, "lower", "memcg/0/pgsteal_direct");
    assert!(stolen >= 515 && stolen % 16 == 0, "{stolen}");
    assert!(c(&r, "lower", "memcg/0/inactive_file") <= -515 * 4096);
}

/// Page tables are charged to the faulting task's cgroup: 4 MiB of anon
/// memory needs 2 PTE tables (one per 2 MiB), a PMD and a PUD table at
/// first touch, and a limit that leaves no room for them fails the write.
#[test]
fn page_tables_count_in_the_usage() {
    let text = [
        system(""),
        memcg(None),
        mmap_anon("a", "4M"),
        touch("a", "write", ""),
        phase("lower"),
        limit("4M"),
    ]
    .concat();
    let r = run(&text);
    // 1024 anon pages + the tables > 1024: no swap, nothing to reclaim.
    assert_eq!(c(&r, "lower", "memcg/0/limit_write_ebusy"), 1);
}

/// A cold 32 MiB file mapped and advised MADV_WILLNEED whole, on a device
/// with `read_ahead_kb` and `max_sectors_kb` as given.
fn willneed_file(read_ahead_kb: u64, max_sectors_kb: u64) -> String {
    format!(
        "[system]\nmemory = \"1G\"\ntransparent_hugepage.enabled = \"never\"\n\
         read_ahead_kb = {read_ahead_kb}\nmax_sectors_kb = {max_sectors_kb}\n\
         [[file]]\nname = \"data\"\nsize = \"32M\"\nfill = \"cold\"\n\
         [[step]]\nop = \"mmap\"\nregion = \"f\"\nkind = \"file\"\nfile = \"data\"\nsize = \"32M\"\n\
         [[step]]\nop = \"phase\"\nname = \"willneed\"\n\
         [[step]]\nop = \"madvise\"\nregion = \"f\"\nadvice = \"willneed\"\n"
    )
}

#[test]
fn willneed_of_a_file_reads_up_to_the_larger_of_io_pages_and_ra_pages() {
    // force_page_cache_ra(): the 8,192 pages asked for are cut to
    // max(bdi->io_pages, ra->ra_pages), io_pages = max_sectors_kb / 4 and
    // ra_pages = read_ahead_kb / 4, and read as order-0 folios.
    for (ra_kb, sectors_kb, pages) in [
        (128, 1280, 320),    // io_pages 320 > ra_pages 32
        (128, 4096, 1024),   // io_pages 1,024
        (8192, 4096, 2048),  // ra_pages 2,048 > io_pages 1,024
        (65536, 4096, 8192), // ra_pages 16,384: the whole file
    ] {
        let r = run(&willneed_file(ra_kb, sectors_kb));
        assert_eq!(
            c(&r, "willneed", "filemap:mm_filemap_add_to_page_cache"),
            pages,
            "read_ahead_kb {ra_kb}, max_sectors_kb {sectors_kb}"
        );
        assert_eq!(c(&r, "willneed", "nr_inactive_file"), pages);
    }
}

/// One read(2) of a whole cold 1 MiB file (256 pages) with a 128 KiB
/// readahead window (ra_pages 32), on a device whose largest request is
/// `max_sectors_kb`: how many folios the read adds to the page cache.
fn one_big_read(max_sectors_kb: u64) -> i64 {
    let text = [
        system(&format!(
            "read_ahead_kb = 128\nmax_sectors_kb = {max_sectors_kb}"
        )),
        file("1M"),
        phase("read"),
        io("read", "read_size = \"1M\""),
    ]
    .concat();
    let r = run(&text);
    assert_eq!(
        c(&r, "read", "nr_inactive_file"),
        256,
        "max_sectors_kb {max_sectors_kb}"
    );
    c(&r, "read", "filemap:mm_filemap_add_to_page_cache")
}

#[test]
fn a_read_larger_than_the_window_reads_ahead_up_to_io_pages() {
    // ractl_max_pages(): a request of 256 pages, more than ra_pages 32,
    // may read ahead min(256, io_pages) pages when io_pages (max_sectors_kb
    // / 4) exceeds ra_pages. io_pages 1,024: page_cache_sync_ra() at index
    // 0 sets size get_init_ra_size(256, 256) = 256 and async_size 256 >> 1
    // = 128 (the size is not above the request): 256 order-0 folios,
    // PG_readahead on page 128. Its page_cache_async_ra() (request 128,
    // max_pages 128) starts the next window at 256, past EOF: nothing.
    assert_eq!(one_big_read(4096), 256);
    // io_pages 31 does not exceed ra_pages: max_pages stays 32. The sync
    // window is get_init_ra_size(256, 32) = 32 pages with async_size 16:
    // 32 order-0 folios; each PG_readahead hit then moves a 32-page window
    // on with ra->order + 2, aligned to 1 << min(order, ffs(32) - 1) and
    // capped at ilog2(32) = 5 by page_cache_ra_order(): pages 32-63 as 8
    // order-2 folios, 64-95 as 2 order-4 folios, then one order-5 folio
    // each for 96, 128, 160, 192 and 224; the window at 256 is past EOF.
    // 32 + 8 + 2 + 5 = 47 folios.
    assert_eq!(one_big_read(124), 47);
}
