//! The mailer: SMTP when `INVOICING_SMTP_URL` is set, `.eml` files otherwise.
//!
//! The URL says how to connect (lettre's connection URLs):
//! `smtp://host:port` plain, `smtp://host:port?tls=required` STARTTLS,
//! `smtp://host:port?tls=opportunistic` STARTTLS when offered,
//! `smtps://host:port` TLS from the first byte; `user:password@` before the
//! host authenticates. Without a URL each message is written to
//! `<data dir>/outbox/<uuid>.eml`, so a fresh install "sends" mail a person
//! can open.

use std::{path::PathBuf, time::Duration};

use crate::JobError;
use lettre::{
    AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor,
    message::{Attachment, Body, Mailbox, MultiPart, SinglePart, header},
};

/// Where mail goes and who sends it.
#[derive(Clone)]
pub struct MailConfig {
    /// SMTP connection URL; `None` writes `.eml` files to `outbox_dir`.
    pub smtp_url: Option<String>,
    /// Directory for `.eml` files when there is no SMTP URL.
    pub outbox_dir: PathBuf,
    /// The `From` of every message, e.g. `Invoicing <no-reply@example.com>`.
    pub from: String,
}

impl std::fmt::Debug for MailConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MailConfig")
            .field(
                "smtp_url",
                &self.smtp_url.as_deref().map(store::db::redact_url),
            )
            .field("outbox_dir", &self.outbox_dir)
            .field("from", &self.from)
            .finish()
    }
}

/// A message ready to send. Its body may hold a secret, so `Debug` shows only the envelope.
#[derive(Clone)]
pub struct OutgoingMail {
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
    /// Stable id (the job's), so a resend after a crash is recognisable as the same message.
    pub message_id: Option<String>,
    /// Copies (`Cc`).
    pub cc: Vec<String>,
    /// Files attached after the text and HTML parts.
    pub attachments: Vec<MailAttachment>,
}

/// A file attached to a message.
#[derive(Clone)]
pub struct MailAttachment {
    pub name: String,
    /// A MIME type such as `application/pdf`.
    pub content_type: String,
    pub bytes: Vec<u8>,
}

impl std::fmt::Debug for OutgoingMail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OutgoingMail")
            .field("to", &self.to)
            .field("subject", &self.subject)
            .finish_non_exhaustive()
    }
}

enum Transport {
    Smtp(AsyncSmtpTransport<Tokio1Executor>),
    File(PathBuf),
}

/// Sends mail through the configured transport.
pub struct Mailer {
    transport: Transport,
    from: Mailbox,
    /// Domain of the `From` address, for `Message-ID`s.
    domain: String,
}

impl Mailer {
    /// Checks the settings and prepares the transport (no connection is made yet).
    pub fn new(config: &MailConfig) -> anyhow::Result<Self> {
        let from: Mailbox = config.from.parse().map_err(|e| {
            anyhow::anyhow!(
                "INVOICING_MAIL_FROM `{}` is not a mail address: {e}",
                config.from
            )
        })?;
        let domain = from.email.domain().to_owned();
        let transport = match config.smtp_url.as_deref().filter(|u| !u.is_empty()) {
            Some(url) => Transport::Smtp(
                AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
                    .map_err(|e| {
                        anyhow::anyhow!(
                            "INVOICING_SMTP_URL `{}` is not usable: {e}",
                            store::db::redact_url(url)
                        )
                    })?
                    .timeout(Some(Duration::from_secs(30)))
                    .build(),
            ),
            None => Transport::File(config.outbox_dir.clone()),
        };
        Ok(Self {
            transport,
            from,
            domain,
        })
    }

    /// Where mail goes, for the startup log (credentials hidden).
    pub fn describe(&self) -> String {
        match &self.transport {
            Transport::Smtp(_) => "SMTP (INVOICING_SMTP_URL)".to_owned(),
            Transport::File(dir) => format!(".eml files in {}", dir.display()),
        }
    }

    /// Sends one message. A refusal that will never change (an address the
    /// server rejects with a 5xx, or no address at all) is a permanent error;
    /// anything else (server down, timeout, a 4xx) is worth retrying.
    pub async fn send(&self, mail: &OutgoingMail) -> Result<(), JobError> {
        let to: Mailbox = mail.to.parse().map_err(|e| {
            JobError::Permanent(format!("`{}` is not a mail address: {e}", mail.to))
        })?;
        let mut builder = Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(&mail.subject);
        for cc in &mail.cc {
            let cc: Mailbox = cc
                .parse()
                .map_err(|e| JobError::Permanent(format!("`{cc}` is not a mail address: {e}")))?;
            builder = builder.cc(cc);
        }
        if let Some(id) = &mail.message_id {
            builder = builder.message_id(Some(format!("<{id}@{}>", self.domain)));
        }
        let part = |ct: header::ContentType, body: &str| {
            SinglePart::builder().header(ct).body(readable_body(body))
        };
        let body = MultiPart::alternative()
            .singlepart(part(header::ContentType::TEXT_PLAIN, &mail.text))
            .singlepart(part(header::ContentType::TEXT_HTML, &mail.html));
        let body = if mail.attachments.is_empty() {
            body
        } else {
            let mut mixed = MultiPart::mixed().multipart(body);
            for a in &mail.attachments {
                let ct = header::ContentType::parse(&a.content_type).map_err(|e| {
                    JobError::Permanent(format!("`{}` is not a MIME type: {e}", a.content_type))
                })?;
                mixed = mixed.singlepart(Attachment::new(a.name.clone()).body(a.bytes.clone(), ct));
            }
            mixed
        };
        let message = builder
            .multipart(body)
            .map_err(|e| JobError::Permanent(format!("the message cannot be built: {e}")))?;
        match &self.transport {
            Transport::Smtp(smtp) => smtp.send(message).await.map(drop).map_err(|e| {
                if e.is_permanent() {
                    JobError::Permanent(format!("the mail server refused the message: {e}"))
                } else {
                    JobError::Transient(e.into())
                }
            }),
            Transport::File(dir) => Ok(write_eml(dir, &message.formatted()).await?),
        }
    }
}

/// A body as it is written: `7bit` or `8bit` (the text itself, whatever the language) when
/// every line fits the 998 bytes a mail line may have, so a link in an `.eml` file of the
/// outbox, or in the raw message, stays on one line and can be pasted; quoted-printable
/// (which breaks lines at 76 characters) only otherwise. `8bit` needs an SMTP server with
/// 8BITMIME, which every current one has.
fn readable_body(text: &str) -> Body {
    // Lines end in CRLF on the wire; a lone CR or a NUL has no place in a text part.
    let crlf = text.replace("\r\n", "\n").replace('\n', "\r\n");
    let fits = !crlf.contains('\0')
        && crlf
            .split("\r\n")
            .all(|line| line.len() <= MAX_LINE && !line.contains('\r'));
    if !fits {
        return Body::new_with_encoding(
            text.to_owned(),
            header::ContentTransferEncoding::QuotedPrintable,
        )
        .unwrap_or_else(|_| Body::new(text.to_owned()));
    }
    let encoding = if crlf.is_ascii() {
        header::ContentTransferEncoding::SevenBit
    } else {
        header::ContentTransferEncoding::EightBit
    };
    // Checked above: CRLF line ends, no line over 998 bytes, no NUL; what 7bit and 8bit allow.
    Body::dangerous_pre_encoded(crlf.into_bytes(), encoding)
}

/// The longest line a message may carry (RFC 5322), without its CRLF.
const MAX_LINE: usize = 998;

/// Writes one message as `<dir>/<uuid>.eml`, whole or not at all: the bytes go to a hidden
/// temporary file, reach the disk, and only then take their name, so whoever picks mail
/// up from the outbox never reads half a message (and a crash leaves no `.eml` stub).
async fn write_eml(dir: &std::path::Path, bytes: &[u8]) -> anyhow::Result<()> {
    use tokio::io::AsyncWriteExt as _;
    let context = |what: &str, e: std::io::Error| {
        anyhow::anyhow!("cannot {what} in the outbox {}: {e}", dir.display())
    };
    // Owner-only: a mail may carry a generated password in clear text.
    let owned = dir.to_owned();
    tokio::task::spawn_blocking(move || store::private::create_dir_all(&owned))
        .await
        .map_err(|e| anyhow::anyhow!("creating the outbox stopped: {e}"))?
        .map_err(|e| context("create the directory", e))?;
    let name = uuid::Uuid::new_v4();
    let temporary = dir.join(format!(".{name}.eml.tmp"));
    let mut file = tokio::fs::OpenOptions::from(store::private::file_options())
        .write(true)
        .create_new(true)
        .open(&temporary)
        .await
        .map_err(|e| context("create a message", e))?;
    let written = async {
        file.write_all(bytes).await?;
        file.sync_all().await?;
        tokio::fs::rename(&temporary, dir.join(format!("{name}.eml"))).await
    }
    .await;
    if let Err(e) = written {
        let _ = tokio::fs::remove_file(&temporary).await;
        return Err(context("write a message", e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #[tokio::test]
    async fn outbox_mails_keep_links_on_one_line_in_any_language() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = dir.path().join("outbox");
        let mailer = super::Mailer::new(&super::MailConfig {
            smtp_url: None,
            outbox_dir: outbox.clone(),
            from: "Invoicing <no-reply@example.com>".into(),
        })
        .unwrap();
        let link = format!(
            "http://127.0.0.1:8080/v1/reports/{}/pdf?expires=1767225600&signature={}",
            uuid::Uuid::new_v4(),
            "a1b2c3d4".repeat(8)
        );
        for (text, encoding) in [
            (format!("Your report is ready: {link}\n"), "7bit"),
            (format!("Su informe está listo: {link}\n"), "8bit"),
        ] {
            let _ = std::fs::remove_dir_all(&outbox);
            mailer
                .send(&super::OutgoingMail {
                    to: "owner@example.com".into(),
                    subject: "Informe".into(),
                    html: format!("<p><a href=\"{link}\">{text}</a></p>"),
                    text: text.clone(),
                    message_id: None,
                    cc: Vec::new(),
                    attachments: Vec::new(),
                })
                .await
                .unwrap();
            let file = std::fs::read_dir(&outbox).unwrap().next().unwrap().unwrap();
            let raw = std::fs::read_to_string(file.path()).unwrap();
            assert!(
                raw.contains(&format!("Content-Transfer-Encoding: {encoding}")),
                "{raw}"
            );
            assert!(
                raw.lines().any(|l| l.trim_end() == text.trim_end()),
                "the text and its link on one line: {raw}"
            );
            assert!(
                raw.contains(&format!("href=\"{link}\"")),
                "the HTML link whole: {raw}"
            );
        }
    }

    #[tokio::test]
    async fn an_outbox_message_appears_whole_under_its_final_name_only() {
        let dir = tempfile::tempdir().unwrap();
        let outbox = dir.path().join("outbox");
        super::write_eml(&outbox, b"To: a@example.com\r\n\r\nHello")
            .await
            .unwrap();
        let names: Vec<String> = std::fs::read_dir(&outbox)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names.len(), 1, "{names:?}");
        assert!(
            names[0].ends_with(".eml") && !names[0].starts_with('.'),
            "{names:?}"
        );
        let text = std::fs::read_to_string(outbox.join(&names[0])).unwrap();
        assert_eq!(text, "To: a@example.com\r\n\r\nHello");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let mode =
                |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
            assert_eq!(mode(&outbox), 0o700);
            assert_eq!(mode(&outbox.join(&names[0])), 0o600);
        }
    }
}
