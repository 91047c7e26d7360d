//! `lbchaos experiment`: the reference failure experiment, against the real servers, with the
//! real daemons as processes. Each stage acts, then reads PostgreSQL and Redis at that moment
//! and compares what they hold with what the contract says they must; the table printed is
//! made of those readings.

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use ledgerboard_core::config::Settings;
use ledgerboard_core::model::BoardId;
use ledgerboard_harness::http;

use crate::stack::{Members, PROJECTOR, Stack};

const BOARD: &str = "experiment";
const REQUEST_LIMIT: Duration = Duration::from_secs(10);

/// One row of the table.
struct Stage {
    name: &'static str,
    source: String,
    projection: String,
    result: String,
    passed: bool,
}

pub async fn run(settings: &Settings, out: &Path) -> anyhow::Result<()> {
    let stack = Stack::create(settings, "lbexperiment", &settings.redis.url, &[]).await?;
    // Ctrl-C or SIGTERM stops the stages, and the database and keys are still cleaned up.
    let cancel = ledgerboard_core::shutdown::on_signal();
    let outcome = tokio::select! {
        outcome = stages(&stack) => outcome,
        _ = cancel.cancelled() => Err(anyhow::anyhow!("interrupted")),
    };
    let cleaned = stack.cleanup().await;
    let stages = outcome?;
    cleaned?;
    let report = render(&stages);
    println!("{report}");
    std::fs::create_dir_all(out).with_context(|| format!("creating {}", out.display()))?;
    let path = out.join("report.md");
    std::fs::write(
        &path,
        format!("# ledgerboard failure experiment\n\n{report}"),
    )?;
    println!("written to {}", path.display());
    let failed = stages.iter().filter(|s| !s.passed).count();
    anyhow::ensure!(failed == 0, "{failed} stage(s) differ from the contract");
    Ok(())
}

fn render(stages: &[Stage]) -> String {
    let mut out = String::from(
        "| stage | PostgreSQL source | Redis projection | result | as the contract says |\n|---|---|---|---|---|\n",
    );
    for s in stages {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            s.name,
            s.source,
            s.projection,
            s.result,
            if s.passed { "yes" } else { "**NO**" }
        ));
    }
    out
}

fn show(members: &Members, with_version: bool) -> String {
    if members.is_empty() {
        return "nothing".into();
    }
    members
        .iter()
        .map(
            |(user, (score, version))| match (with_version, *score == i64::MIN) {
                (_, true) => format!("{user} (not a number)"),
                (true, false) => format!("{user} {score}, version {version}"),
                (false, false) => format!("{user} {score}"),
            },
        )
        .collect::<Vec<_>>()
        .join(", ")
}

fn scores(members: &Members) -> Vec<(String, i64)> {
    members.iter().map(|(u, (s, _))| (u.clone(), *s)).collect()
}

struct Run<'a> {
    stack: &'a Stack,
    board: BoardId,
}

impl Run<'_> {
    async fn post(
        &self,
        event: uuid::Uuid,
        user: &str,
        delta: i64,
    ) -> anyhow::Result<(u16, String)> {
        let body = format!(r#"{{"event_id":"{event}","user_id":"{user}","delta":{delta}}}"#);
        Ok(http::request(
            self.stack.api_addr()?,
            "POST",
            &format!("/v1/boards/{BOARD}/scores"),
            &[("authorization", self.stack.bearer.as_str())],
            body,
            REQUEST_LIMIT,
        )
        .await?)
    }

    async fn read(&self) -> anyhow::Result<(Members, Members)> {
        Ok((
            self.stack.source(&self.board).await?,
            self.stack.projection(&self.board).await?,
        ))
    }

    /// Reads until the projection equals `expected` (scores only), for at most 20 s.
    async fn until_projected(
        &self,
        expected: &[(&str, i64)],
    ) -> anyhow::Result<(Members, Members)> {
        let expected: Vec<(String, i64)> = expected
            .iter()
            .map(|(u, s)| ((*u).to_owned(), *s))
            .collect();
        let started = Instant::now();
        loop {
            let (source, projection) = self.read().await?;
            if scores(&projection) == expected || started.elapsed() > Duration::from_secs(20) {
                return Ok((source, projection));
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn stages(stack: &Stack) -> anyhow::Result<Vec<Stage>> {
    let run = Run {
        stack,
        board: BoardId::parse(BOARD)?,
    };
    let mut stages = Vec::new();
    let _api = stack.start_api()?;
    let mut projector = stack.start(PROJECTOR, &[])?;

    // 1. The first command.
    let first = uuid::Uuid::new_v4();
    let (status, _) = run.post(first, "user-a", 10).await?;
    let (source, projection) = run.until_projected(&[("user-a", 10)]).await?;
    stages.push(Stage {
        name: "first command for user-a (+10)",
        passed: status == 201
            && source.get("user-a") == Some(&(10, 1))
            && scores(&projection) == [("user-a".into(), 10)],
        source: show(&source, true),
        projection: show(&projection, false),
        result: format!("HTTP {status}: applied"),
    });

    // 2. The same event id again.
    let (status, body) = run.post(first, "user-a", 10).await?;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (source, projection) = run.read().await?;
    let duplicate = body.contains(r#""duplicate":true"#);
    stages.push(Stage {
        name: "same event id again",
        passed: status == 200
            && duplicate
            && source.get("user-a") == Some(&(10, 1))
            && scores(&projection) == [("user-a".into(), 10)],
        source: show(&source, true),
        projection: show(&projection, false),
        result: format!("HTTP {status}, duplicate: {duplicate}: no second effect"),
    });

    // 3. Projector stopped; two more commands.
    let stopped = projector.terminate(Duration::from_secs(15));
    anyhow::ensure!(stopped.is_some(), "the projector did not stop on SIGTERM");
    let (a, _) = run.post(uuid::Uuid::new_v4(), "user-a", 7).await?;
    let (b, _) = run.post(uuid::Uuid::new_v4(), "user-b", 25).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let (source, projection) = run.read().await?;
    let (_, read) = http::request(
        stack.api_addr()?,
        "GET",
        &format!("/v1/boards/{BOARD}/top?consistency=eventual"),
        &[],
        String::new(),
        REQUEST_LIMIT,
    )
    .await?;
    let freshness: serde_json::Value = serde_json::from_str(&read)
        .ok()
        .and_then(|v: serde_json::Value| v.get("freshness").cloned())
        .unwrap_or_default();
    let pending = freshness["pending"].as_i64().unwrap_or(0);
    let lag_ms = freshness["lag_ms"].as_i64().unwrap_or(0);
    stages.push(Stage {
        name: "projector stopped; user-a +7, user-b +25",
        passed: a == 201
            && b == 201
            && source.get("user-a") == Some(&(17, 2))
            && source.get("user-b") == Some(&(25, 1))
            && scores(&projection) == [("user-a".into(), 10)]
            && pending == 2
            && lag_ms > 0,
        source: show(&source, true),
        projection: show(&projection, false),
        result: format!("visible lag: a read says pending {pending}, lag {lag_ms} ms"),
    });

    // 4. Projector restarted.
    let _projector = stack.start(PROJECTOR, &[])?;
    // Redis shows the rows a moment before the projector's commit marks them published.
    let started = Instant::now();
    let (source, projection, outbox) = loop {
        let (source, projection) = run
            .until_projected(&[("user-a", 17), ("user-b", 25)])
            .await?;
        let outbox = ledgerboard_core::db::outbox_status(&stack.db).await?;
        if outbox.pending == 0 || started.elapsed() > Duration::from_secs(20) {
            break (source, projection, outbox);
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    stages.push(Stage {
        name: "projector restarted",
        passed: outbox.pending == 0
            && source.get("user-a") == Some(&(17, 2))
            && source.get("user-b") == Some(&(25, 1))
            && projection == source,
        source: show(&source, true),
        projection: show(&projection, false),
        result: format!(
            "outbox drained: {} pending, {} parked",
            outbox.pending, outbox.parked
        ),
    });

    // 5. A hand edit in Redis, classified by a dry-run pass.
    let mut conn = stack.store.connection().await?;
    let _: i64 = redis::cmd("ZADD")
        .arg(stack.store.keys().scores(&run.board))
        .arg(999)
        .arg("user-a")
        .query_async(&mut conn)
        .await?;
    let (source, projection) = run.read().await?;
    let report = stack
        .reconcile_once(&["--dry-run", "--board", BOARD])
        .await?;
    let t = &report["totals"];
    let count = |name: &str| t[name].as_u64().unwrap_or(u64::MAX);
    stages.push(Stage {
        name: "Redis user-a set to 999 by hand",
        passed: source.get("user-a") == Some(&(17, 2))
            && projection.get("user-a").map(|m| m.0) == Some(999)
            && count("corrupt") == 1
            && count("current") == 1,
        source: show(&source, true),
        projection: show(&projection, false),
        result: format!(
            "reconciliation (dry run) classifies {} corrupt, {} current",
            count("corrupt"),
            count("current")
        ),
    });

    // 6. The repair.
    let report = stack.reconcile_once(&["--board", BOARD]).await?;
    let t = &report["totals"];
    let count = |name: &str| t[name].as_u64().unwrap_or(u64::MAX);
    let (source, projection) = run.read().await?;
    let ranking = |m: &Members| {
        let mut r: Vec<(i64, String)> = m.iter().map(|(u, (s, _))| (*s, u.clone())).collect();
        r.sort_by(|x, y| y.cmp(x));
        r.into_iter().map(|(_, u)| u).collect::<Vec<_>>()
    };
    stages.push(Stage {
        name: "repair",
        passed: projection == source
            && ranking(&source) == ranking(&projection)
            && count("checked") == 2
            && count("corrupt") == 1
            && count("current") == 1
            && count("repaired") == 1,
        source: show(&source, true),
        projection: format!(
            "{} (ranking {})",
            show(&projection, false),
            ranking(&projection).join(" > ")
        ),
        result: format!(
            "{} rows checked: {} corrupt, {} current; {} repaired",
            count("checked"),
            count("corrupt"),
            count("current"),
            count("repaired")
        ),
    });
    Ok(stages)
}
