//! Live progress of a running tool call. What a tool reports while it runs (a shell's output so far,
//! a title) is written onto its running part, so every client shows long work as it happens. Writes
//! are coalesced to one per [`PROGRESS_INTERVAL`]: a command printing thousands of lines costs a few
//! store writes, not thousands. The settlement waits for the last progress write, so a late update
//! can never land after the call's final state.

use std::sync::Arc;
use std::time::Duration;

use opencode_session_store::Part;
use opencode_session_store::PartKind;
use opencode_session_store::Store;
use opencode_session_store::ToolState;
use opencode_tool_registry::ProgressSink;
use serde_json::Map;
use serde_json::Value;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// At most one progress write per call in this interval.
pub(crate) const PROGRESS_INTERVAL: Duration = Duration::from_millis(150);

type Report = Option<(Option<String>, Map<String, Value>)>;

/// The sink a tool reports to, and the task that writes its reports.
pub(crate) struct LiveProgress {
    sink: Arc<WatchSink>,
    stop: CancellationToken,
    writer: JoinHandle<()>,
}

struct WatchSink(watch::Sender<Report>);

impl ProgressSink for WatchSink {
    fn progress(&self, _call_id: &str, title: Option<&str>, metadata: &Map<String, Value>) {
        self.0.send_replace(Some((title.map(str::to_owned), metadata.clone())));
    }
}

impl LiveProgress {
    /// Starts writing reports onto `running` (a part whose call is running).
    pub(crate) fn start(store: Arc<Store>, running: Part) -> Self {
        let (sender, mut reports) = watch::channel::<Report>(None);
        let stop = CancellationToken::new();
        let stopped = stop.clone();
        let writer = tokio::spawn(async move {
            loop {
                tokio::select! {
                    biased;
                    () = stopped.cancelled() => break,
                    changed = reports.changed() => if changed.is_err() { break },
                }
                let Some((title, metadata)) = reports.borrow_and_update().clone() else { continue };
                let part = with_progress(&running, title, metadata);
                let store = Arc::clone(&store);
                // Awaited whole, never cancelled half-way: `finish` relies on it.
                let written = tokio::task::spawn_blocking(move || store.write(|tx| tx.upsert_part(&part))).await;
                if let Ok(Err(err)) = written {
                    tracing::debug!(%err, "cannot write a tool call's progress");
                }
                tokio::select! {
                    () = stopped.cancelled() => break,
                    () = tokio::time::sleep(PROGRESS_INTERVAL) => {}
                }
            }
        });
        Self { sink: Arc::new(WatchSink(sender)), stop, writer }
    }

    pub(crate) fn sink(&self) -> Arc<dyn ProgressSink> {
        Arc::clone(&self.sink) as Arc<dyn ProgressSink>
    }

    /// Stops taking reports and waits for the write in flight. Reports still pending are dropped:
    /// the settlement that follows carries the final state.
    pub(crate) async fn finish(self) {
        self.stop.cancel();
        if let Err(err) = self.writer.await {
            tracing::debug!(%err, "the progress writer of a tool call failed");
        }
    }
}

fn with_progress(running: &Part, title: Option<String>, metadata: Map<String, Value>) -> Part {
    let mut part = running.clone();
    if let PartKind::Tool { state: ToolState::Running { title: shown, metadata: reported, .. }, .. } = &mut part.kind {
        *shown = title.or(shown.take());
        *reported = Some(Value::Object(metadata));
    }
    part
}
