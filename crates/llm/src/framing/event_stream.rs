//! The binary AWS event-stream framing (`application/vnd.amazon.eventstream`).
//!
//! ```text
//! u32 total_length | u32 headers_length | u32 prelude_crc | headers | payload | u32 message_crc
//! ```
//! All integers are big-endian; both checksums are CRC-32 and both are verified, the prelude one as
//! soon as its 12 bytes arrive so that a corrupted length never makes us wait for bytes that will
//! not come.

use bytes::Buf;
use bytes::Bytes;
use bytes::BytesMut;

const PRELUDE_LEN: usize = 12;
const MIN_MESSAGE_LEN: usize = PRELUDE_LEN + 4;
/// Frames larger than this are rejected instead of buffered (the service limit is 24 MB of payload).
const MAX_MESSAGE_LEN: usize = 32 * 1024 * 1024;

/// One decoded message.
#[derive(Debug, Clone, PartialEq)]
pub struct EventStreamMessage {
    pub headers: Vec<(String, HeaderValue)>,
    pub payload: Bytes,
}

impl EventStreamMessage {
    /// A header's value when it is a string (`:event-type`, `:message-type`, ...).
    pub fn header_str(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(key, _)| key == name).and_then(|(_, value)| match value {
            HeaderValue::String(text) => Some(text.as_str()),
            _ => None,
        })
    }
}

/// A typed header value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderValue {
    Bool(bool),
    Byte(i8),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Bytes(Vec<u8>),
    String(String),
    /// Milliseconds since the Unix epoch.
    Timestamp(i64),
    Uuid([u8; 16]),
}

/// Why a frame was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EventStreamError {
    #[error("Prelude checksum mismatch")]
    PreludeChecksum,
    #[error("Message checksum mismatch")]
    MessageChecksum,
    #[error("frame length {0} is outside the allowed range")]
    BadLength(usize),
    #[error("malformed headers: {0}")]
    BadHeaders(&'static str),
    #[error("the stream ended inside a frame ({0} bytes left over)")]
    Truncated(usize),
}

/// Incremental decoder.
#[derive(Debug, Default)]
pub struct EventStreamDecoder {
    buf: BytesMut,
}

impl EventStreamDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes; calls `emit` for every complete, verified message.
    pub fn push(&mut self, bytes: &[u8], mut emit: impl FnMut(EventStreamMessage)) -> Result<(), EventStreamError> {
        self.buf.extend_from_slice(bytes);
        while self.buf.len() >= PRELUDE_LEN {
            let total = check_prelude(&self.buf)?;
            if self.buf.len() < total {
                break;
            }
            let frame = self.buf.split_to(total).freeze();
            emit(decode_frame(frame)?);
        }
        Ok(())
    }

    /// The body ended; leftover bytes mean a truncated frame.
    pub fn finish(&self) -> Result<(), EventStreamError> {
        match self.buf.len() {
            0 => Ok(()),
            left => Err(EventStreamError::Truncated(left)),
        }
    }
}

/// Decodes exactly one message from the start of `bytes`; returns it and the bytes it used.
pub fn decode_message(bytes: &[u8]) -> Result<(EventStreamMessage, usize), EventStreamError> {
    if bytes.len() < PRELUDE_LEN {
        return Err(EventStreamError::Truncated(bytes.len()));
    }
    let total = check_prelude(bytes)?;
    if bytes.len() < total {
        return Err(EventStreamError::Truncated(bytes.len()));
    }
    let message = decode_frame(Bytes::copy_from_slice(&bytes[..total]))?;
    Ok((message, total))
}

/// Verifies the prelude checksum and returns the frame's total length.
fn check_prelude(bytes: &[u8]) -> Result<usize, EventStreamError> {
    let total = be_u32(&bytes[0..4]) as usize;
    let expected = be_u32(&bytes[8..12]);
    if crc32fast::hash(&bytes[..8]) != expected {
        return Err(EventStreamError::PreludeChecksum);
    }
    if !(MIN_MESSAGE_LEN..=MAX_MESSAGE_LEN).contains(&total) {
        return Err(EventStreamError::BadLength(total));
    }
    let headers_len = be_u32(&bytes[4..8]) as usize;
    if headers_len > total - MIN_MESSAGE_LEN {
        return Err(EventStreamError::BadLength(headers_len));
    }
    Ok(total)
}

/// Decodes one complete frame whose prelude was already verified.
fn decode_frame(frame: Bytes) -> Result<EventStreamMessage, EventStreamError> {
    let total = frame.len();
    let expected = be_u32(&frame[total - 4..]);
    if crc32fast::hash(&frame[..total - 4]) != expected {
        return Err(EventStreamError::MessageChecksum);
    }
    let headers_len = be_u32(&frame[4..8]) as usize;
    let headers = parse_headers(&frame[PRELUDE_LEN..PRELUDE_LEN + headers_len])?;
    let payload = frame.slice(PRELUDE_LEN + headers_len..total - 4);
    Ok(EventStreamMessage { headers, payload })
}

fn parse_headers(mut bytes: &[u8]) -> Result<Vec<(String, HeaderValue)>, EventStreamError> {
    let mut headers = Vec::new();
    while bytes.has_remaining() {
        let name_len = usize::from(take_u8(&mut bytes)?);
        let name = take_str(&mut bytes, name_len)?;
        let value = match take_u8(&mut bytes)? {
            0 => HeaderValue::Bool(true),
            1 => HeaderValue::Bool(false),
            2 => HeaderValue::Byte(take_u8(&mut bytes)? as i8),
            3 => HeaderValue::Int16(i16::from_be_bytes(take_array(&mut bytes)?)),
            4 => HeaderValue::Int32(i32::from_be_bytes(take_array(&mut bytes)?)),
            5 => HeaderValue::Int64(i64::from_be_bytes(take_array(&mut bytes)?)),
            6 => {
                let len = usize::from(u16::from_be_bytes(take_array(&mut bytes)?));
                HeaderValue::Bytes(take(&mut bytes, len)?.to_vec())
            }
            7 => {
                let len = usize::from(u16::from_be_bytes(take_array(&mut bytes)?));
                HeaderValue::String(take_str(&mut bytes, len)?)
            }
            8 => HeaderValue::Timestamp(i64::from_be_bytes(take_array(&mut bytes)?)),
            9 => HeaderValue::Uuid(take_array(&mut bytes)?),
            _ => return Err(EventStreamError::BadHeaders("unknown header value type")),
        };
        headers.push((name, value));
    }
    Ok(headers)
}

fn be_u32(bytes: &[u8]) -> u32 {
    u32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]])
}

fn take<'a>(bytes: &mut &'a [u8], len: usize) -> Result<&'a [u8], EventStreamError> {
    if bytes.len() < len {
        return Err(EventStreamError::BadHeaders("header runs past the header block"));
    }
    let (head, rest) = bytes.split_at(len);
    *bytes = rest;
    Ok(head)
}

fn take_u8(bytes: &mut &[u8]) -> Result<u8, EventStreamError> {
    Ok(take(bytes, 1)?[0])
}

fn take_array<const N: usize>(bytes: &mut &[u8]) -> Result<[u8; N], EventStreamError> {
    let mut out = [0u8; N];
    out.copy_from_slice(take(bytes, N)?);
    Ok(out)
}

fn take_str(bytes: &mut &[u8], len: usize) -> Result<String, EventStreamError> {
    let raw = take(bytes, len)?;
    String::from_utf8(raw.to_vec()).map_err(|_| EventStreamError::BadHeaders("header text is not UTF-8"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Builds a valid frame with one string header.
    fn frame(event_type: &str, payload: &[u8]) -> Vec<u8> {
        let mut headers = vec![11u8];
        headers.extend_from_slice(b":event-type");
        headers.push(7);
        headers.extend_from_slice(&(event_type.len() as u16).to_be_bytes());
        headers.extend_from_slice(event_type.as_bytes());
        let total = PRELUDE_LEN + headers.len() + payload.len() + 4;
        let mut out = Vec::new();
        out.extend_from_slice(&(total as u32).to_be_bytes());
        out.extend_from_slice(&(headers.len() as u32).to_be_bytes());
        out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
        out.extend_from_slice(&headers);
        out.extend_from_slice(payload);
        out.extend_from_slice(&crc32fast::hash(&out).to_be_bytes());
        out
    }

    #[test]
    fn decodes_frames_split_at_every_byte() {
        let mut input = frame("messageStart", br#"{"role":"assistant"}"#);
        input.extend(frame("messageStop", br#"{"stopReason":"end_turn"}"#));
        for piece in 1..input.len() {
            let mut decoder = EventStreamDecoder::new();
            let mut messages = Vec::new();
            for chunk in input.chunks(piece) {
                decoder.push(chunk, |message| messages.push(message)).unwrap();
            }
            decoder.finish().unwrap();
            let types: Vec<_> = messages.iter().map(|m| m.header_str(":event-type").unwrap().to_owned()).collect();
            assert_eq!(types, ["messageStart", "messageStop"]);
            assert_eq!(&messages[1].payload[..], br#"{"stopReason":"end_turn"}"#);
        }
    }

    #[test]
    fn truncated_stream_is_reported() {
        let input = frame("messageStart", b"{}");
        let mut decoder = EventStreamDecoder::new();
        decoder.push(&input[..input.len() - 1], |_| {}).unwrap();
        assert_eq!(decoder.finish(), Err(EventStreamError::Truncated(input.len() - 1)));
    }

    #[test]
    fn corrupted_payload_fails_the_message_checksum() {
        let mut input = frame("messageStart", b"{}");
        let at = input.len() - 5;
        input[at] ^= 1;
        assert_eq!(decode_message(&input).unwrap_err(), EventStreamError::MessageChecksum);
    }
}
