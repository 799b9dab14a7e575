//! An incremental Server-Sent Events reader: bytes in, the `data` of each complete event out.
//! Only what the API sends is interpreted (`data:` lines, blank-line dispatch); comments (`:`,
//! heartbeats) and other fields are skipped.

#[derive(Debug, Default)]
pub(crate) struct SseReader {
    line: Vec<u8>,
    data: Vec<String>,
}

impl SseReader {
    /// Feeds a chunk; returns the data of every event the chunk completed.
    pub(crate) fn feed(&mut self, chunk: &[u8]) -> Vec<String> {
        let mut events = Vec::new();
        for &byte in chunk {
            if byte != b'\n' {
                self.line.push(byte);
                continue;
            }
            if self.line.last() == Some(&b'\r') {
                self.line.pop();
            }
            let line = String::from_utf8_lossy(&std::mem::take(&mut self.line)).into_owned();
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(std::mem::take(&mut self.data).join("\n"));
                }
            } else if let Some(data) = line.strip_prefix("data:") {
                self.data.push(data.strip_prefix(' ').unwrap_or(data).to_owned());
            }
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_anywhere_are_reassembled() {
        let stream = b": heartbeat\n\ndata: {\"a\":1}\r\n\r\nevent: x\ndata: one\ndata: two\n\n";
        for split in 0..stream.len() {
            let mut reader = SseReader::default();
            let mut seen = reader.feed(&stream[..split]);
            seen.extend(reader.feed(&stream[split..]));
            assert_eq!(seen, vec!["{\"a\":1}".to_owned(), "one\ntwo".to_owned()], "split at {split}");
        }
    }
}
