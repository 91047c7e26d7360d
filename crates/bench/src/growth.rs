//! The cost of growth: the same work at ten times the size, or over many boards, against the
//! same work at the smaller size in the same run. Each figure is a ratio of the larger to the
//! smaller, so "flat" reads as 1.
//!
//! - one board of 1M and of 10M users: `lbctl rebuild` and a reconciler pass (time and peak
//!   memory of the real binaries), and `users/{id}` reads of random users through the API
//!   (against the same server's HTTP ceiling);
//! - commands at 64 clients spread over 1, 100 and 10,000 boards;
//! - a dry-run reconciler pass over 10,000 and over 1,000,000 one-user boards (its report
//!   must not hold every board);
//! - the API as its real binary under ten minutes of requests that are all different (new
//!   boards, users, offsets and client addresses), its resident memory sampled throughout.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;

use crate::api::Stack;
use crate::cpu::Cpu;
use crate::load;
use crate::reconciler::{Run, binary, measure};

#[derive(Debug, Serialize)]
pub struct BoardAtSize {
    pub users: i64,
    pub rebuild: Run,
    pub pass: Run,
    /// `users/{id}` of random users, 16 clients.
    pub reads_per_s: f64,
    /// The same server's 404 of an unknown path, 16 clients.
    pub ceiling_per_s: f64,
    /// CPU per read and per ceiling request by process group (µs).
    pub reads_cpu_us: Cpu,
    pub ceiling_cpu_us: Cpu,
}

#[derive(Debug, Serialize)]
pub struct CommandsOverBoards {
    pub boards: u64,
    pub per_s: f64,
    pub p99_ms: f64,
    /// CPU per command by process group (µs).
    pub cpu_us: Cpu,
}

#[derive(Debug, Serialize)]
pub struct ManyBoardsPass {
    pub boards: i64,
    pub pass: Run,
    /// Entries the report listed (at most `reconciler.report_max_boards`).
    pub listed: u64,
}

#[derive(Debug, Serialize)]
pub struct Soak {
    pub seconds: f64,
    pub requests: u64,
    /// Boards written to (a new one every 4 requests; each request has a new client address
    /// and user).
    pub boards: u64,
    /// Answers of 500 or more (must be none).
    pub server_errors: u64,
    /// The API's resident memory (VmRSS) every 10 s, in MB.
    pub rss_mb: Vec<f64>,
}

impl Soak {
    /// The last sample ÷ the one after the first minute (the first 10 s in a short run):
    /// what the API kept while the load went on.
    pub fn growth(&self) -> f64 {
        let base = self.rss_mb.get(6).or(self.rss_mb.get(1)).copied();
        match (base, self.rss_mb.last()) {
            (Some(b), Some(l)) if b > 0.0 => l / b,
            _ => f64::NAN,
        }
    }
}

#[derive(Debug, Serialize)]
pub struct GrowthFigures {
    pub sizes: Vec<BoardAtSize>,
    pub commands: Vec<CommandsOverBoards>,
    pub many_boards: Vec<ManyBoardsPass>,
    /// None when the part was not run.
    pub soak: Option<Soak>,
}

/// The parts of the section, each runnable alone (`--growth`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Part {
    /// 1M and 10M-user boards: rebuild, pass, reads.
    Sizes,
    /// Dry-run passes over many one-user boards.
    SmallBoards,
    /// Commands over 1, 100 and 10,000 boards.
    Commands,
    /// The api under ten minutes of all-different requests.
    Soak,
}

/// Runs `parts` of the section (every part when empty).
pub async fn run(quick: bool, parts: &[Part]) -> anyhow::Result<GrowthFigures> {
    let (sizes, boards, small_boards, soak_s): (&[i64], &[u64], &[i64], u64) = if quick {
        (&[5_000, 10_000], &[1, 100], &[100, 300], 1)
    } else {
        (
            &[1_000_000, 10_000_000],
            &[1, 100, 10_000],
            &[10_000, 1_000_000],
            600,
        )
    };
    let want = |part| parts.is_empty() || parts.contains(&part);
    // Each figure goes to stderr as soon as it is measured: a run this long that is stopped
    // early still leaves what it measured.
    let mut sizes_measured = Vec::new();
    for &users in sizes.iter().filter(|_| want(Part::Sizes)) {
        let size = board_at(users, quick).await?;
        eprintln!("growth: {size:?}");
        sizes_measured.push(size);
    }
    let mut many = Vec::new();
    for &n in small_boards.iter().filter(|_| want(Part::SmallBoards)) {
        let pass = many_boards(n).await?;
        eprintln!("growth: {pass:?}");
        many.push(pass);
    }
    let mut commands = Vec::new();
    for &n in boards.iter().filter(|_| want(Part::Commands)) {
        let c = commands_over(n, quick).await?;
        eprintln!("growth: {c:?}");
        commands.push(c);
    }
    let soak = if want(Part::Soak) {
        let soak = soak(Duration::from_secs(soak_s)).await?;
        eprintln!("growth: {soak:?}");
        Some(soak)
    } else {
        None
    };
    let figures = GrowthFigures {
        sizes: sizes_measured,
        commands,
        many_boards: many,
        soak,
    };
    Ok(figures)
}

/// 64 random bits.
fn random() -> u64 {
    (uuid::Uuid::new_v4().as_u128() >> 64) as u64
}

/// Read by the load's request builders (plain functions): the users of the board measured,
/// and the boards commands spread over.
static USERS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
static SPREAD: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

async fn board_at(users: i64, quick: bool) -> anyhow::Result<BoardAtSize> {
    let stack = Stack::start(16).await?;
    eprintln!("growth: a board of {users} users");
    let client = stack.db.client().await;
    crate::reconciler::seed_boards(&client, &[("g", users)]).await?;
    let env = crate::settings::daemon_env(&stack.settings);
    let (rebuild, _) = measure(&binary("lbctl")?, &["rebuild", "--board", "g"], &env, users)?;
    let (pass, report) = measure(
        &binary("ledgerboard-reconciler")?,
        &["--once", "--board", "g"],
        &env,
        users,
    )?;
    anyhow::ensure!(
        report["totals"]["current"].as_i64() == Some(users),
        "the rebuilt board is not all current: {}",
        report["totals"]
    );
    USERS.store(users as u64, std::sync::atomic::Ordering::Relaxed);
    let standing = |_: usize, _: u64| {
        let n = 1 + random() % USERS.load(std::sync::atomic::Ordering::Relaxed);
        load::request(
            "GET",
            &format!("/v1/boards/g/users/player-{n:012}"),
            None,
            None,
        )
    };
    stack
        .answered_by_projection("users/{id}", &standing(0, 0))
        .await?;
    let seconds = Duration::from_secs(if quick { 1 } else { 5 });
    let ceiling = load::closed_loop(stack.addr, 16, seconds, 404, |_, _| {
        load::request("GET", "/v1/none", None, None)
    })
    .await?;
    let reads = load::closed_loop(stack.addr, 16, seconds, 200, standing).await?;
    stack.stop().await?;
    Ok(BoardAtSize {
        users,
        rebuild,
        pass,
        reads_per_s: reads.per_s(),
        ceiling_per_s: ceiling.per_s(),
        reads_cpu_us: reads.cpu_per_request(),
        ceiling_cpu_us: ceiling.cpu_per_request(),
    })
}

async fn commands_over(boards: u64, quick: bool) -> anyhow::Result<CommandsOverBoards> {
    eprintln!("growth: commands over {boards} boards, 64 clients");
    SPREAD.store(boards, std::sync::atomic::Ordering::Relaxed);
    let stack = Stack::start(68).await?;
    let run = load::closed_loop(
        stack.addr,
        64,
        Duration::from_secs(if quick { 1 } else { 8 }),
        201,
        |_, _| {
            let board = random() % SPREAD.load(std::sync::atomic::Ordering::Relaxed);
            crate::commands::command(&format!("b-{board}"), "delta", |r| (r % 100 + 1) as i64)
        },
    )
    .await?;
    stack.stop().await?;
    Ok(CommandsOverBoards {
        boards,
        per_s: run.per_s(),
        p99_ms: run.percentile(0.99),
        cpu_us: run.cpu_per_request(),
    })
}

/// A dry-run pass over `boards` one-user boards that Redis does not hold: every board is
/// walked and found missing, nothing is written.
async fn many_boards(boards: i64) -> anyhow::Result<ManyBoardsPass> {
    eprintln!("growth: a dry-run pass over {boards} one-user boards");
    let stack = Stack::start(8).await?;
    let client = stack.db.client().await;
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT 's-' || lpad(g::text, 7, '0'), 'p-1', g, 1
             FROM generate_series(0, $1::bigint - 1) g",
            &[&boards],
        )
        .await?;
    client.batch_execute("VACUUM ANALYZE user_scores").await?;
    client.batch_execute("CHECKPOINT").await?;
    let (pass, report) = measure(
        &binary("ledgerboard-reconciler")?,
        &["--once", "--dry-run"],
        &crate::settings::daemon_env(&stack.settings),
        boards,
    )?;
    stack.stop().await?;
    anyhow::ensure!(
        report["boards_visited"].as_i64() == Some(boards)
            && report["totals"]["missing"].as_i64() == Some(boards),
        "the pass did not find every board missing: {} boards, {}",
        report["boards_visited"],
        report["totals"]
    );
    Ok(ManyBoardsPass {
        boards,
        pass,
        listed: report["boards"].as_array().map_or(0, Vec::len) as u64,
    })
}

/// The real API binary under `duration` of requests that each name a new client address (the
/// `X-Forwarded-For` of a trusted proxy), board, user and offset: reads of boards with rows
/// (answered from PostgreSQL, each asking for a rebuild), of boards without, and commands.
async fn soak(duration: Duration) -> anyhow::Result<Soak> {
    eprintln!(
        "growth: the api under {} s of all-different requests",
        duration.as_secs()
    );
    let stack = Stack::start(8).await?;
    let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
    let addr = listener.local_addr()?;
    drop(listener);
    let mut env = crate::settings::daemon_env(&stack.settings);
    env.extend([
        ("LEDGERBOARD__API__LISTEN", addr.to_string()),
        ("LEDGERBOARD__API__ADMIN_LISTEN", "127.0.0.1:0".to_owned()),
        ("LEDGERBOARD__API__TRUSTED_PROXIES", "127.0.0.1".to_owned()),
        (
            "LEDGERBOARD__AUTH__TOKENS",
            ledgerboard_testkit::test_tokens(),
        ),
        // The limiter keeps its per-address buckets at any rate; the commands share one
        // token, whose bucket must not refuse them.
        ("LEDGERBOARD__API__RATE_LIMIT_PER_S", "1000000".to_owned()),
        ("LEDGERBOARD__API__RATE_LIMIT_BURST", "1000000".to_owned()),
    ]);
    let mut api = std::process::Command::new(binary("ledgerboard-api")?)
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .context("starting ledgerboard-api")?;
    let result = soak_load(addr, api.id(), duration).await;
    let _ = api.kill();
    let _ = api.wait();
    stack.stop().await?;
    result
}

async fn soak_load(addr: SocketAddr, pid: u32, duration: Duration) -> anyhow::Result<Soak> {
    let started = Instant::now();
    while load::Connection::open(addr).await.is_err() {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(30),
            "the api did not listen"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let rss = move || crate::reconciler::status_kb(pid, "VmRSS").map(|kb| kb as f64 / 1024.0);
    let samples = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sampling = tokio::spawn({
        let samples = samples.clone();
        async move {
            let mut tick = tokio::time::interval(Duration::from_secs(10));
            loop {
                tick.tick().await;
                if let Some(mb) = rss() {
                    samples
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .push(mb);
                }
            }
        }
    });
    let counts = load::on_load_runtime(async move {
        let deadline = Instant::now() + duration;
        let mut tasks = Vec::new();
        for _ in 0..16 {
            tasks.push(tokio::spawn(async move {
                let (mut requests, mut errors) = (0_u64, 0_u64);
                let mut conn = load::Connection::open(addr).await?;
                let mut board = String::new();
                while Instant::now() < deadline {
                    let answer = conn.send(&all_different(requests, &mut board)).await?;
                    anyhow::ensure!(
                        answer.status != 429,
                        "rate-limited: every request names a new address"
                    );
                    errors += u64::from(answer.status >= 500);
                    requests += 1;
                }
                anyhow::Ok((requests, errors))
            }));
        }
        let (mut requests, mut errors) = (0, 0);
        for t in tasks {
            let (r, e) = t.await??;
            requests += r;
            errors += e;
        }
        anyhow::Ok((requests, errors))
    })
    .await;
    sampling.abort();
    let (requests, server_errors) = counts?;
    let mut rss_mb = samples
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    rss_mb.extend(rss());
    Ok(Soak {
        seconds: started.elapsed().as_secs_f64(),
        requests,
        boards: requests.div_ceil(4),
        server_errors,
        rss_mb,
    })
}

/// A request naming a new client address, user and offset: in turn a command to a new board
/// (`board` is set to it), a page of that board at a random offset (answered by PostgreSQL:
/// the board has no projection, so the read asks for a rebuild), a player's standing and
/// neighbourhood on it.
fn all_different(i: u64, board: &mut String) -> Vec<u8> {
    let r = random();
    let ip = format!("10.{}.{}.{}", r >> 56, (r >> 48) & 255, (r >> 40) & 255);
    if i.is_multiple_of(4) {
        *board = format!("u-{}", r % 1_000_000_000_000);
    }
    let user = format!("p-{}", r >> 20);
    let (method, path, body) = match i % 4 {
        0 => (
            "POST",
            format!("/v1/boards/{board}/scores"),
            Some(format!(
                r#"{{"event_id":"{}","user_id":"{user}","delta":1}}"#,
                uuid::Uuid::new_v4()
            )),
        ),
        1 => (
            "GET",
            format!("/v1/boards/{board}/top?limit=10&offset={}", r % 10_000),
            None,
        ),
        2 => ("GET", format!("/v1/boards/{board}/users/{user}"), None),
        _ => (
            "GET",
            format!("/v1/boards/{board}/users/{user}/around?radius=3"),
            None,
        ),
    };
    // Reads go without a token, so the limiter keys them by the (new) client address.
    let mut out = format!("{method} {path} HTTP/1.1\r\nhost: bench\r\nx-forwarded-for: {ip}\r\n");
    match body {
        Some(body) => out.push_str(&format!(
            "authorization: Bearer {}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            ledgerboard_testkit::TEST_TOKEN,
            body.len()
        )),
        None => out.push_str("\r\n"),
    }
    out.into_bytes()
}
