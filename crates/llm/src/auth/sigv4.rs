//! AWS Signature Version 4 (header signing), as Bedrock requires.
//!
//! The canonical URI of a non-S3 service is the request path URI-encoded once more, so a model id
//! sent as `nova-micro-v1%3A0` is signed as `nova-micro-v1%253A0`.

use std::time::SystemTime;

use hmac::Hmac;
use hmac::Mac;
use sha2::Digest;
use sha2::Sha256;

use super::Secret;
use crate::LlmError;
use crate::PreparedRequest;
use crate::percent::UNRESERVED;
use crate::percent::percent_encode;

/// AWS credentials and the signing scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigV4Credentials {
    pub access_key_id: Secret,
    pub secret_access_key: Secret,
    /// Temporary (STS) credentials carry a session token.
    pub session_token: Option<Secret>,
    pub region: String,
    /// The signing name, `bedrock` for Bedrock Runtime.
    pub service: String,
}

impl SigV4Credentials {
    /// Credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`.
    pub fn from_env(region: impl Into<String>, service: impl Into<String>) -> Self {
        Self {
            access_key_id: Secret::env("AWS_ACCESS_KEY_ID"),
            secret_access_key: Secret::env("AWS_SECRET_ACCESS_KEY"),
            session_token: Some(Secret::env("AWS_SESSION_TOKEN")),
            region: region.into(),
            service: service.into(),
        }
    }
}

/// Signs `request` in place (adds `x-amz-date`, `x-amz-security-token` when present, and
/// `authorization`); returns the secrets used.
pub fn sign(
    credentials: &SigV4Credentials,
    request: &mut PreparedRequest,
    now: SystemTime,
) -> Result<Vec<String>, LlmError> {
    let access_key = credentials.access_key_id.resolve()?;
    let secret_key = credentials.secret_access_key.resolve()?;
    let token = credentials.session_token.as_ref().and_then(Secret::lookup);

    let (date, amz_date) = amz_dates(now);
    request.set_header("x-amz-date", &amz_date);
    if let Some(token) = &token {
        request.set_header("x-amz-security-token", token);
    }
    let host = match (request.url.host_str(), request.url.port()) {
        (Some(host), Some(port)) => format!("{host}:{port}"),
        (Some(host), None) => host.to_owned(),
        (None, _) => {
            return Err(LlmError::configuration("cannot sign a request URL without a host"));
        }
    };

    let mut signed: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value.trim().to_owned()))
        .filter(|(name, _)| name != "authorization")
        .collect();
    signed.push(("host".to_owned(), host));
    signed.sort();
    let canonical_headers: String = signed.iter().map(|(name, value)| format!("{name}:{value}\n")).collect();
    let signed_headers = signed.iter().map(|(name, _)| name.as_str()).collect::<Vec<_>>().join(";");

    let canonical_request = format!(
        "{method}\n{uri}\n{query}\n{canonical_headers}\n{signed_headers}\n{payload}",
        method = request.method,
        uri = encode(request.url.path(), false),
        query = canonical_query(&request.url),
        payload = hex(&Sha256::digest(&request.body)),
    );
    let scope = format!("{date}/{}/{}/aws4_request", credentials.region, credentials.service);
    let string_to_sign =
        format!("AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}", hex(&Sha256::digest(canonical_request.as_bytes())));

    let mut key = hmac(format!("AWS4{secret_key}").as_bytes(), date.as_bytes());
    for part in [credentials.region.as_str(), credentials.service.as_str(), "aws4_request"] {
        key = hmac(&key, part.as_bytes());
    }
    let signature = hex(&hmac(&key, string_to_sign.as_bytes()));
    request.set_header(
        "authorization",
        &format!(
            "AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed_headers}, Signature={signature}"
        ),
    );
    let mut secrets = vec![access_key, secret_key, signature];
    secrets.extend(token);
    Ok(secrets)
}

fn canonical_query(url: &reqwest::Url) -> String {
    let mut pairs: Vec<(String, String)> =
        url.query_pairs().map(|(key, value)| (encode(&key, true), encode(&value, true))).collect();
    pairs.sort();
    pairs.iter().map(|(key, value)| format!("{key}={value}")).collect::<Vec<_>>().join("&")
}

/// RFC 3986 encoding of everything but unreserved characters (and `/` in paths).
fn encode(text: &str, encode_slash: bool) -> String {
    if encode_slash { percent_encode(text, UNRESERVED) } else { percent_encode(text, b"-_.~/") }
}

#[allow(clippy::expect_used, reason = "HMAC accepts keys of any length")]
fn hmac(key: &[u8], data: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(data);
    mac.finalize().into_bytes().to_vec()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// `(YYYYMMDD, YYYYMMDDTHHMMSSZ)` in UTC.
fn amz_dates(now: SystemTime) -> (String, String) {
    let secs = now.duration_since(SystemTime::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or_default();
    let (days, rem) = ((secs / 86_400) as i64, secs % 86_400);
    let (year, month, day) = civil_from_days(days);
    let date = format!("{year:04}{month:02}{day:02}");
    let time = format!("{:02}{:02}{:02}", rem / 3600, rem % 3600 / 60, rem % 60);
    (date.clone(), format!("{date}T{time}Z"))
}

/// Days since 1970-01-01 to a proleptic Gregorian date (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn credentials(service: &str) -> SigV4Credentials {
        SigV4Credentials {
            access_key_id: Secret::Value("AKIDEXAMPLE".to_owned()),
            secret_access_key: Secret::Value("wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY".to_owned()),
            session_token: None,
            region: "us-east-1".to_owned(),
            service: service.to_owned(),
        }
    }

    /// 2015-08-30T12:36:00Z, the date of AWS's published SigV4 test suite.
    fn suite_time() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_440_938_160)
    }

    #[test]
    fn matches_the_aws_get_vanilla_vector() {
        let mut request = PreparedRequest::new("GET", "https://example.amazonaws.com/".parse().unwrap(), Vec::new());
        sign(&credentials("service"), &mut request, suite_time()).unwrap();
        assert_eq!(
            request.header("authorization"),
            Some(
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
                 SignedHeaders=host;x-amz-date, \
                 Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
            )
        );
        assert_eq!(request.header("x-amz-date"), Some("20150830T123600Z"));
    }

    #[test]
    fn path_segments_are_encoded_twice() {
        assert_eq!(
            encode("/model/us.amazon.nova-micro-v1%3A0/converse-stream", false),
            "/model/us.amazon.nova-micro-v1%253A0/converse-stream"
        );
    }

    #[test]
    fn dates_are_utc_calendar_dates() {
        assert_eq!(amz_dates(SystemTime::UNIX_EPOCH + Duration::from_secs(951_782_400)).1, "20000229T000000Z");
    }
}
