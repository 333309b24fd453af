//! Mail templates in English and Spanish, each as plain text and HTML.
//!
//! Templates live in `crates/jobs/templates/<name>.<lang>.{txt,html}` and are
//! compiled into the binary. The first line of the text file is
//! `Subject: ...`. `{{var}}` is replaced by a variable (HTML-escaped in the
//! HTML part); a variable the template uses but the caller did not give is an
//! error, never an empty hole in a sent mail.

use std::collections::BTreeMap;

/// A language we write mail in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    En,
    Es,
}

impl Lang {
    /// The mail language for a language tag (`es`, `es_ES`, `es-MX`: Spanish; anything else: English).
    pub fn from_tag(tag: &str) -> Self {
        let primary = tag
            .split(['_', '-'])
            .next()
            .unwrap_or_default()
            .to_ascii_lowercase();
        if primary == "es" { Self::Es } else { Self::En }
    }
}

/// Every template: name, language, text source, HTML source.
const TEMPLATES: &[(&str, Lang, &str, &str)] = &[
    (
        "member_password",
        Lang::En,
        include_str!("../templates/member_password.en.txt"),
        include_str!("../templates/member_password.en.html"),
    ),
    (
        "member_password",
        Lang::Es,
        include_str!("../templates/member_password.es.txt"),
        include_str!("../templates/member_password.es.html"),
    ),
    (
        "member_added",
        Lang::En,
        include_str!("../templates/member_added.en.txt"),
        include_str!("../templates/member_added.en.html"),
    ),
    (
        "member_added",
        Lang::Es,
        include_str!("../templates/member_added.es.txt"),
        include_str!("../templates/member_added.es.html"),
    ),
    (
        "report_ready",
        Lang::En,
        include_str!("../templates/report_ready.en.txt"),
        include_str!("../templates/report_ready.en.html"),
    ),
    (
        "report_ready",
        Lang::Es,
        include_str!("../templates/report_ready.es.txt"),
        include_str!("../templates/report_ready.es.html"),
    ),
    (
        "invoice_send",
        Lang::En,
        include_str!("../templates/invoice_send.en.txt"),
        include_str!("../templates/invoice_send.en.html"),
    ),
    (
        "invoice_send",
        Lang::Es,
        include_str!("../templates/invoice_send.es.txt"),
        include_str!("../templates/invoice_send.es.html"),
    ),
    (
        "invoice_reminder",
        Lang::En,
        include_str!("../templates/invoice_reminder.en.txt"),
        include_str!("../templates/invoice_reminder.en.html"),
    ),
    (
        "invoice_reminder",
        Lang::Es,
        include_str!("../templates/invoice_reminder.es.txt"),
        include_str!("../templates/invoice_reminder.es.html"),
    ),
    (
        "webhook_disabled",
        Lang::En,
        include_str!("../templates/webhook_disabled.en.txt"),
        include_str!("../templates/webhook_disabled.en.html"),
    ),
    (
        "webhook_disabled",
        Lang::Es,
        include_str!("../templates/webhook_disabled.es.txt"),
        include_str!("../templates/webhook_disabled.es.html"),
    ),
];

/// A rendered message.
#[derive(Clone)]
pub struct Rendered {
    pub subject: String,
    pub text: String,
    pub html: String,
}

/// Why a template could not be rendered (a bug, not a passing failure).
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    #[error("there is no mail template `{0}`")]
    Unknown(String),
    #[error("mail template `{template}` needs the variable `{var}`")]
    MissingVar { template: String, var: String },
    #[error("mail template `{0}` has no `Subject:` line")]
    NoSubject(String),
}

/// Renders template `name` in `lang` with `vars`.
pub fn render(
    name: &str,
    lang: Lang,
    vars: &BTreeMap<String, String>,
) -> Result<Rendered, TemplateError> {
    let (_, _, text, html) = TEMPLATES
        .iter()
        .find(|(n, l, _, _)| *n == name && *l == lang)
        .ok_or_else(|| TemplateError::Unknown(name.to_owned()))?;
    let (first, body) = text.split_once('\n').unwrap_or((text, ""));
    let subject = first
        .strip_prefix("Subject: ")
        .ok_or_else(|| TemplateError::NoSubject(name.to_owned()))?;
    Ok(Rendered {
        subject: fill(name, subject, vars, false)?,
        text: fill(name, body.trim_start_matches('\n'), vars, false)?,
        html: fill(name, html, vars, true)?,
    })
}

/// The names of all templates (each exists in every language).
pub fn names() -> Vec<&'static str> {
    let mut names: Vec<&str> = TEMPLATES.iter().map(|(n, ..)| *n).collect();
    names.dedup();
    names
}

fn fill(
    name: &str,
    source: &str,
    vars: &BTreeMap<String, String>,
    html: bool,
) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(source.len());
    let mut rest = source;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find("}}") else {
            out.push_str(&rest[start..]);
            return Ok(out);
        };
        let var = after[..end].trim();
        let value = vars.get(var).ok_or_else(|| TemplateError::MissingVar {
            template: name.to_owned(),
            var: var.to_owned(),
        })?;
        if html {
            out.push_str(&escape_html(value));
        } else {
            out.push_str(value);
        }
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> BTreeMap<String, String> {
        [
            ("name", "Ana <admin>"),
            ("email", "ana@example.com"),
            ("company_name", "Alpha & Co"),
            ("inviter_name", "Owner"),
            ("password", "Secret1234567890abcd"),
            ("sign_in_url", "https://invoicing.example"),
            ("report_title", "VAT summary"),
            ("locale", "es-ES"),
            ("period", "2026-01-01 – 2026-03-31"),
            (
                "link",
                "https://invoicing.example/v1/reports/r1/pdf?expires=1&signature=s",
            ),
            ("link_days", "7"),
            ("reference", "F-2026-00001"),
            ("total", "EUR 1,234.56"),
            ("outstanding", "EUR 234.56"),
            ("due_date", "31/03/2026"),
            // The invoice mails' personal message, escaped in HTML like a name.
            ("message", "Ana <admin>"),
            ("url", "https://hooks.example/in"),
            ("failures", "30"),
            ("error", "HTTP 500"),
            ("endpoint_id", "e1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect()
    }

    #[test]
    fn every_template_renders_in_both_languages() {
        for name in names() {
            for lang in [Lang::En, Lang::Es] {
                let r = render(name, lang, &vars()).unwrap();
                assert!(r.subject.contains("Alpha & Co"), "{name} {lang:?}");
                for part in [&r.subject, &r.text, &r.html] {
                    assert!(!part.contains("{{"), "{name} {lang:?}: {part}");
                }
                assert!(r.html.contains("Alpha &amp; Co") && r.html.contains("Ana &lt;admin&gt;"));
                assert!(r.text.contains("Ana <admin>"));
            }
        }
        let es = render("member_password", Lang::Es, &vars()).unwrap();
        assert!(es.text.contains("Contraseña: Secret1234567890abcd"));
        let en = render("member_password", Lang::En, &vars()).unwrap();
        assert!(en.text.contains("Password: Secret1234567890abcd"));
        let sent = render("invoice_send", Lang::Es, &vars()).unwrap();
        assert!(
            sent.subject.contains("Factura F-2026-00001"),
            "{}",
            sent.subject
        );
        assert!(sent.text.contains("EUR 1,234.56") && sent.text.contains("31/03/2026"));
        let reminder = render("invoice_reminder", Lang::En, &vars()).unwrap();
        assert!(
            reminder.subject.starts_with("Reminder"),
            "{}",
            reminder.subject
        );
        assert!(reminder.text.contains("EUR 234.56 is still outstanding"));
        let report = render("report_ready", Lang::Es, &vars()).unwrap();
        assert!(
            report
                .text
                .contains("/v1/reports/r1/pdf?expires=1&signature=s")
        );
        assert!(report.html.contains(
            "href=\"https://invoicing.example/v1/reports/r1/pdf?expires=1&amp;signature=s\""
        ));
    }

    #[test]
    fn languages_and_errors() {
        assert_eq!(Lang::from_tag("es_ES"), Lang::Es);
        assert_eq!(Lang::from_tag("es-MX"), Lang::Es);
        assert_eq!(Lang::from_tag("en_US"), Lang::En);
        assert_eq!(Lang::from_tag("fr_FR"), Lang::En);
        assert!(matches!(
            render("nope", Lang::En, &vars()),
            Err(TemplateError::Unknown(_))
        ));
        let mut missing = vars();
        missing.remove("password");
        assert!(matches!(
            render("member_password", Lang::En, &missing),
            Err(TemplateError::MissingVar { .. })
        ));
    }
}
