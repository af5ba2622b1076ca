//! The buffered I/O steps (`read`, `pread`, `write`, `pwrite`) and the
//! `memcg_limit` step.

use crate::common;

use common::{error, parse, BASE};
use foliosim_scenario::*;

fn step(body: &str) -> String {
    format!("{BASE}\n[[step]]\n{body}")
}

fn io(s: &Scenario) -> IoStep {
    match &s.steps.last().expect("a step").kind {
        StepKind::Io(io) => io.clone(),
        k => panic!("not an I/O step: {k:?}"),
    }
}

#[test]
fn io_steps_and_their_defaults() {
    let r = io(&parse(&step("op = \"read\"\nfile = \"data\"\n")));
    assert_eq!(
        r,
        IoStep {
            call: IoCall::Read,
            file: "data".into(),
            offset: 0,
            len: 8 << 20,
            chunk: 128 << 10,
            count: 1,
            fsync: false,
        }
    );
    let w = io(&parse(&step(
        "op = \"pwrite\"\nfile = \"data\"\noffset = 100\nlen = \"1M\"\ncount = 3\nfsync = true\n",
    )));
    assert_eq!(
        (w.call, w.offset, w.len, w.chunk, w.count, w.fsync),
        (IoCall::Pwrite, 100, 1 << 20, 4096, 3, true)
    );
    let p = io(&parse(&step(
        "op = \"pread\"\nfile = \"data\"\noffset = \"4M\"\nread_size = 1000\n",
    )));
    assert_eq!((p.call, p.len, p.chunk), (IoCall::Pread, 4 << 20, 1000));
    let w = io(&parse(&step("op = \"write\"\nfile = \"data\"\n")));
    assert!(w.call.writes());
}

#[test]
fn io_step_errors_name_the_field() {
    let e = error(&step("op = \"read\"\nfile = \"nope\"\n"));
    assert_eq!(e.field, "step[2].file");
    assert!(e.message.contains("unknown file \"nope\""), "{e}");
    let e = error(&step("op = \"read\"\nfile = \"data\"\noffset = \"8M\"\n"));
    assert_eq!(e.field, "step[2].offset");
    let e = error(&step(
        "op = \"pwrite\"\nfile = \"data\"\noffset = \"7M\"\nlen = \"2M\"\n",
    ));
    assert_eq!(e.field, "step[2].len");
    assert!(e.message.contains("would extend the file"), "{e}");
    let e = error(&step("op = \"read\"\nfile = \"data\"\nwrite_size = 4096\n"));
    assert_eq!(e.field, "step[2].write_size");
    let e = error(&step("op = \"pread\"\nfile = \"data\"\nfsync = true\n"));
    assert_eq!(e.field, "step[2].fsync");
    let e = error(&step("op = \"write\"\nfile = \"data\"\ncount = 0\n"));
    assert_eq!(e.field, "step[2].count");
    let e = error(&step(
        "op = \"read\"\nfile = \"data\"\nread_size = \"65M\"\n",
    ));
    assert_eq!(e.field, "step[2].read_size");
    let e = error(&step("op = \"read\"\n"));
    assert!(e.message.contains("file"), "{e}");
}

#[test]
fn memcg_limit_needs_a_memcg_and_a_limit() {
    let s = parse(&step(
        "op = \"memcg\"\n[[step]]\nop = \"memcg_limit\"\nlimit = \"4M\"\n[[step]]\nop = \"memcg_limit\"\nlimit = \"max\"\n",
    ));
    let n = s.steps.len();
    assert!(matches!(s.steps[n - 2].kind, StepKind::MemcgLimit { limit: Some(l) } if l == 4 << 20));
    assert!(matches!(
        s.steps[n - 1].kind,
        StepKind::MemcgLimit { limit: None }
    ));
    let e = error(&step("op = \"memcg_limit\"\nlimit = \"4M\"\n"));
    assert_eq!(e.field, "step[2].op");
    assert!(e.message.contains("not in one"), "{e}");
    let e = error(&step("op = \"memcg\"\n[[step]]\nop = \"memcg_limit\"\n"));
    assert!(e.message.contains("limit"), "{e}");
    let e = error(&step(
        "op = \"memcg\"\n[[step]]\nop = \"memcg_limit\"\nlimit = \"unlimited\"\n",
    ));
    assert_eq!(e.field, "step[3].limit");
}
