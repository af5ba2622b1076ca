//! Every error names the file, line, column and field, and says what was
//! expected and what was found.

use crate::common;

use common::{error, BASE};

/// `BASE` plus a step written from line 12 on (the `[[step]]` header).
fn with_step(step: &str) -> String {
    format!("{BASE}\n[[step]]\n{step}")
}

fn at(e: &foliosim_scenario::ScenarioError) -> (u32, u32, &str) {
    (e.line, e.col, e.field.as_str())
}

#[test]
fn base_step_starts_on_line_12() {
    let e = error(&with_step("op = \"nope\"\n"));
    assert_eq!(at(&e), (13, 6, "step[2].op"));
}

#[test]
fn syntax_error_position() {
    let e = error("a = 1\nb = [1,\n c = 3\n");
    assert_eq!((e.file.as_str(), e.line, e.col), ("t.toml", 3, 4));
    assert!(
        e.message.starts_with("TOML syntax error: "),
        "{}",
        e.message
    );
    assert!(
        e.to_string().starts_with("t.toml:3:4: TOML syntax error"),
        "{e}"
    );
}

#[test]
fn syntax_error_duplicate_key() {
    let e = error("seed = 1\nseed = 2\n");
    assert_eq!(e.line, 2);
}

#[test]
fn unknown_key_in_step() {
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"read\"\nfoo = 2\n",
    ));
    assert_eq!(at(&e), (16, 1, "step[2].foo"));
    assert_eq!(
        e.message,
        "unknown key `foo` in step[2] (op = \"touch\"); expected one of: \
         op, region, access, pattern, seed, stride, offset, len, split, unit, pages, data, \
         random_percent"
    );
    assert_eq!(
        e.to_string(),
        format!("t.toml:16:1: step[2].foo: {}", e.message)
    );
}

#[test]
fn unknown_keys_elsewhere() {
    let e = error("bogus = 1\n");
    assert_eq!(at(&e), (1, 1, "bogus"));
    assert!(e.message.contains("at the top level"));
    let e = error("[system]\nmemry = \"1G\"\n");
    assert_eq!(at(&e), (2, 1, "system.memry"));
    assert!(
        e.message.contains("expected one of: arch, memory"),
        "{}",
        e.message
    );
    let e = error("[[file]]\nname = \"f\"\nsize = 1\ncolour = 2\n");
    assert_eq!(at(&e), (4, 1, "file[1].colour"));
    let e = error("[[step]]\nop = \"phase\"\nname = \"p\"\n[[expect]]\nphase = \"p\"\ncounter = \"c\"\nvalue = 1\nx = 1\n");
    assert_eq!(at(&e), (8, 1, "expect[1].x"));
    let e = error("[[step]]\nop = \"wait\"\nregion = \"a\"\n");
    assert_eq!(at(&e), (3, 1, "step[1].region"));
    assert!(e.message.ends_with("expected one of: op"), "{}", e.message);
}

#[test]
fn unknown_key_in_child_step() {
    let e = error("[[step]]\nop = \"fork\"\n[[step.child]]\nop = \"wait\"\nx = 1\n");
    assert_eq!(at(&e), (5, 1, "step[1].child[1].x"));
    assert!(e.message.contains("in step[1].child[1] (op = \"wait\")"));
}

#[test]
fn bad_enum_values() {
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"rd\"\n",
    ));
    assert_eq!(at(&e), (15, 10, "step[2].access"));
    assert_eq!(
        e.message,
        "expected one of \"read\", \"write\", \"write-zero\", found string \"rd\""
    );
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"read\"\npattern = \"zigzag\"\n",
    ));
    assert_eq!(at(&e), (16, 11, "step[2].pattern"));
    assert!(e.message.contains("\"one-per-pt\"") && e.message.contains("\"zigzag\""));
    let e = error("[system]\ntransparent_hugepage.hugepages-64kB.enabled = \"sometimes\"\n");
    assert_eq!(
        at(&e),
        (2, 47, "system.transparent_hugepage.hugepages-64kB.enabled")
    );
    assert!(e.message.contains("\"inherit\""));
    let e = error("[system]\narch = \"riscv\"\n");
    assert_eq!(e.field, "system.arch");
    // Free blocks per order: at most eleven counts (orders 0 to 10).
    let e = error("[system]\nmachine.free_unmovable = \"0 0 0 0 12 x\"\n");
    assert_eq!(at(&e), (2, 26, "system.machine.free_unmovable"));
    assert!(
        e.message.contains("found string \"0 0 0 0 12 x\""),
        "{}",
        e.message
    );
    let e = error("[system]\nmachine.free_reclaimable = \"0 0 0 0 0 0 0 0 0 0 0 1\"\n");
    assert_eq!(e.field, "system.machine.free_reclaimable");
    let e = error(&with_step("op = \"mmap\"\nregion = \"x\"\nkind = \"anon\"\nsize = 4096\nmadvise = [\"hugepage\", \"huge\"]\n"));
    assert_eq!(at(&e), (17, 24, "step[2].madvise[2]"));
}

#[test]
fn wrong_types() {
    let e = error("seed = -1\n");
    assert_eq!(at(&e), (1, 8, "seed"));
    assert_eq!(
        e.message,
        "expected a non-negative integer, found integer -1"
    );
    let e = error("name = 3\n");
    assert_eq!(e.message, "expected a non-empty string, found integer 3");
    let e = error("system = 3\n");
    assert_eq!(e.field, "system");
    let e = error("step = 3\n");
    assert_eq!(e.field, "step");
    let e = error(
        "[[step]]\nop = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = 4096\nshared = \"yes\"\n",
    );
    assert_eq!(at(&e), (6, 10, "step[1].shared"));
    let e = error("[[step]]\nop = \"phase\"\nname = \"p\"\n[[expect]]\nphase = \"p\"\ncounter = \"c\"\nvalue = \"many\"\n");
    assert_eq!(e.field, "expect[1].value");
    let e = error("when = 1979-05-27\n");
    assert_eq!(at(&e), (1, 8, "when"));
}

#[test]
fn missing_required_key_points_at_the_table_header() {
    let e = error(&with_step("op = \"touch\"\nregion = \"buf\"\n"));
    assert_eq!(at(&e), (12, 1, "step[2].access"));
    assert_eq!(
        e.message,
        "missing required key `access` in step[2] (op = \"touch\")"
    );
    let e = error("seed = 1\n\n  [[step]]\n");
    assert_eq!(at(&e), (3, 3, "step[1].op"));
    assert!(
        e.message.contains("expected one of: mmap, touch"),
        "{}",
        e.message
    );
    let e = error("[[file]]\nname = \"f\"\n");
    assert_eq!(at(&e), (1, 1, "file[1].size"));
    let e = error(
        "[[step]]\nop = \"fork\"\n[[step.child]]\nop = \"mmap\"\nregion = \"r\"\nsize = 4096\n",
    );
    assert_eq!(at(&e), (3, 1, "step[1].child[1].kind"));
}

#[test]
fn touch_of_an_unknown_region() {
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"nope\"\naccess = \"read\"\n",
    ));
    assert_eq!(at(&e), (14, 10, "step[2].region"));
    assert_eq!(e.message, "unknown region \"nope\"; mapped regions: buf");
    let e = error("[[step]]\nop = \"munmap\"\nregion = \"x\"\n");
    assert_eq!(
        e.message,
        "unknown region \"x\"; no region is mapped at this point"
    );
}

#[test]
fn region_used_before_its_mmap() {
    let text = "[[step]]\nop = \"touch\"\nregion = \"b\"\naccess = \"read\"\n\
                [[step]]\nop = \"mmap\"\nregion = \"b\"\nkind = \"anon\"\nsize = 4096\n";
    let e = error(text);
    assert_eq!(at(&e), (3, 10, "step[1].region"));
    assert_eq!(
        e.message,
        "region \"b\" is not mapped by an earlier step of this process (it is mmapped by step[2])"
    );
}

#[test]
fn parent_cannot_use_a_region_of_its_child() {
    let text = "[[step]]\nop = \"fork\"\n\
                [[step.child]]\nop = \"mmap\"\nregion = \"c\"\nkind = \"anon\"\nsize = 4096\n\
                [[step]]\nop = \"touch\"\nregion = \"c\"\naccess = \"read\"\n";
    let e = error(text);
    assert_eq!(e.field, "step[2].region");
    assert!(
        e.message.contains("mmapped by step[1].child[1]"),
        "{}",
        e.message
    );
}

#[test]
fn duplicate_names() {
    let e = error(&with_step(
        "op = \"mmap\"\nregion = \"buf\"\nkind = \"anon\"\nsize = 4096\n",
    ));
    assert_eq!(at(&e), (14, 10, "step[2].region"));
    assert_eq!(e.message, "region \"buf\" is already mmapped by step[1]");
    let e = error("[[file]]\nname = \"f\"\nsize = 1\n[[file]]\nname = \"f\"\nsize = 2\n");
    assert_eq!(at(&e), (5, 8, "file[2].name"));
}

#[test]
fn size_not_page_aligned() {
    let e = error("[[step]]\nop = \"mmap\"\nregion = \"b\"\nkind = \"anon\"\nsize = 4000\n");
    assert_eq!(at(&e), (5, 8, "step[1].size"));
    assert_eq!(
        e.message,
        "expected a multiple of the page size (4096), found 4000"
    );
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"read\"\noffset = \"6K\"\n",
    ));
    assert_eq!(at(&e), (16, 10, "step[2].offset"));
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"read\"\npattern = \"stride\"\nstride = 100\n",
    ));
    assert_eq!(e.field, "step[2].stride");
    let e = error("[[file]]\nname = \"f\"\nsize = 1\nwrite_size = 512\n");
    assert_eq!(e.field, "file[1].write_size");
}

#[test]
fn range_outside_the_region() {
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"read\"\noffset = \"1M\"\nlen = \"2M\"\n",
    ));
    assert_eq!(at(&e), (17, 7, "step[2].len"));
    assert_eq!(
        e.message,
        "offset 1048576 + len 2097152 exceeds the size of region \"buf\" (2097152 bytes)"
    );
    let e = error(&with_step(
        "op = \"madvise\"\nregion = \"buf\"\nadvice = \"cold\"\noffset = \"2M\"\n",
    ));
    assert_eq!(e.field, "step[2].offset");
}

#[test]
fn unknown_hugepages_size() {
    let e = error("[system]\ntransparent_hugepage.hugepages-63kB.enabled = \"always\"\n");
    assert_eq!(
        at(&e),
        (2, 22, "system.transparent_hugepage.hugepages-63kB.enabled")
    );
    assert!(e
        .message
        .starts_with("unknown hugepage size `hugepages-63kB`; expected one of: hugepages-16kB,"));
    assert!(e.message.ends_with("hugepages-2048kB"));
    let e = error("[system.transparent_hugepage.hugepages-64kB]\nmode = \"always\"\n");
    assert_eq!(
        at(&e),
        (2, 1, "system.transparent_hugepage.hugepages-64kB.mode")
    );
}

#[test]
fn system_value_checks() {
    let e = error("[system]\nmemory = \"66M\"\n");
    assert_eq!(at(&e), (2, 10, "system.memory"));
    assert!(e.message.contains("multiple of 4 MiB"));
    assert!(error("[system]\nmemory = \"32M\"\n")
        .message
        .contains("at least 64 MiB"));
    let e = error("[system]\nmemory = \"12Q\"\n");
    assert!(e.message.contains("\"12Q\""), "{}", e.message);
    assert_eq!(
        error("[system]\nfault_around_bytes = 0\n").field,
        "system.fault_around_bytes"
    );
    assert_eq!(
        error("[system]\ntransparent_hugepage.use_zero_page = 2\n").col,
        38
    );
    let e = error("[system]\ntransparent_hugepage.khugepaged.max_ptes_none = 512\n");
    assert_eq!(
        at(&e),
        (
            2,
            49,
            "system.transparent_hugepage.khugepaged.max_ptes_none"
        )
    );
    // HPAGE_PMD_NR - 1 = 511 (mm/khugepaged.c: max_ptes_none_store()).
    assert!(
        e.message.contains("from 0 to 511, found 512"),
        "{}",
        e.message
    );
}

#[test]
fn duplicate_phase_names() {
    let e =
        error("[[step]]\nop = \"phase\"\nname = \"a\"\n[[step]]\nop = \"phase\"\nname = \"a\"\n");
    assert_eq!(at(&e), (6, 8, "step[2].name"));
    assert_eq!(e.message, "duplicate phase name \"a\"");
}

#[test]
fn phase_in_a_grandchild_is_rejected() {
    let e = error(
        "[[step]]\nop = \"fork\"\nchild = [{ op = \"fork\", child = [{ op = \"phase\", name = \"x\" }] }]\n",
    );
    assert_eq!(e.field, "step[1].child[1].child[1].op");
}

#[test]
fn expect_naming_an_unknown_phase() {
    let text = "[[step]]\nop = \"phase\"\nname = \"a\"\n\
                [[expect]]\nphase = \"b\"\ncounter = \"x\"\nvalue = 1\n";
    let e = error(text);
    assert_eq!(at(&e), (5, 9, "expect[1].phase"));
    assert_eq!(e.message, "unknown phase \"b\"; declared phases: a");
    let e = error("[[expect]]\nphase = \"b\"\ncounter = \"x\"\nvalue = 1\n");
    assert!(e.message.ends_with("no step declares a phase"));
}

#[test]
fn bad_tolerances() {
    for tolerance in ["-1", "\"five%\"", "\"5\"", "\"-5%\"", "true", "nan"] {
        let text = format!(
            "[[step]]\nop = \"phase\"\nname = \"a\"\n[[expect]]\nphase = \"a\"\ncounter = \"x\"\nvalue = 1\ntolerance = {tolerance}\n"
        );
        let e = error(&text);
        assert_eq!(at(&e), (8, 13, "expect[1].tolerance"), "{tolerance}");
    }
}

#[test]
fn mmap_consistency() {
    let e = error(&with_step(
        "op = \"mmap\"\nregion = \"f\"\nkind = \"file\"\nsize = 4096\n",
    ));
    assert_eq!(at(&e), (12, 1, "step[2].file"));
    let e = error(&with_step(
        "op = \"mmap\"\nregion = \"f\"\nkind = \"file\"\nfile = \"nope\"\nsize = 4096\n",
    ));
    assert_eq!(e.message, "unknown file \"nope\"; files: data");
    let e = error(&with_step(
        "op = \"mmap\"\nregion = \"s\"\nkind = \"shmem\"\nsize = 4096\n",
    ));
    assert_eq!(at(&e), (15, 8, "step[2].kind"));
    assert_eq!(e.message, "kind = \"shmem\" requires shared = true");
    let e = error(&with_step(
        "op = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = 4096\noffset = 4096\n",
    ));
    assert_eq!(e.field, "step[2].offset");
    let e = error(&with_step(
        "op = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = 4096\nprot = \"rwq\"\n",
    ));
    assert_eq!(e.field, "step[2].prot");
    assert!(error(&with_step(
        "op = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = 4096\nprot = \"rr\"\n"
    ))
    .field
    .ends_with("prot"));
    assert!(error(&with_step(
        "op = \"mmap\"\nregion = \"a\"\nkind = \"anon\"\nsize = 0\n"
    ))
    .field
    .ends_with("size"));
}

#[test]
fn keys_that_belong_to_another_variant() {
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"read\"\nseed = 3\n",
    ));
    assert_eq!(at(&e), (16, 8, "step[2].seed"));
    assert_eq!(
        e.message,
        "`seed` is only allowed with pattern = \"random\""
    );
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"read\"\npattern = \"stride\"\n",
    ));
    assert_eq!(e.field, "step[2].stride");
    let e = error("[[file]]\nname = \"f\"\nsize = 1\nfill = \"cold\"\nread_size = 4096\n");
    assert_eq!(at(&e), (5, 13, "file[1].read_size"));
    let e = error("[[file]]\nname = \"f\"\nsize = 1\nread_size = 4096\n");
    assert_eq!(e.field, "file[1].read_size");
}

#[test]
fn columns_count_characters() {
    let e = error("description = \"µs\"; x\n");
    // `µ` is two bytes but one column.
    assert_eq!((e.line, e.col), (1, 19));
}

#[test]
fn word_touch_only_for_sequential_or_random_reads() {
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"write\"\nunit = \"word\"\n",
    ));
    assert_eq!(at(&e), (16, 8, "step[2].unit"));
    assert!(e.message.starts_with("unsupported: "), "{}", e.message);
    assert!(e.message.contains("access = \"read\""), "{}", e.message);
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"read\"\npattern = \"one-per-pt\"\nunit = \"word\"\n",
    ));
    assert_eq!(e.field, "step[2].unit");
    assert!(
        e.message.contains("pattern = \"sequential\""),
        "{}",
        e.message
    );
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"read\"\nunit = \"byte\"\n",
    ));
    assert_eq!(e.field, "step[2].unit");
}

#[test]
fn phases_in_a_child_but_not_in_a_grandchild() {
    let child = "[[step]]\nop = \"fork\"\n[[step.child]]\nop = \"phase\"\nname = \"c\"\n";
    let expect = "[[expect]]\nphase = \"c\"\ncounter = \"pgfault\"\nvalue = 0\n";
    let text = format!("{child}{expect}");
    let s = foliosim_scenario::parse_str("t.toml", &text, &[]).expect("a child may mark phases");
    assert_eq!(s.expects[0].phase, "c");
    let grandchild = "[[step]]\nop = \"fork\"\n[[step.child]]\nop = \"fork\"\n\
                      [[step.child.child]]\nop = \"phase\"\nname = \"g\"\n";
    let e = error(grandchild);
    assert_eq!(e.field, "step[1].child[1].child[1].op");
    assert!(e.message.contains("not in a grandchild"), "{}", e.message);
}

#[test]
fn touch_data_errors_name_the_field() {
    // data needs a write of the whole page.
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"read\"\ndata = \"random\"\n",
    ));
    assert_eq!(at(&e), (16, 8, "step[2].data"));
    assert_eq!(e.message, "data needs access = \"write\"");
    // random_percent is a share of the page.
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"write\"\ndata = \"random\"\n\
         random_percent = 0\n",
    ));
    assert_eq!(at(&e).2, "step[2].random_percent");
    assert_eq!(e.message, "expected a percentage from 1 to 100, found 0");
    // ... and only of random data.
    let e = error(&with_step(
        "op = \"touch\"\nregion = \"buf\"\naccess = \"write\"\ndata = \"repeated\"\n\
         random_percent = 50\n",
    ));
    assert_eq!(at(&e).2, "step[2].random_percent");
}

#[test]
fn madvise_errno_must_be_a_known_error_name() {
    let e = error(&with_step(
        "op = \"madvise\"\nregion = \"buf\"\nadvice = \"collapse\"\nerrno = \"ENOPE\"\n",
    ));
    assert_eq!(at(&e), (16, 9, "step[2].errno"));
    assert!(e.message.contains("EINVAL"), "{}", e.message);
}
