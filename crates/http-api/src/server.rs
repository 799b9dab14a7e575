//! Binding, serving and stopping: [`serve`] binds first (so a taken port fails at once, naming the
//! holder when `/proc` tells), then serves in a background task until [`Server::shutdown`].

use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::response::IntoResponse;
use axum::serve::ListenerExt;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::bus::EventBus;
use crate::driver::DriverEvent;
use crate::error::ApiError;
use crate::error::ServeError;
use crate::guard;
use crate::instance::Instances;
use crate::middleware;
use crate::options::ServerOptions;
use crate::pty::PtyService;
use crate::routes::operations;
use crate::state::AppState;
use crate::state::ServerContext;
use crate::state::Shared;

/// A running server.
pub struct Server {
    addr: SocketAddr,
    stop: watch::Sender<bool>,
    task: JoinHandle<std::io::Result<()>>,
    warnings: Vec<String>,
}

impl Server {
    /// The address it listens on (the real port when 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://<addr>`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Things the operator should know (e.g. listening beyond loopback without a password).
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    /// Stops accepting connections, ends event streams, lets in-flight requests finish, then returns.
    pub async fn shutdown(self) -> std::io::Result<()> {
        // Receivers live as long as the server task; an error means it already ended.
        let _ended = self.stop.send(true);
        self.wait().await
    }

    /// Waits until the server stops (after [`Server::shutdown`] from a clone of the trigger, or a failure).
    pub async fn wait(self) -> std::io::Result<()> {
        self.task.await.map_err(std::io::Error::other)?
    }

    pub(crate) fn add_warnings(&mut self, warnings: Vec<String>) {
        for warning in &warnings {
            tracing::warn!("{warning}");
        }
        self.warnings.extend(warnings);
    }

    /// A handle that stops the server when `true` is sent (for signal handlers).
    pub fn stopper(&self) -> watch::Sender<bool> {
        self.stop.clone()
    }
}

/// Binds `options.hostname:options.port` and serves the API in the background.
pub async fn serve(options: ServerOptions, context: ServerContext) -> Result<Server, ServeError> {
    let addr = resolve(&options).await?;
    let listener = TcpListener::bind(addr).await.map_err(|source| match source.kind() {
        std::io::ErrorKind::AddrInUse => {
            ServeError::PortInUse { addr: addr.to_string(), holder: port_holder(addr.port()) }
        }
        _ => ServeError::Bind { addr, source },
    })?;
    let addr = listener.local_addr().map_err(|source| ServeError::Bind { addr, source })?;
    let mut warnings = Vec::new();
    if !addr.ip().is_loopback() && options.credentials.is_none() {
        warnings.push(format!(
            "the server listens on {addr}, beyond this machine, without a password: set OPENCODE_SERVER_PASSWORD"
        ));
    }
    for warning in &warnings {
        tracing::warn!("{warning}");
    }
    let (stop, shutdown) = watch::channel(false);
    let driver = Arc::clone(&context.driver);
    // Event streams end when `closing` turns true: after the driver stopped its drains, so that their
    // last events still reach subscribers.
    let (closing, closed) = watch::channel(false);
    let (app, ptys) = router(options, context, closed, format!("http://{addr}"));
    let mut signal = shutdown;
    // Responses and event-stream frames are small writes: without TCP_NODELAY, Nagle holds each one
    // back until the client's (delayed, up to 40 ms) ACK of the previous one arrives.
    let listener = listener.tap_io(|stream| {
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!(%err, "cannot set TCP_NODELAY on an accepted connection");
        }
    });
    let task = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let stopped = signal.wait_for(|stop| *stop).await.is_ok();
                if stopped {
                    driver.shutdown().await;
                }
                ptys.shutdown().await;
                let _ended = closing.send(true);
            })
            .await
    });
    Ok(Server { addr, stop, task, warnings })
}

/// The whole router with its middleware (public for in-process use, e.g. benchmarks with `oneshot`).
fn router(
    options: ServerOptions,
    context: ServerContext,
    shutdown: watch::Receiver<bool>,
    base_url: String,
) -> (Router, PtyService) {
    let bus = EventBus::new(Arc::clone(&context.store));
    if context.install_store_hook {
        context.store.add_event_hook(bus.store_hook());
    }
    if let Some(mut live) = context.driver.subscribe() {
        let bus = bus.clone();
        tokio::spawn(async move {
            loop {
                match live.recv().await {
                    Ok(event) => match &*event {
                        DriverEvent::Live(event) => bus.publish_live(event.clone()),
                        DriverEvent::Durable(event) => bus.publish_durable(event),
                    },
                    Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                        tracing::warn!(missed, "live runtime events were dropped");
                    }
                    Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                }
            }
        });
    }
    if let Some(mcp) = context.driver.mcp_events() {
        tokio::spawn(crate::routes::relay_mcp_events(mcp, bus.clone()));
    }
    let body_limit = options.body_limit;
    let pty = PtyService::new(bus.clone());
    let state = AppState {
        inner: Arc::new(Shared {
            instances: Instances::new(
                Arc::clone(&context.store),
                context.env.clone(),
                context.paths.clone(),
                context.models,
            ),
            store: context.store,
            driver: context.driver,
            bus,
            pty: pty.clone(),
            default_directory: context.directory,
            options,
            env: context.env,
            paths: context.paths,
            shutdown,
            base_url,
        }),
    };
    let mut router = Router::new();
    for op in operations() {
        router = router.route(op.path, op.handler);
    }
    let router = router
        .fallback(crate::web::fallback)
        .method_not_allowed_fallback(|| async { ApiError::bad("method not allowed on this route").into_response() })
        .layer(DefaultBodyLimit::max(body_limit))
        .layer(axum::middleware::from_fn_with_state(state.clone(), middleware::auth))
        .layer(axum::middleware::from_fn_with_state(state.clone(), middleware::cors))
        .layer(axum::middleware::from_fn_with_state(state.clone(), guard::guard))
        .with_state(state);
    (router, pty)
}

async fn resolve(options: &ServerOptions) -> Result<SocketAddr, ServeError> {
    let resolve_error = |detail: String| ServeError::Resolve { hostname: options.hostname.clone(), detail };
    let mut addrs = tokio::net::lookup_host((options.hostname.as_str(), options.port))
        .await
        .map_err(|err| resolve_error(err.to_string()))?;
    addrs.next().ok_or_else(|| resolve_error("no address".to_owned()))
}

/// `name (pid N)` of the process listening on `port`, read from `/proc` (Linux; `None` elsewhere or when
/// the process belongs to another user).
fn port_holder(port: u16) -> Option<String> {
    let inode = ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|table| listening_inode(table, port))?;
    let needle = format!("socket:[{inode}]");
    for proc_entry in std::fs::read_dir("/proc").ok()?.filter_map(Result::ok) {
        let pid = proc_entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(proc_entry.path().join("fd")) else { continue };
        if fds
            .filter_map(Result::ok)
            .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == needle))
        {
            let name = std::fs::read_to_string(proc_entry.path().join("comm")).unwrap_or_default();
            return Some(format!("{} (pid {pid})", name.trim()));
        }
    }
    None
}

fn listening_inode(table: &str, port: u16) -> Option<String> {
    let text = std::fs::read_to_string(table).ok()?;
    let wanted = format!("{port:04X}");
    text.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let local_port = fields.get(1)?.rsplit(':').next()?;
        (local_port == wanted && *fields.get(3)? == "0A").then(|| fields.get(9).map(|s| (*s).to_owned()))?
    })
}
