//! What the guest says on its console and how the host reads it back.
//!
//! The guest has one channel every kernel offers: its serial console,
//! which the kernel's own messages share. Everything foliosim sends is a
//! line that starts with [`PREFIX`]:
//!
//! * `@@foliosim:status TEXT` — progress (booted, running);
//! * `@@foliosim:data CHUNK` — base64 of the result (JSON), in order;
//! * `@@foliosim:end LEN CRC32` — the result's length and CRC-32.
//!
//! A kernel message printed in the middle of a data line spoils that line,
//! which the length and checksum catch: the run is then reported as
//! garbled, never decoded wrong.

use base64::Engine as _;

pub const PREFIX: &str = "@@foliosim:";
const CHUNK: usize = 96;

/// The console lines that carry `payload`.
pub fn encode(payload: &[u8]) -> String {
    let b64 = base64::engine::general_purpose::STANDARD.encode(payload);
    let mut out = String::with_capacity(b64.len() + b64.len() / CHUNK * 20 + 64);
    // A newline first: the line may start after a kernel message's text.
    out.push('\n');
    for chunk in b64.as_bytes().chunks(CHUNK) {
        out.push_str(PREFIX);
        out.push_str("data ");
        out.push_str(std::str::from_utf8(chunk).expect("base64 is ASCII"));
        out.push('\n');
    }
    out.push_str(&format!(
        "{PREFIX}end {} {:08x}\n",
        payload.len(),
        crc32fast::hash(payload)
    ));
    out
}

/// A status line.
pub fn status(text: &str) -> String {
    format!("\n{PREFIX}status {text}\n")
}

/// One console line as the host sees it.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    Status(&'a str),
    Data(&'a str),
    End {
        len: usize,
        crc: u32,
    },
    /// Anything else: the kernel's messages, the engine's notes.
    Console(&'a str),
}

/// Classify one console line (a trailing CR of the tty is ignored).
pub fn parse(line: &str) -> Line<'_> {
    let line = line.trim_end_matches(['\r', '\n']);
    let Some(rest) = line.strip_prefix(PREFIX) else {
        return Line::Console(line);
    };
    if let Some(t) = rest.strip_prefix("status ") {
        return Line::Status(t);
    }
    if let Some(d) = rest.strip_prefix("data ") {
        return Line::Data(d);
    }
    if let Some(e) = rest.strip_prefix("end ") {
        let mut it = e.split(' ');
        if let (Some(Ok(len)), Some(Ok(crc))) = (
            it.next().map(str::parse),
            it.next().map(|c| u32::from_str_radix(c, 16)),
        ) {
            return Line::End { len, crc };
        }
    }
    Line::Console(line)
}

/// The result, reassembled from the data lines and checked against the
/// end line.
pub fn decode(data: &str, len: usize, crc: u32) -> Result<Vec<u8>, String> {
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(data)
        .map_err(|e| format!("the guest's result is garbled ({e})"))?;
    if bytes.len() != len || crc32fast::hash(&bytes) != crc {
        return Err(format!(
            "the guest's result is garbled ({} bytes received, {len} sent, or a checksum \
             mismatch): a kernel message was printed in the middle of it; run again",
            bytes.len()
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roundtrip(text: &str) -> Result<Vec<u8>, String> {
        let mut data = String::new();
        for l in text.lines() {
            match parse(l) {
                Line::Data(d) => data.push_str(d),
                Line::End { len, crc } => return decode(&data, len, crc),
                _ => {}
            }
        }
        Err("no end line".into())
    }

    #[test]
    fn a_payload_survives_the_console() {
        let payload: Vec<u8> = (0..1000u32).map(|i| (i * 7 % 251) as u8).collect();
        let lines = encode(&payload).replace('\n', "\r\n");
        assert_eq!(roundtrip(&lines).unwrap(), payload);
        assert_eq!(roundtrip(&encode(b"")).unwrap(), b"");
    }

    #[test]
    fn kernel_messages_between_lines_are_ignored() {
        let payload = vec![42u8; 500];
        let mut out = String::new();
        for (i, l) in encode(&payload).lines().enumerate() {
            out.push_str(l);
            out.push('\n');
            if i % 2 == 0 {
                out.push_str("[    1.234] random: crng init done\n");
            }
        }
        assert_eq!(roundtrip(&out).unwrap(), payload);
    }

    #[test]
    fn a_message_inside_a_data_line_is_caught() {
        let payload = vec![7u8; 500];
        let enc = encode(&payload);
        // A kernel message spliced into the second data line.
        let mut lines: Vec<String> = enc.lines().map(str::to_string).collect();
        lines[2].insert_str(30, "[ 3.1] oom");
        let err = roundtrip(&lines.join("\n")).unwrap_err();
        assert!(err.contains("garbled"), "{err}");
    }

    #[test]
    fn status_and_console_lines() {
        assert_eq!(parse("@@foliosim:status booted\r"), Line::Status("booted"));
        assert_eq!(parse("hello"), Line::Console("hello"));
        assert_eq!(
            parse("@@foliosim:end x y"),
            Line::Console("@@foliosim:end x y")
        );
    }
}
