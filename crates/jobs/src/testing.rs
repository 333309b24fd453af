//! Test support (feature `testing`): an SMTP server on loopback that keeps what it receives.
//!
//! It speaks enough SMTP for a real client (lettre, over TCP, with pooled
//! connections): greeting, EHLO/HELO, MAIL, RCPT, DATA with dot-unstuffing,
//! RSET, NOOP, QUIT. Tests read the messages and decode their text part.

use std::{
    sync::{Arc, Mutex},
    time::Duration,
};

use tokio::{
    io::{AsyncBufReadExt, AsyncWriteExt, BufReader},
    net::{TcpListener, TcpStream},
    task::JoinHandle,
};

/// One message as received.
#[derive(Debug, Clone)]
pub struct Received {
    pub from: String,
    pub to: Vec<String>,
    /// The raw message (headers and body) after dot-unstuffing.
    pub data: String,
}

impl Received {
    /// The value of the first header `name` (case-insensitive), unfolded.
    pub fn header(&self, name: &str) -> Option<String> {
        let head = self.data.split("\r\n\r\n").next().unwrap_or_default();
        let unfolded = head.replace("\r\n ", " ").replace("\r\n\t", " ");
        unfolded.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case(name).then(|| v.trim().to_owned())
        })
    }

    /// The decoded `text/plain` part (quoted-printable or 7bit).
    pub fn text(&self) -> String {
        self.part("text/plain")
    }

    /// The decoded `text/html` part.
    pub fn html(&self) -> String {
        self.part("text/html")
    }

    fn part(&self, content_type: &str) -> String {
        for chunk in self.data.split("\r\n--") {
            let Some((head, body)) = chunk.split_once("\r\n\r\n") else {
                continue;
            };
            if !head.to_ascii_lowercase().contains(content_type) {
                continue;
            }
            let body = body.split("\r\n--").next().unwrap_or(body);
            return if head.to_ascii_lowercase().contains("quoted-printable") {
                decode_qp(body)
            } else {
                body.to_owned()
            };
        }
        String::new()
    }
}

/// Decodes quoted-printable text (soft line breaks and `=XX` bytes).
pub fn decode_qp(s: &str) -> String {
    let s = s.replace("=\r\n", "");
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'='
            && let Some(hex) = s.get(i + 1..i + 3)
            && let Ok(b) = u8::from_str_radix(hex, 16)
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// An SMTP server on `127.0.0.1` for one test; stops when dropped.
pub struct SmtpSink {
    pub port: u16,
    received: Arc<Mutex<Vec<Received>>>,
    rejected: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl SmtpSink {
    /// Listens on a free port.
    pub async fn start() -> std::io::Result<Self> {
        Self::start_on(0).await
    }

    /// Listens on `port` (e.g. one a test first left unanswered).
    pub async fn start_on(port: u16) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        let received: Arc<Mutex<Vec<Received>>> = Arc::default();
        let rejected: Arc<Mutex<Vec<String>>> = Arc::default();
        let (store, refuse) = (received.clone(), rejected.clone());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (store, refuse) = (store.clone(), refuse.clone());
                tokio::spawn(async move {
                    let _ = session(stream, store, refuse).await;
                });
            }
        });
        Ok(Self {
            port,
            received,
            rejected,
            task,
        })
    }

    /// Refuses `address` for good (`550`), as a server does for an unknown mailbox.
    pub fn reject(&self, address: &str) {
        if let Ok(mut r) = self.rejected.lock() {
            r.push(address.to_owned());
        }
    }

    /// The `INVOICING_SMTP_URL` of this server.
    pub fn url(&self) -> String {
        format!("smtp://127.0.0.1:{}", self.port)
    }

    /// Everything received so far.
    pub fn messages(&self) -> Vec<Received> {
        self.received.lock().map(|m| m.clone()).unwrap_or_default()
    }

    /// Waits until at least `n` messages arrived (or `timeout` passed) and returns them all.
    pub async fn wait_for(&self, n: usize, timeout: Duration) -> Vec<Received> {
        let until = tokio::time::Instant::now() + timeout;
        loop {
            let got = self.messages();
            if got.len() >= n || tokio::time::Instant::now() >= until {
                return got;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

impl Drop for SmtpSink {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A port on loopback where nothing listens (for "the mail server is down").
pub fn unused_port() -> std::io::Result<u16> {
    let l = std::net::TcpListener::bind("127.0.0.1:0")?;
    l.local_addr().map(|a| a.port())
}

async fn session(
    stream: TcpStream,
    store: Arc<Mutex<Vec<Received>>>,
    rejected: Arc<Mutex<Vec<String>>>,
) -> std::io::Result<()> {
    let (read, mut write) = stream.into_split();
    let mut lines = BufReader::new(read);
    write.write_all(b"220 sink ESMTP ready\r\n").await?;
    let (mut from, mut to) = (String::new(), Vec::new());
    loop {
        let mut line = String::new();
        let n = tokio::time::timeout(Duration::from_secs(60), lines.read_line(&mut line))
            .await
            .map_err(|_| std::io::Error::other("idle"))??;
        if n == 0 {
            return Ok(());
        }
        let cmd = line.trim_end().to_owned();
        let upper = cmd.to_ascii_uppercase();
        let reply: &[u8] = if upper.starts_with("EHLO") || upper.starts_with("HELO") {
            b"250-sink\r\n250 8BITMIME\r\n"
        } else if upper.starts_with("MAIL FROM:") {
            from = address(&cmd["MAIL FROM:".len()..]);
            to.clear();
            b"250 OK\r\n"
        } else if upper.starts_with("RCPT TO:") {
            let rcpt = address(&cmd["RCPT TO:".len()..]);
            if rejected.lock().is_ok_and(|r| r.contains(&rcpt)) {
                b"550 5.1.1 no such mailbox\r\n"
            } else {
                to.push(rcpt);
                b"250 OK\r\n"
            }
        } else if upper == "DATA" {
            write.write_all(b"354 end with <CRLF>.<CRLF>\r\n").await?;
            let mut data = String::new();
            loop {
                let mut l = String::new();
                if lines.read_line(&mut l).await? == 0 {
                    return Ok(());
                }
                if l == ".\r\n" || l == ".\n" {
                    break;
                }
                data.push_str(l.strip_prefix('.').unwrap_or(&l));
            }
            if let Ok(mut all) = store.lock() {
                all.push(Received {
                    from: from.clone(),
                    to: std::mem::take(&mut to),
                    data,
                });
            }
            b"250 OK queued\r\n"
        } else if upper == "QUIT" {
            write.write_all(b"221 bye\r\n").await?;
            return Ok(());
        } else if upper == "RSET" || upper == "NOOP" {
            b"250 OK\r\n"
        } else {
            b"502 command not implemented\r\n"
        };
        write.write_all(reply).await?;
    }
}

fn address(arg: &str) -> String {
    let a = arg.trim();
    let a = a.split_whitespace().next().unwrap_or(a);
    a.trim_start_matches('<').trim_end_matches('>').to_owned()
}
