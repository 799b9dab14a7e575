//! Percent-encoding, the one implementation behind URL paths (Bedrock model ids), SigV4 canonical
//! requests and the URL-encoded form of secrets in redaction.

/// Percent-encodes every byte except ASCII letters, digits and the bytes in `keep`.
pub(crate) fn percent_encode(text: &str, keep: &[u8]) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || keep.contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// RFC 3986 unreserved characters besides letters and digits.
pub(crate) const UNRESERVED: &[u8] = b"-_.~";

/// What JavaScript's `encodeURIComponent` leaves alone besides letters and digits.
pub(crate) const URI_COMPONENT: &[u8] = b"-_.!~*'()";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_all_but_the_kept_bytes() {
        assert_eq!(percent_encode("nova-micro-v1:0 (x)/é", URI_COMPONENT), "nova-micro-v1%3A0%20(x)%2F%C3%A9");
        assert_eq!(percent_encode("a/b:c", b"-_.~/"), "a/b%3Ac");
    }
}
