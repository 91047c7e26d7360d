//! The reads players ask for, none of which coalesce: a random user's neighbourhood
//! (`around`), a friends list of 100 random users (`users?ids=`), and pages at random offsets
//! in each rank mode, through the API against redis-benchmark running the same Redis work
//! (one script per request, as ours is) on the same board, at the same concurrency.
//!
//! The board is an undeclared one (members are the user ids, so redis-benchmark's random
//! member names can address them), of [`USERS`] users with about ten per score, sealed by the
//! real rebuild (`lbctl rebuild`), so every read is answered by the projection; the run checks
//! that it is before it measures. Each read is then measured again on a board of three columns
//! (descending, ascending, descending) holding the same users, the same first column and
//! drawn other columns (members spelt with their tuples, ranks counted by tuple): target, within
//! 10% of the one-column board's rate.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use ledgerboard_core::model::BoardId;
use ledgerboard_core::projection::{Store, generation};
use serde::Serialize;

use crate::api::Stack;
use crate::cpu::{Cpu, Meter};
use crate::load;

const BOARD: &str = "ranks";
/// The same users on a board of three columns.
const COLUMNS_BOARD: &str = "ranks-columns";
const COLUMNS_DEFINITION: &str = r#"{"operator":"best","columns":[{"name":"points","order":"descending"},{"name":"time_ms","order":"ascending"},{"name":"assists","order":"descending"}]}"#;
/// Which board the requests read: [`COLUMNS_BOARD`] while set. A static, as the request
/// builders are plain functions.
static COLUMNS: AtomicBool = AtomicBool::new(false);

fn board() -> &'static str {
    if COLUMNS.load(Ordering::Relaxed) {
        COLUMNS_BOARD
    } else {
        BOARD
    }
}
/// Users (100,000; 10,000 in a quick run), set once at the start; with redis-benchmark's
/// `-r`, `p-__rand_int__` names one of them. A static, as the request builders are plain
/// functions.
static USERS: AtomicU64 = AtomicU64::new(100_000);
/// Distinct scores: about `users / SCORES` users share each one.
const SCORES: i64 = 10_007;
/// `around`'s default radius, and the page size.
const RADIUS: u64 = 5;
const PAGE: u64 = 100;
const FRIENDS: u64 = 100;

#[derive(Debug, Serialize)]
pub struct RankRead {
    pub read: String,
    /// What redis-benchmark ran, in words.
    pub reference: String,
    pub clients: usize,
    pub per_s: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub redis_benchmark_per_s: f64,
    /// The same server's trivial answer at the same client count (an unknown path: 404 from
    /// the same router, middleware and load tool): the HTTP ceiling.
    pub ceiling_per_s: f64,
    /// The same read of the board of three columns.
    pub three_columns_per_s: f64,
    /// CPU per read (µs by process: `ours` is the api).
    pub cpu_us: Cpu,
    /// CPU per redis-benchmark request (Redis; redis-benchmark under `tools`).
    pub redis_benchmark_cpu_us: Cpu,
    /// CPU per ceiling request (the 404) at the same client count.
    pub ceiling_cpu_us: Cpu,
    /// CPU per bare Redis round trip on the reads' connection at the same concurrency, with
    /// no HTTP and no work (`PING`; `ours` is what the api's process spends on one hop).
    pub hop_cpu_us: Cpu,
}

#[derive(Debug, Serialize)]
pub struct RanksFigures {
    pub users: u64,
    pub distinct_scores: i64,
    pub seconds: f64,
    pub reads: Vec<RankRead>,
}

/// 64 random bits.
fn random() -> u64 {
    (uuid::Uuid::new_v4().as_u128() >> 64) as u64
}

fn users() -> u64 {
    USERS.load(Ordering::Relaxed)
}

fn user(n: u64) -> String {
    format!("p-{n:012}")
}

fn get(path: &str) -> Vec<u8> {
    load::request("GET", path, None, None)
}

fn standing(_: usize, _: u64) -> Vec<u8> {
    get(&format!(
        "/v1/boards/{}/users/{}",
        board(),
        user(random() % users())
    ))
}

fn around(_: usize, _: u64) -> Vec<u8> {
    get(&format!(
        "/v1/boards/{}/users/{}/around?radius={RADIUS}",
        board(),
        user(random() % users())
    ))
}

/// 100 distinct users: a random start and a stride prime to [`USERS`] (a power of ten).
fn friends(_: usize, _: u64) -> Vec<u8> {
    let start = random() % users();
    let ids: Vec<String> = (0..FRIENDS)
        .map(|k| user((start + k * 997) % users()))
        .collect();
    get(&format!(
        "/v1/boards/{}/users?ids={}",
        board(),
        ids.join(",")
    ))
}

fn page(mode: &str) -> Vec<u8> {
    get(&format!(
        "/v1/boards/{}/top?limit={PAGE}&offset={}&rank_mode={mode}",
        board(),
        random() % (users() - PAGE)
    ))
}

/// The Redis work of each read, as one script (with [`RADIUS`] and [`PAGE`] written out): `around`: the user's position, then the page
/// around it; `ids`: each user's score and position; a page: the range, and for competition
/// (dense) ranks the count of entries (distinct scores) better than its first row's.
const USER_LUA: &str = "return {redis.call('ZSCORE', KEYS[1], ARGV[1]), \
    redis.call('ZREVRANK', KEYS[1], ARGV[1])}";
const AROUND_LUA: &str = "local r = redis.call('ZREVRANK', KEYS[1], ARGV[1]) \
    return redis.call('ZRANGE', KEYS[1], math.max(0, r - 5), r + 5, 'REV', 'WITHSCORES')";
const IDS_LUA: &str = "local out = {} for i = 1, #ARGV do \
    out[i] = {redis.call('ZSCORE', KEYS[1], ARGV[i]), redis.call('ZREVRANK', KEYS[1], ARGV[i])} \
    end return out";
const PAGE_LUA: &str = "local o = tonumber(ARGV[1]) \
    local p = redis.call('ZRANGE', KEYS[1], o, o + 99, 'REV', 'WITHSCORES') \
    if KEYS[2] then return {p, redis.call('ZCOUNT', KEYS[2], '(' .. p[2], '+inf')} end \
    return p";

struct Read {
    name: &'static str,
    reference: &'static str,
    request: fn(usize, u64) -> Vec<u8>,
    /// redis-benchmark's command (given the sorted set and the distinct scores' keys), and
    /// whether its random numbers name users (`-r` users) or page offsets (users − page).
    command: fn(&str, &str) -> Vec<String>,
    offsets: bool,
}

fn eval(script: &str, keys: &[&str], args: &[String]) -> Vec<String> {
    let mut words = vec!["EVAL".to_owned(), script.to_owned(), keys.len().to_string()];
    words.extend(keys.iter().map(|k| (*k).to_owned()));
    words.extend(args.iter().cloned());
    words
}

const READS: [Read; 6] = [
    Read {
        name: "users/{id} of a random user",
        reference: "ZSCORE and ZREVRANK of a random member",
        request: standing,
        command: |z, _| eval(USER_LUA, &[z], &["p-__rand_int__".to_owned()]),
        offsets: false,
    },
    Read {
        name: "around a random user (radius 5)",
        reference: "ZREVRANK, ZRANGE REV WITHSCORES of 11",
        request: around,
        command: |z, _| eval(AROUND_LUA, &[z], &["p-__rand_int__".to_owned()]),
        offsets: false,
    },
    Read {
        name: "users?ids= 100 random users",
        reference: "ZSCORE and ZREVRANK of each of 100 random members",
        request: friends,
        command: |z, _| eval(IDS_LUA, &[z], &vec!["p-__rand_int__".to_owned(); 100]),
        offsets: false,
    },
    Read {
        name: "top 100 at a random offset, ordinal ranks",
        reference: "ZRANGE REV WITHSCORES of 100 at a random offset",
        request: |_, _| page("ordinal"),
        command: |z, _| eval(PAGE_LUA, &[z], &["__rand_int__".to_owned()]),
        offsets: true,
    },
    Read {
        name: "top 100 at a random offset, competition ranks",
        reference: "the same, and ZCOUNT of better scores",
        request: |_, _| page("competition"),
        command: |z, _| eval(PAGE_LUA, &[z, z], &["__rand_int__".to_owned()]),
        offsets: true,
    },
    Read {
        name: "top 100 at a random offset, dense ranks",
        reference: "the same, and ZCOUNT of better distinct scores",
        request: |_, _| page("dense"),
        command: |z, d| eval(PAGE_LUA, &[z, d], &["__rand_int__".to_owned()]),
        offsets: true,
    },
];

pub async fn run(quick: bool) -> anyhow::Result<RanksFigures> {
    let seconds = if quick { 0.5 } else { 5.0 };
    USERS.store(if quick { 10_000 } else { 100_000 }, Ordering::Relaxed);
    let stack = Stack::start(64).await?;
    seed(&stack).await?;
    let store = Store::connect(&stack.settings.redis)?;
    let board = BoardId::parse(BOARD)?;
    let (z, d) = (store.keys().scores(&board), store.keys().distinct(&board));

    // The HTTP ceiling of the same server and load tool, once per client count.
    let mut ceilings = Vec::new();
    for clients in [16, 64] {
        eprintln!("the api's ceiling (404 of an unknown path) with {clients} clients");
        let run = load::closed_loop(
            stack.addr,
            clients,
            Duration::from_secs_f64(seconds),
            404,
            |_, _| get("/v1/none"),
        )
        .await?;
        let cpu = run.cpu_per_request();
        ceilings.push((clients, run.per_s(), cpu));
    }
    // What one Redis round trip costs the api's process apart from HTTP: a read's second hop.
    let mut hops = Vec::new();
    for clients in [16, 64] {
        eprintln!("a bare Redis round trip (PING on the reads' connection), {clients} tasks");
        hops.push((
            clients,
            redis_hop(&store, clients, Duration::from_secs_f64(seconds)).await?,
        ));
    }
    let hop = |clients: usize| {
        hops.iter()
            .find(|(c, _)| *c == clients)
            .map_or(Cpu::default(), |(_, cpu)| *cpu)
    };
    let ceiling = |clients: usize| {
        ceilings
            .iter()
            .find(|(c, _, _)| *c == clients)
            .map_or((f64::NAN, Cpu::default()), |(_, r, cpu)| (*r, *cpu))
    };
    let mut reads = Vec::new();
    for read in &READS {
        // A measurement of the database fallback would be a measurement of something else.
        stack
            .answered_by_projection(read.name, &(read.request)(0, 0))
            .await?;
        for clients in [16, 64] {
            eprintln!("{} with {clients} clients", read.name);
            let run = load::closed_loop(
                stack.addr,
                clients,
                Duration::from_secs_f64(seconds),
                200,
                read.request,
            )
            .await?;
            let cpu_us = run.cpu_per_request();
            let command = (read.command)(&z, &d);
            let words: Vec<&str> = command.iter().map(String::as_str).collect();
            let requests = (run.requests as usize).max(1_000);
            let meter = Meter::start();
            let redis_benchmark_per_s = crate::redis_benchmark::rate(
                stack.settings.redis.url.as_str(),
                clients,
                requests,
                Some(if read.offsets {
                    users() - PAGE
                } else {
                    users()
                }),
                &words,
            )?;
            let redis_benchmark_cpu_us = meter.stop().per(requests as f64);
            // The same read of the board of three columns, right after.
            COLUMNS.store(true, Ordering::Relaxed);
            let columns = async {
                stack
                    .answered_by_projection(read.name, &(read.request)(0, 0))
                    .await?;
                eprintln!("{} on three columns with {clients} clients", read.name);
                load::closed_loop(
                    stack.addr,
                    clients,
                    Duration::from_secs_f64(seconds),
                    200,
                    read.request,
                )
                .await
            }
            .await;
            COLUMNS.store(false, Ordering::Relaxed);
            reads.push(RankRead {
                read: read.name.to_owned(),
                reference: read.reference.to_owned(),
                clients,
                per_s: run.per_s(),
                p50_ms: run.percentile(0.5),
                p99_ms: run.percentile(0.99),
                redis_benchmark_per_s,
                ceiling_per_s: ceiling(clients).0,
                three_columns_per_s: columns?.per_s(),
                cpu_us,
                redis_benchmark_cpu_us,
                ceiling_cpu_us: ceiling(clients).1,
                hop_cpu_us: hop(clients),
            });
        }
    }
    stack.stop().await?;
    Ok(RanksFigures {
        users: users(),
        distinct_scores: SCORES,
        seconds,
        reads,
    })
}

/// `clients` tasks on the api's runtime (the bench's own), each sending `PING` back to back on
/// the connection every read shares ([`Store::read_connection`]) for `duration`: CPU per round
/// trip. Beside the HTTP ceiling's 404 it gives the floor of a read's cost in the api, two
/// hops (client to api, api to Redis) with no work in either; what a read spends above it is
/// the read's own (building the script call, parsing its reply, the JSON answer).
async fn redis_hop(store: &Store, clients: usize, duration: Duration) -> anyhow::Result<Cpu> {
    let deadline = std::time::Instant::now() + duration;
    let meter = Meter::start();
    let mut tasks = tokio::task::JoinSet::new();
    for _ in 0..clients {
        let store = store.clone();
        tasks.spawn(async move {
            let mut calls = 0u64;
            while std::time::Instant::now() < deadline {
                let mut conn = store.read_connection().await?;
                let pong: String = redis::cmd("PING").query_async(&mut conn).await?;
                anyhow::ensure!(pong == "PONG", "PING answered {pong:?}");
                calls += 1;
            }
            anyhow::Ok(calls)
        });
    }
    let mut calls = 0;
    while let Some(task) = tasks.join_next().await {
        calls += task??;
    }
    anyhow::ensure!(calls > 0, "no PING completed");
    Ok(meter.stop().per(calls as f64))
}

/// The boards in PostgreSQL, then their projections by the real rebuild. The board of three
/// columns holds the same first column; its second column orders the other way from the first
/// (stored negated, as the command statement stores it), its third the same way.
async fn seed(stack: &Stack) -> anyhow::Result<()> {
    let client = stack.db.client().await;
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, version)
             SELECT $1, 'p-' || lpad(g::text, 12, '0'), (g * 7919) % $3, 1
             FROM generate_series(0, $2::bigint - 1) g",
            &[&BOARD, &(users() as i64), &SCORES],
        )
        .await?;
    stack.declare(COLUMNS_BOARD, COLUMNS_DEFINITION).await?;
    client
        .execute(
            "INSERT INTO user_scores (board_id, user_id, score, columns, col2, col3, version)
             SELECT $1, 'p-' || lpad(g::text, 12, '0'), (g * 7919) % $3, 3, -((g * 13) % 7),
                    (g * 7) % 11, 1
             FROM generate_series(0, $2::bigint - 1) g",
            &[&COLUMNS_BOARD, &(users() as i64), &SCORES],
        )
        .await?;
    // Both are read with dense ranks below: marked as their first dense read would mark them,
    // so their rebuilds keep the distinct scores (only such boards keep them).
    let store = Store::connect(&stack.settings.redis)?;
    for board in [BOARD, COLUMNS_BOARD] {
        generation::want_distinct(&store, &BoardId::parse(board)?).await?;
    }
    stack.rebuild(BOARD)?;
    stack.rebuild(COLUMNS_BOARD)
}
