//! Where sign-in leads: only to a path on this site.

use crate::web_test;

web_test!(next_after_sign_in_never_leads_to_another_host, |engine| {
    let app = TestWeb::new(engine).await;
    let a = app.a.clone();
    for (i, (next, location)) in [
        // Browsers drop tabs and newlines: `/\t/evil.example` is `//evil.example`.
        ("/\t/evil.example", "/"),
        ("/\n/evil.example", "/"),
        ("/\r\n/evil.example", "/"),
        ("/%09/evil.example", "/"),
        ("/%2509/evil.example", "/"),
        ("/%2F/evil.example", "/"),
        ("//evil.example", "/"),
        ("/\\evil.example", "/"),
        ("/%5Cevil.example", "/"),
        ("https://evil.example/", "/"),
        ("evil.example", "/"),
        ("", "/"),
        ("/invoices?status=draft", "/invoices?status=draft"),
        ("/invoices/año", "/invoices/a%C3%B1o"),
        ("/", "/"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut b = app.browser(&format!("198.51.100.{}", i + 1));
        // The form keeps only a safe `next`; and a post naming another is not followed.
        let page = b.get(&format!("/login?next={}", encode(next))).await;
        assert_eq!(page.status, 200, "{next:?}: {}", page.body);
        let csrf = page.csrf();
        let done = b
            .post(
                "/login",
                &[
                    ("csrf", &csrf),
                    ("email", &a.email),
                    ("password", &a.password),
                    ("next", next),
                ],
            )
            .await;
        assert_eq!(done.status, 303, "{next:?}: {}", done.body);
        assert_eq!(done.location, location, "{next:?}");
    }
});
