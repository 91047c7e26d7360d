//! The one HTTP/1.1 client of the tests, the experiment and the chaos run: one request per
//! connection, bounded in time as a whole, so a stalled daemon shows up as an error instead of
//! a hang. (The benchmark's load generator is a lean client of its own on purpose: it keeps
//! connections open and measures itself.)

use std::io;
use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

/// Sends one request to `addr` and returns the status and the body (lossy UTF-8). It carries
/// `Content-Type: application/json` (unless `headers` name another), `Connection: close` and
/// `headers`; an error when there is no whole answer within `limit`.
pub async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: String,
    limit: Duration,
) -> io::Result<(u16, String)> {
    request_parts(addr, method, path, headers, body, limit)
        .await
        .map(|(status, _, body)| (status, body))
}

/// [`request`], with the answer's headers too (names in lowercase, in the order sent; a
/// header sent twice appears twice).
pub async fn request_parts(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: String,
    limit: Duration,
) -> io::Result<(u16, Vec<(String, String)>, String)> {
    let failed = |e: &dyn std::fmt::Display| io::Error::other(format!("{method} {path}: {e}"));
    let exchange = async {
        let stream = tokio::net::TcpStream::connect(addr).await?;
        let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(|e| failed(&e))?;
        tokio::spawn(conn);
        let mut builder = hyper::Request::builder()
            .method(method)
            .uri(path)
            .header("host", addr.to_string())
            .header("connection", "close");
        if !headers
            .iter()
            .any(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        {
            builder = builder.header("content-type", "application/json");
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| failed(&e))?;
        let response = sender.send_request(request).await.map_err(|e| failed(&e))?;
        let status = response.status().as_u16();
        let answer_headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_owned(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let bytes = response
            .into_body()
            .collect()
            .await
            .map_err(|e| failed(&e))?
            .to_bytes();
        io::Result::Ok((
            status,
            answer_headers,
            String::from_utf8_lossy(&bytes).into_owned(),
        ))
    };
    tokio::time::timeout(limit, exchange).await.map_err(|_| {
        io::Error::new(
            io::ErrorKind::TimedOut,
            format!("{method} {path}: no answer within {limit:?}"),
        )
    })?
}

/// [`request`] for a caller that is not async (or is, but must not await): it runs on a
/// thread and a runtime of its own, so it works inside and outside a Tokio runtime.
pub fn request_blocking(
    addr: SocketAddr,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: String,
    limit: Duration,
) -> io::Result<(u16, String)> {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()?
                    .block_on(request(addr, method, path, headers, body, limit))
            })
            .join()
            .map_err(|_| io::Error::other(format!("{method} {path}: the client thread panicked")))?
    })
}
