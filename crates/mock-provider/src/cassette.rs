//! Recorded provider traffic ("cassettes").

use std::fmt;
use std::path::{Path, PathBuf};

use base64::Engine as _;
use bytes::Bytes;
use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::response::MockResponse;

/// A recording of one or more HTTP exchanges with a real provider.
///
/// On disk (`recordings/**.json` under [`fixtures_dir`](crate::fixtures_dir)):
///
/// ```json
/// {
///   "version": 1,
///   "metadata": { "name": "openai-chat/streams-text", "recordedAt": "…", "tags": ["provider:openai"] },
///   "interactions": [
///     {
///       "transport": "http",
///       "request":  { "method": "POST", "url": "https://…", "headers": { "content-type": "application/json" }, "body": "{…}" },
///       "response": { "status": 200, "headers": { "content-type": "text/event-stream" }, "body": "data: …", "bodyEncoding": "base64" }
///     }
///   ]
/// }
/// ```
///
/// `metadata` is optional (the name then defaults to the file stem);
/// `bodyEncoding` is optional and, when `"base64"`, the response body is
/// decoded to its original bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cassette {
    /// `metadata.name`, or the file stem when there is no metadata.
    pub name: String,
    /// `metadata.tags`, e.g. `["provider:openai", "protocol:openai-chat"]`.
    pub tags: Vec<String>,
    /// The recorded exchanges, in order.
    pub interactions: Vec<Interaction>,
}

/// One recorded request/response exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interaction {
    /// What the client sent.
    pub request: RecordedHttpRequest,
    /// What the provider answered.
    pub response: RecordedResponse,
}

/// A request as recorded against the real provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedHttpRequest {
    /// The method, e.g. `"POST"`.
    pub method: String,
    /// The full URL the request was sent to.
    pub url: String,
    /// The recorded request headers (recordings keep only a few, e.g.
    /// `content-type`; secrets are never recorded).
    pub headers: Vec<(String, String)>,
    /// The request body as text (usually JSON; compare with
    /// [`canonical_json`](crate::canonical_json)).
    pub body: String,
}

/// A response as recorded from the real provider.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedResponse {
    /// The HTTP status code.
    pub status: u16,
    /// The recorded response headers, in file order.
    pub headers: Vec<(String, String)>,
    /// The exact body bytes (already decoded from base64 if it was stored
    /// that way).
    pub body: Bytes,
}

/// Why a cassette could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum CassetteError {
    /// The file could not be read.
    #[error("cannot read cassette {}: {source}", path.display())]
    Io {
        /// The cassette path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not a well-formed cassette.
    #[error("cannot parse cassette {}: {source}", path.display())]
    Parse {
        /// The cassette path.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: serde_json::Error,
    },
    /// The cassette format version is not supported (only version 1 is).
    #[error("cassette {} has unsupported version {version} (expected 1)", path.display())]
    UnsupportedVersion {
        /// The cassette path.
        path: PathBuf,
        /// The version found in the file.
        version: u64,
    },
    /// An interaction uses a transport other than `"http"`.
    #[error(
        "cassette {} interaction {index} has unsupported transport {transport:?} (expected \"http\")",
        path.display()
    )]
    UnsupportedTransport {
        /// The cassette path.
        path: PathBuf,
        /// The index of the interaction.
        index: usize,
        /// The transport found in the file.
        transport: String,
    },
    /// A response body uses an unknown `bodyEncoding`.
    #[error(
        "cassette {} interaction {index} has unsupported bodyEncoding {encoding:?} (expected \"base64\")",
        path.display()
    )]
    UnsupportedBodyEncoding {
        /// The cassette path.
        path: PathBuf,
        /// The index of the interaction.
        index: usize,
        /// The encoding found in the file.
        encoding: String,
    },
    /// A base64 response body could not be decoded.
    #[error(
        "cassette {} interaction {index} has an invalid base64 response body: {source}",
        path.display()
    )]
    Base64 {
        /// The cassette path.
        path: PathBuf,
        /// The index of the interaction.
        index: usize,
        /// The underlying error.
        #[source]
        source: base64::DecodeError,
    },
}

impl Cassette {
    /// Reads and parses a cassette file.
    pub fn load(path: &Path) -> Result<Cassette, CassetteError> {
        let text =
            std::fs::read_to_string(path).map_err(|source| CassetteError::Io { path: path.to_owned(), source })?;
        let file: FileCassette =
            serde_json::from_str(&text).map_err(|source| CassetteError::Parse { path: path.to_owned(), source })?;
        if file.version != 1 {
            return Err(CassetteError::UnsupportedVersion { path: path.to_owned(), version: file.version });
        }
        let (name, tags) = match file.metadata {
            Some(FileMetadata { name: Some(name), tags }) => (name, tags),
            metadata => (
                path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default(),
                metadata.map(|m| m.tags).unwrap_or_default(),
            ),
        };
        let interactions = file
            .interactions
            .into_iter()
            .enumerate()
            .map(|(index, interaction)| interaction.into_interaction(path, index))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Cassette { name, tags, interactions })
    }

    /// One [`MockResponse`] per interaction, in order, each reproducing the
    /// recorded response (see [`MockResponse::from_recorded`]). Push them all
    /// with [`MockProvider::push_all`](crate::MockProvider::push_all).
    pub fn responses(&self) -> Vec<MockResponse> {
        self.interactions.iter().map(|interaction| MockResponse::from_recorded(&interaction.response)).collect()
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileCassette {
    version: u64,
    #[serde(default)]
    metadata: Option<FileMetadata>,
    #[serde(default)]
    interactions: Vec<FileInteraction>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileMetadata {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    tags: Vec<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileInteraction {
    #[serde(default)]
    transport: Option<String>,
    request: FileRequest,
    response: FileResponse,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileRequest {
    method: String,
    url: String,
    #[serde(default, deserialize_with = "ordered_headers")]
    headers: Vec<(String, String)>,
    #[serde(default)]
    body: serde_json::Value,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FileResponse {
    status: u16,
    #[serde(default, deserialize_with = "ordered_headers")]
    headers: Vec<(String, String)>,
    #[serde(default)]
    body: String,
    #[serde(default)]
    body_encoding: Option<String>,
}

impl FileInteraction {
    fn into_interaction(self, path: &Path, index: usize) -> Result<Interaction, CassetteError> {
        if let Some(transport) = self.transport
            && transport != "http"
        {
            return Err(CassetteError::UnsupportedTransport { path: path.to_owned(), index, transport });
        }
        let body = match self.response.body_encoding.as_deref() {
            None | Some("" | "utf8" | "utf-8" | "text") => Bytes::from(self.response.body),
            Some("base64") => base64::engine::general_purpose::STANDARD
                .decode(self.response.body.trim())
                .map(Bytes::from)
                .map_err(|source| CassetteError::Base64 { path: path.to_owned(), index, source })?,
            Some(other) => {
                return Err(CassetteError::UnsupportedBodyEncoding {
                    path: path.to_owned(),
                    index,
                    encoding: other.to_owned(),
                });
            }
        };
        let request_body = match self.request.body {
            serde_json::Value::Null => String::new(),
            serde_json::Value::String(body) => body,
            // Tolerate bodies stored as inline JSON.
            other => other.to_string(),
        };
        Ok(Interaction {
            request: RecordedHttpRequest {
                method: self.request.method,
                url: self.request.url,
                headers: self.request.headers,
                body: request_body,
            },
            response: RecordedResponse { status: self.response.status, headers: self.response.headers, body },
        })
    }
}

/// Deserializes a JSON object of headers into `(name, value)` pairs, keeping
/// file order. A value may also be an array of strings (one pair each).
fn ordered_headers<'de, D>(deserializer: D) -> Result<Vec<(String, String)>, D::Error>
where
    D: Deserializer<'de>,
{
    struct HeadersVisitor;

    impl<'de> Visitor<'de> for HeadersVisitor {
        type Value = Vec<(String, String)>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("an object mapping header names to strings")
        }

        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Vec::new())
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut headers = Vec::new();
            while let Some((name, value)) = map.next_entry::<String, HeaderValues>()? {
                for value in value.0 {
                    headers.push((name.clone(), value));
                }
            }
            Ok(headers)
        }
    }

    deserializer.deserialize_any(HeadersVisitor)
}

struct HeaderValues(Vec<String>);

impl<'de> Deserialize<'de> for HeaderValues {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ValuesVisitor;

        impl<'de> Visitor<'de> for ValuesVisitor {
            type Value = HeaderValues;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a header value string or an array of strings")
            }

            fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(HeaderValues(vec![v.to_owned()]))
            }

            fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
                Ok(HeaderValues(vec![v]))
            }

            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut values = Vec::new();
                while let Some(value) = seq.next_element::<String>()? {
                    values.push(value);
                }
                Ok(HeaderValues(values))
            }
        }

        deserializer.deserialize_any(ValuesVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_str(name: &str, text: &str) -> Result<Cassette, CassetteError> {
        let dir = std::env::temp_dir().join(format!("opencode-mock-provider-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(format!("{name}.json"));
        std::fs::write(&path, text).unwrap();
        let result = Cassette::load(&path);
        std::fs::remove_dir_all(&dir).unwrap();
        result
    }

    #[test]
    fn parses_without_metadata_and_decodes_base64() {
        let cassette = load_str(
            "no-metadata",
            r#"{"version":1,"interactions":[{"transport":"http",
                "request":{"method":"POST","url":"https://x/y","headers":{"b":"2","a":"1"},"body":"{}"},
                "response":{"status":200,"headers":{"content-type":"application/octet-stream","x-multi":["1","2"]},
                            "body":"AAEC/w==","bodyEncoding":"base64"}}]}"#,
        )
        .unwrap();
        assert_eq!(cassette.name, "no-metadata");
        assert!(cassette.tags.is_empty());
        let interaction = &cassette.interactions[0];
        assert_eq!(interaction.request.headers, vec![("b".into(), "2".into()), ("a".into(), "1".into())]);
        assert_eq!(interaction.request.body, "{}");
        assert_eq!(interaction.response.body.as_ref(), &[0, 1, 2, 255]);
        assert_eq!(
            interaction.response.headers,
            vec![
                ("content-type".into(), "application/octet-stream".into()),
                ("x-multi".into(), "1".into()),
                ("x-multi".into(), "2".into()),
            ]
        );
    }

    #[test]
    fn reports_clear_errors() {
        let err = load_str("bad-version", r#"{"version":2,"interactions":[]}"#).unwrap_err();
        assert!(err.to_string().contains("unsupported version 2"), "{err}");
        let err = load_str(
            "bad-encoding",
            r#"{"version":1,"interactions":[{"request":{"method":"GET","url":"u","headers":{},"body":""},
                "response":{"status":200,"headers":{},"body":"x","bodyEncoding":"gzip"}}]}"#,
        )
        .unwrap_err();
        assert!(err.to_string().contains("\"gzip\""), "{err}");
        let err = Cassette::load(Path::new("/nonexistent/cassette.json")).unwrap_err();
        assert!(err.to_string().starts_with("cannot read cassette /nonexistent/cassette.json"), "{err}");
    }
}
