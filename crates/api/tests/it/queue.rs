//! The jobs machinery itself: one run per job across workers, backoff,
//! dead jobs with their error, graceful shutdown, expired leases, the daily schedule.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use jobs::{Registry, Worker, WorkerConfig, schedule::Daily};
use store::jobs::NewJob;

use crate::{
    background::{Running, context, fast_config},
    support::*,
};

type Log = Arc<Mutex<Vec<(String, String, Instant)>>>;

/// A registry whose `test.*` kinds record each run (job id, worker id, time).
fn recording(log: &Log) -> Registry {
    let mut r = Registry::default();
    let l = log.clone();
    r.register("test.count", move |_, job| {
        let l = l.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(5)).await;
            l.lock()
                .unwrap()
                .push((job.id, job.worker_id, Instant::now()));
            Ok(())
        }
    });
    let l = log.clone();
    r.register("test.fail", move |_, job| {
        let l = l.clone();
        async move {
            l.lock()
                .unwrap()
                .push((job.id, job.worker_id, Instant::now()));
            Err(anyhow::anyhow!("the printer is on fire (attempt {})", job.attempt).into())
        }
    });
    let l = log.clone();
    r.register("test.flaky", move |_, job| {
        let l = l.clone();
        async move {
            l.lock()
                .unwrap()
                .push((job.id, job.worker_id, Instant::now()));
            if job.attempt < 3 {
                Err(anyhow::anyhow!("not yet").into())
            } else {
                Ok(())
            }
        }
    });
    r.register("test.typed", |_, job| async move {
        let _: HashMap<String, i64> = job.payload()?;
        Ok(())
    });
    r.register("test.slow", |_, job| async move {
        let secs = job.payload["secs"].as_f64().unwrap_or(60.0);
        tokio::time::sleep(Duration::from_secs_f64(secs)).await;
        Ok(())
    });
    r
}

async fn enqueue(app: &TestApp, jobs: impl IntoIterator<Item = NewJob>) -> Vec<String> {
    let mut tx = app.db.begin_write().await.unwrap();
    let mut ids = Vec::new();
    for job in jobs {
        ids.push(
            store::jobs::enqueue(tx.conn(), &job)
                .await
                .unwrap()
                .unwrap(),
        );
    }
    tx.commit().await.unwrap();
    ids
}

fn worker(
    db: &store::Db,
    registry: Registry,
    config: WorkerConfig,
    outbox: &std::path::Path,
) -> Worker {
    Worker::new(context(db, None, outbox), registry, config)
}

db_test!(two_workers_run_each_job_exactly_once, |app| {
    let log: Log = Arc::default();
    let outbox = tempfile::tempdir().unwrap();
    let ids = enqueue(
        &app,
        (0..80).map(|i| NewJob::new("test.count", serde_json::json!({"i": i}))),
    )
    .await;
    // Two workers with pools of their own, as two processes have, two jobs at a time each.
    let second_db = store::Db::connect(&app.url).await.unwrap();
    let config = WorkerConfig {
        concurrency: 2,
        ..fast_config()
    };
    let w1 = worker(&app.db, recording(&log), config.clone(), outbox.path());
    let w2 = worker(&second_db, recording(&log), config, outbox.path());
    let (r1, r2) = (Running::spawn(w1), Running::spawn(w2));
    app.wait_for_jobs("test.count", "all jobs done", |j| {
        j.iter().all(|j| j.status == "done")
    })
    .await;
    r1.stop().await;
    r2.stop().await;
    let log = log.lock().unwrap().clone();
    let mut runs: HashMap<&str, usize> = HashMap::new();
    for (id, _, _) in &log {
        *runs.entry(id.as_str()).or_default() += 1;
    }
    assert_eq!(runs.len(), ids.len(), "every job ran");
    assert!(runs.values().all(|n| *n == 1), "no job ran twice: {runs:?}");
    for job in app.jobs(Some("test.count")).await {
        assert_eq!(job.attempts, 1);
        assert!(job.locked_by.is_none() && job.finished_at.is_some());
    }
    second_db.close().await;
});

db_test!(
    a_job_that_keeps_failing_ends_dead_with_its_last_error,
    |app| {
        let log: Log = Arc::default();
        let outbox = tempfile::tempdir().unwrap();
        let id = enqueue(
            &app,
            [NewJob {
                max_attempts: 3,
                ..NewJob::new("test.fail", serde_json::json!({}))
            }],
        )
        .await;
        let running = Running::spawn(worker(
            &app.db,
            recording(&log),
            fast_config(),
            outbox.path(),
        ));
        let jobs = app
            .wait_for_jobs("test.fail", "the job dead", |j| j[0].status == "dead")
            .await;
        tokio::time::sleep(Duration::from_millis(600)).await;
        running.stop().await;
        let job = &jobs[0];
        assert_eq!(job.id, id[0]);
        assert_eq!(job.attempts, 3);
        assert_eq!(
            job.last_error.as_deref(),
            Some("the printer is on fire (attempt 3)")
        );
        assert!(job.finished_at.is_some() && job.locked_by.is_none());
        assert_eq!(log.lock().unwrap().len(), 3, "a dead job is not run again");

        // A payload that can never work is dead after one attempt.
        enqueue(
            &app,
            [NewJob::new(
                "test.typed",
                serde_json::json!({"a": "not a number"}),
            )],
        )
        .await;
        let w = worker(&app.db, recording(&log), fast_config(), outbox.path());
        w.run_until_idle().await.unwrap();
        let typed = &app.jobs(Some("test.typed")).await[0];
        assert_eq!((typed.status.as_str(), typed.attempts), ("dead", 1));
        assert!(
            typed
                .last_error
                .as_deref()
                .unwrap()
                .contains("payload is invalid")
        );

        // An operator can queue a dead job again.
        let mut conn = app.db.pool().acquire().await.unwrap();
        assert!(store::jobs::retry_dead(&mut conn, &id[0]).await.unwrap());
        assert!(!store::jobs::retry_dead(&mut conn, &id[0]).await.unwrap());
        let job = store::jobs::get(&mut conn, &id[0]).await.unwrap().unwrap();
        assert_eq!((job.status.as_str(), job.attempts), ("queued", 0));
    }
);

db_test!(
    a_failed_job_is_retried_with_growing_delays_until_it_works,
    |app| {
        let log: Log = Arc::default();
        let outbox = tempfile::tempdir().unwrap();
        enqueue(&app, [NewJob::new("test.flaky", serde_json::json!({}))]).await;
        let running = Running::spawn(worker(
            &app.db,
            recording(&log),
            fast_config(),
            outbox.path(),
        ));
        let jobs = app
            .wait_for_jobs("test.flaky", "the job done", |j| j[0].status == "done")
            .await;
        running.stop().await;
        assert_eq!(jobs[0].attempts, 3);
        let times: Vec<Instant> = log.lock().unwrap().iter().map(|(_, _, t)| *t).collect();
        assert_eq!(times.len(), 3);
        // Base 100 ms doubled per failure, jitter at most -20 %.
        assert!(
            times[1] - times[0] >= Duration::from_millis(80),
            "{:?}",
            times[1] - times[0]
        );
        assert!(
            times[2] - times[1] >= Duration::from_millis(160),
            "{:?}",
            times[2] - times[1]
        );
    }
);

db_test!(
    stopping_a_worker_finishes_or_releases_its_running_job,
    |app| {
        let log: Log = Arc::default();
        let outbox = tempfile::tempdir().unwrap();
        let config = WorkerConfig {
            shutdown_grace: Duration::from_millis(300),
            ..fast_config()
        };
        // A job longer than the grace period is released, its attempt not counted.
        let slow = enqueue(
            &app,
            [NewJob::new("test.slow", serde_json::json!({"secs": 60}))],
        )
        .await;
        let running = Running::spawn(worker(
            &app.db,
            recording(&log),
            config.clone(),
            outbox.path(),
        ));
        app.wait_for_jobs("test.slow", "the job running", |j| j[0].status == "running")
            .await;
        let started = Instant::now();
        running.stop().await;
        assert!(started.elapsed() < Duration::from_secs(10));
        let job = &app.jobs(Some("test.slow")).await[0];
        assert_eq!((job.status.as_str(), job.attempts), ("queued", 0));
        assert!(job.locked_by.is_none());
        // A job that ends within the grace period is finished.
        sqlx::query("UPDATE jobs SET payload = $1 WHERE id = $2")
            .bind(r#"{"secs": 0.2}"#)
            .bind(&slow[0])
            .execute(app.db.pool())
            .await
            .unwrap();
        let config = WorkerConfig {
            shutdown_grace: Duration::from_secs(10),
            ..config
        };
        let running = Running::spawn(worker(&app.db, recording(&log), config, outbox.path()));
        app.wait_for_jobs("test.slow", "the job running", |j| j[0].status == "running")
            .await;
        running.stop().await;
        let job = &app.jobs(Some("test.slow")).await[0];
        assert_eq!((job.status.as_str(), job.attempts), ("done", 1));
    }
);

db_test!(
    a_job_whose_worker_died_is_claimed_again_after_its_lease,
    |app| {
        let log: Log = Arc::default();
        let outbox = tempfile::tempdir().unwrap();
        let id = enqueue(&app, [NewJob::new("test.count", serde_json::json!({}))]).await;
        // A worker claims it with a short lease and dies.
        let lease = store::now_micros() + 300_000;
        let claimed = store::jobs::claim(&app.db, "dead-worker", &["test.count"], lease)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(claimed.id, id[0]);
        let w = worker(&app.db, recording(&log), fast_config(), outbox.path());
        assert_eq!(
            w.run_until_idle().await.unwrap(),
            0,
            "held while the lease lasts"
        );
        tokio::time::sleep(Duration::from_millis(400)).await;
        assert_eq!(w.run_until_idle().await.unwrap(), 1);
        let job = &app.jobs(Some("test.count")).await[0];
        assert_eq!((job.status.as_str(), job.attempts), ("done", 2));
        // The dead worker's late report changes nothing.
        let late = store::jobs::finish(
            &app.db,
            &id[0],
            "dead-worker",
            store::jobs::Outcome::Dead { error: "late" },
        )
        .await
        .unwrap();
        assert!(!late);
        assert_eq!(app.jobs(Some("test.count")).await[0].status, "done");
    }
);

db_test!(
    daily_jobs_are_enqueued_once_a_day_however_many_workers,
    |app| {
        let now: chrono::DateTime<chrono::Utc> = "2030-05-06T10:00:00Z".parse().unwrap();
        let daily = [Daily::new("test.count", 3, 0)];
        let second_db = store::Db::connect(&app.url).await.unwrap();
        let (a, b) = tokio::join!(
            jobs::schedule::ensure(&app.db, &daily, now),
            jobs::schedule::ensure(&second_db, &daily, now)
        );
        assert_eq!(a.unwrap() + b.unwrap(), 2, "today and tomorrow, once");
        assert_eq!(
            jobs::schedule::ensure(&app.db, &daily, now).await.unwrap(),
            0
        );
        let next_day = now + chrono::Duration::days(1);
        assert_eq!(
            jobs::schedule::ensure(&app.db, &daily, next_day)
                .await
                .unwrap(),
            1
        );
        let keys: Vec<String> = app
            .jobs(Some("test.count"))
            .await
            .into_iter()
            .map(|j| j.dedupe_key.unwrap())
            .collect();
        assert_eq!(
            keys,
            [
                "daily:test.count:2030-05-06",
                "daily:test.count:2030-05-07",
                "daily:test.count:2030-05-08"
            ]
        );
        let first = &app.jobs(Some("test.count")).await[0];
        assert_eq!(
            first.run_at,
            "2030-05-06T03:00:00Z"
                .parse::<chrono::DateTime<chrono::Utc>>()
                .unwrap()
                .timestamp_micros()
        );
        second_db.close().await;

        // The standard registry prunes finished jobs daily: old ones go, recent ones stay.
        let outbox = tempfile::tempdir().unwrap();
        let w = app.worker(None, outbox.path());
        assert_eq!(
            w.enqueue_daily(chrono::Utc::now()).await.unwrap(),
            4,
            "today's and tomorrow's prune and power-of-attorney check"
        );
        enqueue(&app, [NewJob::new("jobs.prune", serde_json::json!({}))]).await;
        let old = store::now_micros() - 31 * 24 * 3600 * 1_000_000;
        sqlx::query("UPDATE jobs SET status = 'done', finished_at = $1 WHERE kind = 'test.count' AND dedupe_key LIKE '%05-06'")
        .bind(old)
        .execute(app.db.pool())
        .await
        .unwrap();
        sqlx::query("UPDATE jobs SET status = 'done', finished_at = $1 WHERE kind = 'test.count' AND dedupe_key LIKE '%05-07'")
        .bind(store::now_micros())
        .execute(app.db.pool())
        .await
        .unwrap();
        // Expired web sessions and day-old failed sign-ins go too; live ones stay.
        let now = store::now_micros();
        let day = 24 * 3600 * 1_000_000;
        for (hash, expires) in [("expired", now - 1), ("live", now + day)] {
            store::web::create_session(
                &mut app.db.pool().acquire().await.unwrap(),
                &store::web::NewSession {
                    id_hash: hash,
                    user_id: &app.a.user_id,
                    company_id: Some(&app.a.company_id),
                    csrf_token: "t",
                    now: now - 2 * day,
                    expires_at: expires,
                },
            )
            .await
            .unwrap();
        }
        let mut conn = app.db.pool().acquire().await.unwrap();
        for (key, at) in [("old", now - 2 * day), ("recent", now)] {
            store::web::reserve_attempt(&mut conn, key, at, at - 3600 * 1_000_000)
                .await
                .unwrap();
        }
        drop(conn);
        w.run_until_idle().await.unwrap();
        let sessions: Vec<String> = sqlx::query_scalar("SELECT id_hash FROM web_sessions")
            .fetch_all(app.db.pool())
            .await
            .unwrap();
        assert_eq!(sessions, ["live"]);
        let failures: Vec<String> = sqlx::query_scalar("SELECT key_hash FROM web_sign_in_attempts")
            .fetch_all(app.db.pool())
            .await
            .unwrap();
        assert_eq!(failures, ["recent"]);
        let left: Vec<String> = app
            .jobs(Some("test.count"))
            .await
            .into_iter()
            .map(|j| j.dedupe_key.unwrap())
            .collect();
        assert_eq!(
            left,
            ["daily:test.count:2030-05-07", "daily:test.count:2030-05-08"]
        );
        let prune = app.jobs(Some("jobs.prune")).await;
        assert!(prune.iter().any(|j| j.status == "done"), "a prune ran");
    }
);
