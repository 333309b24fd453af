//! Sign-in throttling: counted before checking, per address and e-mail, and
//! per e-mail from everywhere; forwarded addresses only from trusted proxies.

use web::{
    client_ip::TrustedProxies,
    throttle::{MAX_FAILURES_PER_CLIENT_AND_EMAIL, MAX_FAILURES_PER_EMAIL},
};

use crate::{support::Browser, web_test};

/// Sends `browsers.len()` sign-ins at once and returns their status codes.
async fn at_once(browsers: Vec<Browser>, email: &str, password: &str) -> Vec<u16> {
    let tasks = browsers.into_iter().map(|mut b| {
        let (email, password) = (email.to_owned(), password.to_owned());
        tokio::spawn(async move {
            let csrf = b.sign_in_form().await;
            b.post(
                "/login",
                &[("csrf", &csrf), ("email", &email), ("password", &password)],
            )
            .await
            .status
            .as_u16()
        })
    });
    let mut statuses = Vec::new();
    for task in tasks.collect::<Vec<_>>() {
        statuses.push(task.await.expect("task"));
    }
    statuses
}

fn checked(statuses: &[u16]) -> usize {
    statuses.iter().filter(|s| **s == 401).count()
}

web_test!(parallel_guesses_get_at_most_the_limit_checked, |engine| {
    let app = TestWeb::new(engine).await;
    let (a, b) = (app.a.clone(), app.b.clone());
    // From one address: at most the per-address limit is checked.
    let one: Vec<Browser> = (0..40).map(|_| app.browser("203.0.113.9")).collect();
    let statuses = at_once(one, &a.email, "a guess, not the password").await;
    assert!(
        statuses.iter().all(|s| *s == 401 || *s == 429),
        "{statuses:?}"
    );
    assert_eq!(
        checked(&statuses),
        MAX_FAILURES_PER_CLIENT_AND_EMAIL as usize,
        "{statuses:?}"
    );
    let mut same = app.browser("203.0.113.9");
    assert_eq!(same.sign_in(&a.email, &a.password).await.status, 429);

    // From many addresses: at most the per-account limit is checked.
    let many: Vec<Browser> = (0..40)
        .map(|i| app.browser(&format!("198.51.100.{}", i + 1)))
        .collect();
    let statuses = at_once(many, &b.email, "a guess, not the password").await;
    assert_eq!(
        checked(&statuses),
        MAX_FAILURES_PER_EMAIL as usize,
        "{statuses:?}"
    );
    let mut fresh = app.browser("192.0.2.200");
    assert_eq!(fresh.sign_in(&b.email, &b.password).await.status, 429);
});

web_test!(
    failures_from_one_address_lock_out_only_that_address,
    |engine| {
        let app = TestWeb::new(engine).await;
        let a = app.a.clone();
        // One office behind one address: 35 failed sign-ins for other accounts...
        let mut office = app.browser("203.0.113.50");
        for i in 0..35 {
            let status = office
                .sign_in(
                    &format!("someone{}@alpha.test", i % 7),
                    "wrong password here",
                )
                .await
                .status;
            assert_eq!(status, 401, "attempt {i}");
        }
        // ...do not stop a colleague from signing in.
        let ok = office.sign_in(&a.email, &a.password).await;
        assert_eq!(ok.status, 303, "{}", ok.body);

        // Guessing one account from one address stops that address for that account...
        let mut guesser = app.browser("203.0.113.66");
        for _ in 0..MAX_FAILURES_PER_CLIENT_AND_EMAIL {
            assert_eq!(guesser.sign_in(&a.email, "a wrong guess").await.status, 401);
        }
        assert_eq!(guesser.sign_in(&a.email, &a.password).await.status, 429);
        // ...not its owner elsewhere, nor anyone else from that address.
        let mut owner = app.browser("192.0.2.10");
        assert_eq!(owner.sign_in(&a.email, &a.password).await.status, 303);
        let b = app.b.clone();
        assert_eq!(guesser.sign_in(&b.email, &b.password).await.status, 303);
    }
);

web_test!(
    forwarded_addresses_count_only_from_trusted_proxies,
    |engine| {
        let app = TestWeb::with(
            engine,
            Options {
                proxies: TrustedProxies::parse("10.0.0.0/8").unwrap(),
                ..Options::default()
            },
        )
        .await;
        let a = app.a.clone();
        let via = |client: &str| {
            let mut b = app.browser("10.0.0.1");
            b.headers.push(("x-forwarded-for".into(), client.into()));
            b
        };
        // Behind the trusted proxy, each client is counted by its own address.
        let mut guesser = via("203.0.113.5");
        for _ in 0..MAX_FAILURES_PER_CLIENT_AND_EMAIL {
            assert_eq!(guesser.sign_in(&a.email, "a wrong guess").await.status, 401);
        }
        assert_eq!(guesser.sign_in(&a.email, &a.password).await.status, 429);
        let mut colleague = via("203.0.113.6");
        assert_eq!(colleague.sign_in(&a.email, &a.password).await.status, 303);
        // A client cannot pose as someone else by writing the header in front.
        let mut spoofer = via("203.0.113.6, 203.0.113.5");
        assert_eq!(spoofer.sign_in(&a.email, &a.password).await.status, 429);
        let mut forwarded = app.browser("10.0.0.1");
        forwarded
            .headers
            .push(("forwarded".into(), "for=203.0.113.5;proto=https".into()));
        assert_eq!(forwarded.sign_in(&a.email, &a.password).await.status, 429);

        // From a peer that is not a trusted proxy the headers are ignored: a new
        // made-up address per request does not buy more guesses.
        let b = app.b.clone();
        let mut direct = app.browser("198.51.100.7");
        for i in 0..MAX_FAILURES_PER_CLIENT_AND_EMAIL {
            direct.headers = vec![("x-forwarded-for".into(), format!("192.0.2.{i}"))];
            assert_eq!(direct.sign_in(&b.email, "a wrong guess").await.status, 401);
        }
        direct.headers = vec![("x-forwarded-for".into(), "192.0.2.99".into())];
        assert_eq!(direct.sign_in(&b.email, &b.password).await.status, 429);
    }
);
