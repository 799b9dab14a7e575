//! A typed client of OpenCode's HTTP API and its event stream, for Rust programs that drive an
//! OpenCode-compatible server: this project's (`opencode serve`, or one started in-process) or
//! OpenCode's own. It depends on no server or runtime code; its types are the API's JSON, tolerant
//! of fields it does not know, so a newer server keeps working.
//!
//! ```no_run
//! # async fn demo() -> Result<(), opencode_client::ClientError> {
//! use opencode_client::{Client, StreamItem};
//!
//! let client = Client::new("http://127.0.0.1:4096")?.with_directory("/work/project");
//! let mut events = client.events();
//! let session = client.create_session(None).await?;
//! client.prompt_async(&session.id, "List the files here").await?;
//! while let Some(item) = events.next().await {
//!     match item {
//!         StreamItem::Event { event, .. } if event.is_idle(&session.id) => break,
//!         StreamItem::Event { event, .. } => println!("{event:?}"),
//!         // The stream reconnects by itself; refetch what may have been missed.
//!         StreamItem::Reconnected => { let _messages = client.messages(&session.id).await?; }
//!         StreamItem::Disconnected(reason) => eprintln!("reconnecting: {reason}"),
//!     }
//! }
//! # Ok(()) }
//! ```

mod client;
mod error;
mod events;
mod sse;
mod types;

pub use client::Client;
pub use error::ClientError;
pub use events::Event;
pub use events::EventStream;
pub use events::StreamItem;
pub use events::apply;
pub use types::*;
