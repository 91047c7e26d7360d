//! The server's bounds against hostile or broken clients, on the real daemon over real TCP:
//! the request head's size, a client that does not read its responses, connections per
//! client, and which address the rate limit counts (an IPv6 /64; forwarding headers only from
//! a trusted proxy).

use crate::common;

use std::net::SocketAddr;
use std::time::Duration;

use ledgerboard_harness::http;
use ledgerboard_testkit::{Process, Scrape, TestDb, migrate, wait_until};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const LIMIT: Duration = Duration::from_secs(10);

/// An api process with `extra` settings; the database must outlive it.
async fn start_api(extra: &[(&str, &str)]) -> (Process, SocketAddr, TestDb) {
    let db = TestDb::create().await;
    migrate(&db.url).await;
    let (process, addr, _admin) = common::api_process(&db, extra);
    (process, addr, db)
}

/// `ledgerboard_http_connections_closed_total{reason}` on the api's admin port.
fn closed_by_server(api: &mut Process, reason: &str) -> Option<f64> {
    let admin = api.wait_for_addr("admin server (healthz", Duration::from_secs(20));
    Scrape::fetch(&admin.to_string()).value(
        "ledgerboard_http_connections_closed_total",
        &[("reason", reason)],
    )
}

/// Reads until the server closes the connection (end of stream or reset), at most `limit`:
/// what arrived, or None when the connection was still open at the end.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// An anonymous GET of a read route, with `headers`.
async fn get(addr: SocketAddr, headers: &[(&str, &str)]) -> u16 {
    http::request(
        addr,
        "GET",
        "/v1/boards/b/top",
        headers,
        String::new(),
        LIMIT,
    )
    .await
    .unwrap_or_else(|e| panic!("GET: {e}"))
    .0
}

#[tokio::test]
async fn a_request_head_over_the_bound_is_refused() {
    let (mut api, addr, _db) = start_api(&[("LEDGERBOARD__API__MAX_HEADER_BYTES", "8192")]).await;
    // Within the bound: served.
    let fine = "x".repeat(2_000);
    let (status, _) = http::request(
        addr,
        "GET",
        "/openapi.json",
        &[("x-padding", &fine)],
        String::new(),
        LIMIT,
    )
    .await
    .expect("a request within the bound");
    assert_eq!(status, 200);
    // 64 KiB of headers: 431 or the connection closed, never served.
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "GET /openapi.json HTTP/1.1\r\nHost: x\r\nX-Padding: {}\r\n\r\n",
        "y".repeat(64 * 1024)
    );
    // The server may close before it has read it all.
    let _ = stream.write_all(head.as_bytes()).await;
    let answer = read_until_closed(&mut stream, LIMIT)
        .await
        .expect("the server kept the connection of an oversized head open");
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "an oversized head was answered: {}",
        &answer[..answer.len().min(200)]
    );
    assert!(api.terminate(LIMIT).is_some_and(|s| s.success()));
}

#[tokio::test]
async fn a_client_that_does_not_read_its_responses_is_disconnected() {
    let (mut api, addr, _db) = start_api(&[
        ("LEDGERBOARD__API__WRITE_TIMEOUT_MS", "500"),
        // Only the write timeout may end this connection.
        ("LEDGERBOARD__API__HEADER_TIMEOUT_MS", "60000"),
        ("LEDGERBOARD__API__RATE_LIMIT_PER_S", "0"),
    ])
    .await;
    // Pipelined requests whose answers (the OpenAPI document each) are far more than the
    // socket buffers hold, from a client with a small receive buffer that reads nothing.
    const REQUESTS: usize = 2_000;
    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4_096).expect("recv buffer");
    let stream = socket.connect(addr).await.expect("connect");
    let (mut reader, mut writer) = stream.into_split();
    let requests = "GET /openapi.json HTTP/1.1\r\nHost: x\r\n\r\n".repeat(REQUESTS);
    let write = tokio::spawn(async move {
        // The server stops reading once its answers back up; that is fine.
        let _ = tokio::time::timeout(LIMIT, writer.write_all(requests.as_bytes())).await;
        writer
    });
    // Well past the write timeout, while nothing is read.
    tokio::time::sleep(Duration::from_millis(2_000)).await;
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(15);
    let closed = loop {
        match tokio::time::timeout_at(deadline, reader.read(&mut buf)).await {
            Err(_) => break false,
            Ok(Ok(0)) | Ok(Err(_)) => break true,
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    };
    let answered = String::from_utf8_lossy(&got)
        .matches("HTTP/1.1 200")
        .count();
    assert!(
        closed && answered < REQUESTS,
        "a client that read nothing for 2 s kept its connection ({answered} of {REQUESTS} answers delivered, closed: {closed})"
    );
    drop(write.await);
    assert_eq!(closed_by_server(&mut api, "write_timeout"), Some(1.0));
    // The daemon still serves others.
    assert_eq!(get(addr, &[]).await, 200);
    assert!(api.terminate(LIMIT).is_some_and(|s| s.success()));
}

/// A connection from `source` (a loopback address) to `addr`.
async fn connect_from(source: &str, addr: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("source address"))
        .expect("bind the source address");
    socket.connect(addr).await.expect("connect")
}

/// Sends one request on `stream` and reads its answer's status line, leaving the connection
/// open (no `Connection: close`; the small 404 of an unknown path is read whole or not at all).
async fn kept_open_answer(stream: &mut TcpStream) -> Option<String> {
    stream
        .write_all(b"GET /nothing-here HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .ok()?;
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(2).any(|w| w == b"\r\n") {
        match tokio::time::timeout(LIMIT, stream.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => return None,
        }
    }
    String::from_utf8_lossy(&got)
        .lines()
        .next()
        .map(str::to_owned)
}

/// Sends one request on `stream`, closing after it, and reads the answer's status line.
async fn status_on(stream: &mut TcpStream) -> Option<String> {
    let _ = stream
        .write_all(b"GET /openapi.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await;
    let answer = read_until_closed(stream, LIMIT).await?;
    let answer = String::from_utf8_lossy(&answer);
    answer.lines().next().map(str::to_owned)
}

#[tokio::test]
async fn one_client_cannot_open_more_than_its_connections() {
    let (mut api, addr, _db) = start_api(&[
        ("LEDGERBOARD__API__MAX_CONNECTIONS_PER_CLIENT", "2"),
        // The held connections send nothing; they must stay open for the test.
        ("LEDGERBOARD__API__HEADER_TIMEOUT_MS", "30000"),
    ])
    .await;
    let mut held = [
        connect_from("127.0.0.1", addr).await,
        connect_from("127.0.0.1", addr).await,
    ];
    // The server counts a connection once it accepted it: an answer on each shows it did (they
    // stay open: keep-alive, and the header timeout is 30 s).
    for stream in &mut held {
        assert_eq!(
            kept_open_answer(stream).await.as_deref(),
            Some("HTTP/1.1 404 Not Found"),
            "a held connection was not served"
        );
    }
    let mut third = connect_from("127.0.0.1", addr).await;
    let answer = status_on(&mut third).await;
    assert_eq!(
        answer, None,
        "a third connection from one address was served: {answer:?}"
    );
    // Another address is another client.
    let mut other = connect_from("127.0.0.2", addr).await;
    let answer = status_on(&mut other).await;
    assert_eq!(answer.as_deref(), Some("HTTP/1.1 200 OK"));
    assert_eq!(closed_by_server(&mut api, "per_client_cap"), Some(1.0));
    // A closed connection frees its place.
    drop(held);
    // The server notices the close on its next read of each: until then a new one may be refused.
    let again = std::cell::RefCell::new(None);
    wait_until(Duration::from_millis(2_500), || async {
        let mut next = connect_from("127.0.0.1", addr).await;
        let answer = status_on(&mut next).await;
        let served = answer.is_some();
        *again.borrow_mut() = answer;
        served
    })
    .await;
    assert_eq!(again.into_inner().as_deref(), Some("HTTP/1.1 200 OK"));
    assert!(api.terminate(LIMIT).is_some_and(|s| s.success()));
}

#[tokio::test]
async fn two_ipv6_addresses_of_one_slash_64_share_a_bucket() {
    // The test's client is the trusted proxy, so that it can speak for IPv6 clients.
    let (mut api, addr, _db) = start_api(&[
        ("LEDGERBOARD__API__RATE_LIMIT_PER_S", "1"),
        ("LEDGERBOARD__API__RATE_LIMIT_BURST", "1"),
        ("LEDGERBOARD__API__TRUSTED_PROXIES", "127.0.0.1/32"),
    ])
    .await;
    let from = |ip: &'static str| [("x-forwarded-for", ip)];
    assert_eq!(get(addr, &from("2001:db8:1:2::1")).await, 200);
    assert_eq!(
        get(addr, &from("2001:db8:1:2:ffff:ffff:ffff:ffff")).await,
        429,
        "another address of the same /64 had a bucket of its own"
    );
    assert_eq!(get(addr, &from("2001:db8:1:3::1")).await, 200);
    assert!(api.terminate(LIMIT).is_some_and(|s| s.success()));
}

#[tokio::test]
async fn forwarding_headers_count_only_from_trusted_proxies() {
    let limited = [
        ("LEDGERBOARD__API__RATE_LIMIT_PER_S", "1"),
        ("LEDGERBOARD__API__RATE_LIMIT_BURST", "1"),
    ];
    // Untrusted peer: a new X-Forwarded-For per request does not buy a new bucket.
    let (mut api, addr, _db) = start_api(&limited).await;
    assert_eq!(get(addr, &[("x-forwarded-for", "198.51.100.1")]).await, 200);
    assert_eq!(
        get(addr, &[("x-forwarded-for", "198.51.100.2")]).await,
        429,
        "X-Forwarded-For from an untrusted peer was believed"
    );
    assert_eq!(get(addr, &[("forwarded", "for=198.51.100.3")]).await, 429);
    assert!(api.terminate(LIMIT).is_some_and(|s| s.success()));

    // Trusted peer: each forwarded client has its own bucket.
    let mut trusted = limited.to_vec();
    trusted.push(("LEDGERBOARD__API__TRUSTED_PROXIES", "127.0.0.0/8"));
    let (mut api, addr, _db) = start_api(&trusted).await;
    assert_eq!(get(addr, &[("x-forwarded-for", "198.51.100.1")]).await, 200);
    assert_eq!(
        get(addr, &[("x-forwarded-for", "198.51.100.2")]).await,
        200,
        "X-Forwarded-For from a trusted proxy was ignored"
    );
    assert_eq!(get(addr, &[("forwarded", "for=198.51.100.3")]).await, 200);
    assert_eq!(get(addr, &[("x-forwarded-for", "198.51.100.1")]).await, 429);
    assert!(api.terminate(LIMIT).is_some_and(|s| s.success()));
}
