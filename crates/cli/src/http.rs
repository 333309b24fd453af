//! The HTTP server of `serve` and of the MCP server: hyper with timeouts and a connection cap.
//!
//! `axum::serve` has no timeouts: a client that opens connections and never finishes their
//! headers (slowloris) held each one forever, and with them the server's file descriptors
//! and memory. Here every connection is bounded:
//!
//! - **headers**: a connection must send a request's complete headers within
//!   [`HttpLimits::header_timeout`] of being ready for one (accepted, or its previous answer
//!   sent), else it is closed (hyper's `header_read_timeout`). An idle keep-alive connection
//!   is closed after that long too;
//! - **idle**: while the server waits on the client (a request body being sent, an answer
//!   being read), no byte moving in either direction for [`HttpLimits::idle_timeout`]
//!   closes the connection ([`IdleIo`]). The server does not wait on the client while a
//!   handler runs (half-close is allowed), so a long request is never cut for that;
//! - **count**: at most [`HttpLimits::max_connections`] connections are served at once;
//!   past it a new connection is answered `503` with `Retry-After` and closed at once,
//!   instead of waiting unseen in the kernel's queue;
//! - **unread bodies**: an answer given before its request's body was read to the end
//!   (a refusal) says `Connection: close`, since hyper closes that connection after it
//!   ([`close_if_unread`]).
//!
//! On shutdown the listener stops accepting, each connection finishes its request under
//! way (hyper's graceful shutdown) and closes, and [`serve`] returns once all have.

use std::{
    pin::Pin,
    sync::{
        Arc,
        atomic::{AtomicBool, Ordering},
    },
    task::{Context, Poll},
    time::Duration,
};

use axum::{Router, extract::ConnectInfo};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::{
    io::{AsyncRead, AsyncWrite, AsyncWriteExt as _, ReadBuf},
    net::{TcpListener, TcpStream},
    sync::{Semaphore, watch},
    time::{Instant, Sleep},
};
use tower::ServiceExt as _;

/// Bounds on the connections of one listener.
#[derive(Debug, Clone, Copy)]
pub struct HttpLimits {
    /// Longest a connection may take to send a request's headers, from the moment it is
    /// ready for one (`INVOICING_HTTP_HEADER_TIMEOUT_SECS`, default 10 s).
    pub header_timeout: Duration,
    /// Longest the server waits for a client that sends or reads nothing
    /// (`INVOICING_HTTP_IDLE_TIMEOUT_SECS`, default 60 s).
    pub idle_timeout: Duration,
    /// Connections served at once (`INVOICING_HTTP_MAX_CONNECTIONS`, default 1024).
    pub max_connections: usize,
}

impl Default for HttpLimits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(60),
            max_connections: 1024,
        }
    }
}

/// The body of the answer to a connection past the cap.
const TOO_MANY_CONNECTIONS: &str =
    "The server has too many connections open; try again in a moment.\n";

/// Serves `app` on `listener` until `shutdown` resolves, then lets the connections finish.
/// Handlers can read the client's address (`ConnectInfo<SocketAddr>`).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: HttpLimits,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        // The server reads nothing from the client while a handler runs: a pending read is
        // then always the server waiting for the client, which the idle timeout bounds.
        .half_close(true);
    let builder = Arc::new(builder);
    tokio::pin!(shutdown);
    loop {
        let (stream, addr) = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(e) => {
                    // Out of file descriptors, say: wait a little rather than spin.
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(
                max = limits.max_connections,
                client = %addr,
                "too many connections: answering 503"
            );
            tokio::spawn(refuse(stream));
            continue;
        };
        let app = app.clone();
        let builder = builder.clone();
        let mut stop = stop_rx.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service =
                tower::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(ConnectInfo(addr));
                    let (parts, incoming) = req.into_parts();
                    let (body, read) = Tracked::new(incoming);
                    let req = hyper::Request::from_parts(parts, axum::body::Body::new(body));
                    let answer = app.clone().oneshot(req);
                    async move {
                        let mut response = answer.await?;
                        close_if_unread(&read, &mut response);
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
            let io = TokioIo::new(IdleIo::new(stream, limits.idle_timeout));
            let conn = builder
                .serve_connection(io, hyper_util::service::TowerToHyperService::new(service))
                .with_upgrades();
            tokio::pin!(conn);
            let stopping = async move {
                // The guard `wait_for` returns is dropped at once: it must not be held.
                let _ = stop.wait_for(|s| *s).await;
            };
            let ended = tokio::select! {
                ended = conn.as_mut() => ended,
                () = stopping => {
                    conn.as_mut().graceful_shutdown();
                    conn.as_mut().await
                }
            };
            if let Err(e) = ended {
                tracing::debug!(error = %e, client = %addr, "connection ended with an error");
            }
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    // Every connection holds a slot until it ends.
    let all = u32::try_from(limits.max_connections.max(1)).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
    Ok(())
}

/// A request body that records whether it was read to its end (or had none).
struct Tracked {
    inner: hyper::body::Incoming,
    read: Arc<AtomicBool>,
}

impl Tracked {
    fn new(inner: hyper::body::Incoming) -> (Self, Arc<AtomicBool>) {
        let read = Arc::new(AtomicBool::new(hyper::body::Body::is_end_stream(&inner)));
        (
            Self {
                inner,
                read: read.clone(),
            },
            read,
        )
    }
}

impl hyper::body::Body for Tracked {
    type Data = hyper::body::Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if matches!(polled, Poll::Ready(None)) || self.inner.is_end_stream() {
            self.read.store(true, Ordering::Release);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// Says `Connection: close` on an answer given before its request's body was read to the
/// end (a refusal: no token, too large, too many requests). hyper cannot keep such a
/// connection (the rest of the body would be read as the next request) and closes it after
/// the answer; unannounced, a client that sends its next request at once on the same
/// connection can lose it ("server disconnected without sending a response"), which the
/// official MCP client did when its OAuth discovery followed a 401. Announced, the client
/// opens a new connection.
fn close_if_unread(read: &AtomicBool, response: &mut axum::response::Response) {
    if !read.load(Ordering::Acquire) {
        response.headers_mut().insert(
            axum::http::header::CONNECTION,
            axum::http::HeaderValue::from_static("close"),
        );
    }
}

/// Answers a connection past the cap with a 503 and closes it, without reading its request.
async fn refuse(mut stream: TcpStream) {
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\n\
         retry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{TOO_MANY_CONNECTIONS}",
        TOO_MANY_CONNECTIONS.len()
    );
    let written = tokio::time::timeout(Duration::from_secs(5), async {
        stream.write_all(answer.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
    if matches!(written, Ok(Ok(()))) {
        // Read what the client sent, for a moment, before closing: closing with unread bytes
        // resets the connection, which can lose the answer on the client's side.
        let _ = tokio::time::timeout(Duration::from_secs(1), async {
            let mut sink = [0u8; 4096];
            while let Ok(n) = tokio::io::AsyncReadExt::read(&mut stream, &mut sink).await {
                if n == 0 {
                    break;
                }
            }
        })
        .await;
    }
}

/// A connection that fails with `TimedOut` once it waited `idle` for the client without a
/// byte read or written.
pub struct IdleIo<T> {
    inner: T,
    idle: Duration,
    /// Armed while a read or a write waits; reset by any progress.
    timer: Pin<Box<Sleep>>,
    armed: bool,
}

impl<T> IdleIo<T> {
    pub fn new(inner: T, idle: Duration) -> Self {
        Self {
            inner,
            idle,
            timer: Box::pin(tokio::time::sleep(idle)),
            armed: false,
        }
    }

    fn progressed(&mut self) {
        self.armed = false;
    }

    /// Called when the inner read or write is pending: starts the wait if it is not running,
    /// and fails once it ran out.
    fn waiting(&mut self, cx: &mut Context<'_>) -> Poll<std::io::Error> {
        if !self.armed {
            self.armed = true;
            let deadline = Instant::now() + self.idle;
            self.timer.as_mut().reset(deadline);
        }
        match self.timer.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client sent and read nothing for the idle timeout",
            )),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for IdleIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_read(cx, buf) {
            Poll::Ready(result) => {
                this.progressed();
                Poll::Ready(result)
            }
            Poll::Pending => this.waiting(cx).map(Err),
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for IdleIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write(cx, buf) {
            Poll::Ready(result) => {
                this.progressed();
                Poll::Ready(result)
            }
            Poll::Pending => this.waiting(cx).map(Err),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_flush(cx) {
            Poll::Ready(result) => Poll::Ready(result),
            Poll::Pending => this.waiting(cx).map(Err),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_write_vectored(cx, bufs) {
            Poll::Ready(result) => {
                this.progressed();
                Poll::Ready(result)
            }
            Poll::Pending => this.waiting(cx).map(Err),
        }
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
