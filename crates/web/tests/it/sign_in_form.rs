//! The sign-in form's token, the bound on password hashing and the password policy.

use std::{sync::Arc, time::Duration};

use store::password::HashGate;

use crate::web_test;

web_test!(
    made_up_sign_in_tokens_are_refused_before_any_password_is_checked,
    |engine| {
        let app = TestWeb::new(engine).await;
        let a = app.a.clone();
        // Any cookie equal to the form field used to pass: no page load needed.
        let mut b = app.browser("198.51.100.1");
        b.cookies
            .insert("invoicing_login_csrf".into(), "made-up".into());
        let forged = b
            .post(
                "/login",
                &[
                    ("csrf", "made-up"),
                    ("email", &a.email),
                    ("password", &a.password),
                ],
            )
            .await;
        assert_eq!(forged.status, 403, "{}", forged.body);

        // A token the service signed, with its expiry or nonce changed, is refused too.
        let token = b.sign_in_form().await;
        let mut parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3, "{token}");
        let later = (parts[1].parse::<i64>().unwrap() + 86_400).to_string();
        parts[1] = &later;
        let stretched = parts.join(".");
        b.cookies
            .insert("invoicing_login_csrf".into(), stretched.clone());
        let refused = b
            .post(
                "/login",
                &[
                    ("csrf", &stretched),
                    ("email", &a.email),
                    ("password", &a.password),
                ],
            )
            .await;
        assert_eq!(refused.status, 403, "{}", refused.body);

        // A real token in the cookie but another in the form: refused.
        let mut c = app.browser("198.51.100.2");
        let other = c.sign_in_form().await;
        let mine = b.sign_in_form().await;
        assert_ne!(mine, other);
        let crossed = b
            .post(
                "/login",
                &[
                    ("csrf", &other),
                    ("email", &a.email),
                    ("password", &a.password),
                ],
            )
            .await;
        assert_eq!(crossed.status, 403);
        assert_eq!(
            app.count("web_sign_in_attempts").await,
            0,
            "nothing was counted, so nothing was hashed"
        );
        assert_eq!(app.count("web_sessions").await, 0);

        // A form left open past its hour is refused.
        let stale = c.sign_in_form().await;
        app.advance(2 * 3600);
        let expired = c
            .post(
                "/login",
                &[
                    ("csrf", &stale),
                    ("email", &a.email),
                    ("password", &a.password),
                ],
            )
            .await;
        assert_eq!(expired.status, 403, "{}", expired.body);

        // The form as served works.
        let ok = c.sign_in(&a.email, &a.password).await;
        assert_eq!(
            (ok.status.as_u16(), ok.location.as_str()),
            (303, "/"),
            "{}",
            ok.body
        );
        assert!(c.cookies.contains_key("invoicing_session"));

        // A sign-in body is small: a megabyte is not read at all.
        let mut d = app.browser("198.51.100.3");
        let csrf = d.sign_in_form().await;
        let big = "x".repeat(1024 * 1024);
        let huge = d
            .post(
                "/login",
                &[("csrf", &csrf), ("email", &a.email), ("password", &big)],
            )
            .await;
        assert_eq!(huge.status, 413, "{}", huge.body);
    }
);

web_test!(
    a_full_hash_gate_answers_503_and_the_attempt_is_given_back,
    |engine| {
        // One turn at a time and nobody may wait: whoever finds it taken is told to retry.
        let gate = Arc::new(HashGate::new(1, 0, Duration::from_millis(10)));
        let app = TestWeb::with(
            engine,
            Options {
                gate: gate.clone(),
                ..Options::default()
            },
        )
        .await;
        let a = app.a.clone();
        let mut b = app.browser("198.51.100.1");
        let held = gate.admit().await.expect("the only turn");
        let busy = b.sign_in(&a.email, &a.password).await;
        assert_eq!(busy.status, 503, "{}", busy.body);
        assert_eq!(busy.retry_after.as_deref(), Some("5"));
        assert!(
            busy.body.contains("Try again in a few seconds"),
            "{}",
            busy.body
        );
        assert!(!b.cookies.contains_key("invoicing_session"));

        // Signed in (with the turn free), a password change finds it taken too.
        drop(held);
        let ok = b.sign_in(&a.email, &a.password).await;
        assert_eq!(ok.status, 303, "{}", ok.body);
        let form = b.get("/password").await;
        let held = gate.admit().await.expect("the only turn");
        let new = "another long passphrase of mine";
        let change = b
            .post(
                "/password",
                &[
                    ("csrf", &form.csrf()),
                    ("current", &a.password),
                    ("new", new),
                    ("confirm", new),
                ],
            )
            .await;
        assert_eq!(change.status, 503, "{}", change.body);
        assert_eq!(change.retry_after.as_deref(), Some("5"));
        drop(held);

        // The busy answer was not a failure: all five tries of the window are left.
        let mut c = app.browser("198.51.100.2");
        let held = gate.admit().await.expect("the only turn");
        for _ in 0..3 {
            assert_eq!(c.sign_in(&a.email, "not it at all").await.status, 503);
        }
        drop(held);
        for _ in 0..5 {
            assert_eq!(c.sign_in(&a.email, "not it at all").await.status, 401);
        }
        assert_eq!(c.sign_in(&a.email, &a.password).await.status, 429);
    }
);

web_test!(a_chosen_password_must_not_be_guessable, |engine| {
    let app = TestWeb::new(engine).await;
    let a = app.a.clone();
    let mut b = app.browser("198.51.100.1");
    assert_eq!(b.sign_in(&a.email, &a.password).await.status, 303);
    let csrf = b.get("/password").await.csrf();
    for (new, why) in [
        ("Password2024!", "most common passwords"),
        ("P@ssw0rd!2345", "most common passwords"),
        ("iloveyou1234", "most common passwords"),
        ("zzzzzzzzzzzzzzzz", "one character repeated"),
        ("123456789012", "simple sequence"),
        ("qwertyuiopasdf", "simple sequence"),
        ("abcabcabcabc", "repeats a short pattern"),
        ("Owner.Owner.Owner", "e-mail address"),
        ("owner@alpha.test", "e-mail address"),
        ("Alpha Ltd 2024!", "company Alpha Ltd"),
        ("short", "at least 12 characters"),
    ] {
        let refused = b
            .post(
                "/password",
                &[
                    ("csrf", &csrf),
                    ("current", &a.password),
                    ("new", new),
                    ("confirm", new),
                ],
            )
            .await;
        assert_eq!(refused.status, 400, "{new}: {}", refused.body);
        assert!(
            refused.body.contains(why),
            "{new} should be refused for {why}: {}",
            refused.body
        );
    }
    let good = "a tram to Belem at dawn";
    let saved = b
        .post(
            "/password",
            &[
                ("csrf", &csrf),
                ("current", &a.password),
                ("new", good),
                ("confirm", good),
            ],
        )
        .await;
    assert_eq!(saved.status, 303, "{}", saved.body);
    let mut c = app.browser("198.51.100.2");
    assert_eq!(c.sign_in(&a.email, good).await.status, 303);
});
