//! A browser-like HTTP client for the web app's plain-HTTP tests: keeps
//! cookies, does not follow redirects, reads the CSRF token of a page.

use std::{collections::HashMap, time::Duration};

/// A browser-like client: keeps cookies, does not follow redirects.
pub struct Browser {
    pub base: String,
    pub agent: ureq::Agent,
    pub cookies: HashMap<String, String>,
    /// Sent as `X-Forwarded-For`, as a reverse proxy would.
    pub forwarded_for: Option<String>,
}

pub struct Page {
    pub status: u16,
    pub location: String,
    pub set_cookies: Vec<String>,
    pub body: String,
}

impl Browser {
    pub fn new(base: &str) -> Self {
        Self {
            base: base.to_owned(),
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .max_redirects(0)
                // A new connection per request: the server closes one whose body a
                // refused post left unread, and reusing it failed the next post
                // ("Peer disconnected") now and then.
                .max_idle_connections(0)
                .max_idle_connections_per_host(0)
                .timeout_global(Some(Duration::from_secs(30)))
                .build()
                .into(),
            cookies: HashMap::new(),
            forwarded_for: None,
        }
    }

    pub fn cookie_header(&self) -> String {
        self.cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    pub fn keep(&mut self, resp: ureq::http::Response<ureq::Body>) -> Page {
        let set_cookies: Vec<String> = resp
            .headers()
            .get_all("set-cookie")
            .iter()
            .filter_map(|v| v.to_str().ok().map(str::to_owned))
            .collect();
        for c in &set_cookies {
            let pair = c.split(';').next().unwrap_or("");
            if let Some((k, v)) = pair.split_once('=') {
                if v.is_empty() || c.contains("Max-Age=0") {
                    self.cookies.remove(k);
                } else {
                    self.cookies.insert(k.to_owned(), v.to_owned());
                }
            }
        }
        let status = resp.status().as_u16();
        let location = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let mut resp = resp;
        let body = resp.body_mut().read_to_string().unwrap_or_default();
        Page {
            status,
            location,
            set_cookies,
            body,
        }
    }

    pub fn get(&mut self, path: &str) -> Page {
        let mut req = self
            .agent
            .get(format!("{}{path}", self.base))
            .header("Cookie", self.cookie_header());
        if let Some(f) = &self.forwarded_for {
            req = req.header("X-Forwarded-For", f);
        }
        let resp = req.call().expect("GET");
        self.keep(resp)
    }

    pub fn post(&mut self, path: &str, fields: &[(&str, &str)], origin: Option<&str>) -> Page {
        let mut req = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Cookie", self.cookie_header());
        if let Some(o) = origin {
            req = req.header("Origin", o);
        }
        if let Some(f) = &self.forwarded_for {
            req = req.header("X-Forwarded-For", f);
        }
        let resp = req.send_form(fields.iter().copied()).expect("POST");
        self.keep(resp)
    }

    /// Posts a `multipart/form-data` form: text fields and one file field.
    pub fn post_multipart(
        &mut self,
        path: &str,
        fields: &[(&str, &str)],
        file: (&str, &[u8]),
        origin: Option<&str>,
    ) -> Page {
        let boundary = "----invoicing-test-boundary-7d3f";
        let mut body = Vec::new();
        for (name, value) in fields {
            body.extend_from_slice(
                format!(
                    "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
                )
                .as_bytes(),
            );
        }
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{}\"; filename=\"upload\"\r\nContent-Type: application/octet-stream\r\n\r\n",
                file.0
            )
            .as_bytes(),
        );
        body.extend_from_slice(file.1);
        body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
        let mut req = self
            .agent
            .post(format!("{}{path}", self.base))
            .header("Cookie", self.cookie_header())
            .header(
                "Content-Type",
                format!("multipart/form-data; boundary={boundary}"),
            );
        if let Some(o) = origin {
            req = req.header("Origin", o);
        }
        let resp = req.send(&body[..]).expect("POST");
        self.keep(resp)
    }

    /// The CSRF token in the page's forms.
    pub fn csrf(page: &Page) -> String {
        let at = page
            .body
            .find("name=\"csrf\" value=\"")
            .unwrap_or_else(|| panic!("no CSRF field in:\n{}", page.body));
        let rest = &page.body[at + "name=\"csrf\" value=\"".len()..];
        rest[..rest.find('"').expect("end of value")].to_owned()
    }

    /// Opens the sign-in page and signs in; returns the answer to the post.
    pub fn sign_in(&mut self, email: &str, password: &str) -> Page {
        let form = self.get("/login");
        assert_eq!(
            form.status, 200,
            "GET /login went to {}: {}",
            form.location, form.body
        );
        let csrf = Self::csrf(&form);
        self.post(
            "/login",
            &[
                ("csrf", &csrf),
                ("email", email),
                ("password", password),
                ("next", "/review"),
            ],
            None,
        )
    }
}
